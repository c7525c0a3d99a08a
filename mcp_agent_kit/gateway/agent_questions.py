"""gateway.agent_questions: an agent's pause as one MCP elicitation form, and the caller's answer back.

A pause is a Question (gateway.agent_backend) whose payload says what kind it is: kagent's HITL
extension payloads (`ask_user_request`: one string field per question, `response` or
`response_N`, `enum` for choices, an array for multiple answers; `tool_approval_request`:
`approve_N` booleans), ACP permission options (`options`: an enum of option ids), or a plain
question (one string field `response`). `answer` validates an elicitation result against the
form and turns it into the agent's own terms; decline and cancel become a refusal the agent can
adapt to. Rules: pure functions over plain data; a bad answer is AnswerError (the caller's -32602).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_agent_kit.gateway.agent_backend import Question

HITL = "https://kagent.dev/extensions/hitl/v1"
REFUSALS = {"decline": "The user declined the request.", "cancel": "The user cancelled the request."}
ACTIONS = ("accept", "decline", "cancel")


class AnswerError(ValueError):
    """The answer does not fit the question (tasks/update answers -32602 and the task stays paused)."""


def _keys(prefix: str, count: int) -> list[str]:
    return [prefix] if count == 1 and prefix == "response" else [f"{prefix}_{n}" for n in range(1, count + 1)]


def kind_of(question: Question) -> str:
    hitl = question.payload.get("hitl")
    if isinstance(hitl, dict) and hitl.get("type") in ("ask_user_request", "tool_approval_request"):
        return str(hitl["type"])
    return "options" if isinstance(question.payload.get("options"), list) else "plain"


def _questions(question: Question) -> list[dict[str, Any]]:
    items = question.payload["hitl"].get("questions")
    return [q for q in items if isinstance(q, dict)] if isinstance(items, list) else []


def _tools(question: Question) -> list[dict[str, Any]]:
    items = question.payload["hitl"].get("tools")
    return [t for t in items if isinstance(t, dict)] if isinstance(items, list) else []


def _ask_user_schema(question: Question) -> dict[str, Any]:
    asked = _questions(question)
    properties: dict[str, Any] = {}
    for key, item in zip(_keys("response", len(asked)), asked, strict=True):
        choices = [c for c in item.get("choices") or [] if isinstance(c, str)]
        field: dict[str, Any] = {"type": "string"}
        if choices:
            field["enum"] = choices
        text = str(item.get("question", ""))
        properties[key] = ({"type": "array", "items": field, "description": text} if item.get("multiple")
                           else {**field, "description": text})
    return properties


def _approval_schema(question: Question) -> dict[str, Any]:
    tools = _tools(question)
    return {key: {"type": "boolean", "description": f"Approve {tool.get('name', 'the tool')}"}
            for key, tool in zip(_keys("approve", len(tools)), tools, strict=True)}


def _options_schema(question: Question) -> dict[str, Any]:
    ids = [str(o.get("optionId", o)) if isinstance(o, dict) else str(o) for o in question.payload["options"]]
    return {"response": {"type": "string", "description": question.message, "enum": ids}}


def _plain_schema(question: Question) -> dict[str, Any]:
    return {"response": {"type": "string", "description": "Response to the agent"}}


SCHEMAS: dict[str, Callable[[Question], dict[str, Any]]] = {
    "ask_user_request": _ask_user_schema,
    "tool_approval_request": _approval_schema,
    "options": _options_schema,
    "plain": _plain_schema,
}


def elicitation(question: Question) -> dict[str, Any]:
    """The `inputRequests` entry: one elicitation/create form request."""
    properties = SCHEMAS[kind_of(question)](question) or SCHEMAS["plain"](question)
    return {"method": "elicitation/create", "params": {
        "mode": "form", "message": question.message or "Agent requires input.",
        "requestedSchema": {"type": "object", "properties": properties, "required": sorted(properties),
                            "additionalProperties": False},
    }}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str) and value.strip():
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return list(value)
    return []


def answer(question: Question, result: Any) -> tuple[str, dict[str, Any] | None]:
    """(text, HITL metadata or None) to send the agent for an elicitation result; AnswerError if unusable."""
    if not isinstance(result, dict) or result.get("action") not in ACTIONS:
        raise AnswerError('the answer must be an elicitation result {"action": "accept"|"decline"|"cancel", '
                          '"content": {...}}')
    action = str(result["action"])
    content = result.get("content") or {}
    if not isinstance(content, dict):
        raise AnswerError('the answer\'s "content" must be an object')
    kind = kind_of(question)
    if kind == "ask_user_request":
        keys = _keys("response", len(_questions(question)))
        if action == "accept":
            answers = [_strings(content.get(key)) for key in keys]
            if not all(answers):
                raise AnswerError(f"accepted elicitation must answer every question ({', '.join(keys)})")
        else:
            answers = [[REFUSALS[action]] for _ in keys]
        meta = {"type": "ask_user_response", "id": question.payload["hitl"].get("id", question.key),
                "answers": [{"answer": a} for a in answers]}
        return "\n".join(", ".join(a) for a in answers), {HITL: meta}
    if kind == "tool_approval_request":
        tools = _tools(question)
        keys = _keys("approve", len(tools))
        if action == "accept" and not all(isinstance(content.get(key), bool) for key in keys):
            raise AnswerError(f"accepted elicitation must decide every approval ({', '.join(keys)})")
        approvals = [{"id": tool.get("id", ""), "approved": action == "accept" and content.get(key) is True}
                     for key, tool in zip(keys, tools, strict=True)]
        return "Tool approval response.", {HITL: {"type": "tool_approval_response", "approvals": approvals}}
    if action != "accept":
        return REFUSALS[action], None
    response = content.get("response")
    if not isinstance(response, str) or not response.strip():
        raise AnswerError('accepted elicitation needs a non-empty "response"')
    if kind == "options" and response not in SCHEMAS["options"](question)["response"]["enum"]:
        raise AnswerError(f"response must be one of the offered options, not {response!r}")
    return response, None
