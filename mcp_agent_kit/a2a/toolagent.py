"""toolagent: an Agent that serves a registry's tools as A2A skills, without an LLM.

A message names its tool with a data part `{"skill": id, "arguments": {...}}`, or `metadata.skillId`
plus a data part (or JSON text) of arguments, or just the arguments when there is one tool. Arguments
are checked with the same compiled validator as MCP (integral floats become integers where the schema
says integer, since ProtoJSON numbers are doubles): missing required ones → INPUT_REQUIRED naming them;
other violations → -32602 with field violations. A handler's `ctx.elicit` also becomes INPUT_REQUIRED,
answered by the next message on the task. Results become one artifact. Rules: reuses core (registry,
schema, invoke, content, context); knows nothing of HTTP or JSON-RPC.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_agent_kit.a2a.engine import Agent, Job, Work
from mcp_agent_kit.a2a.messages import data_part, invalid, text_part, texts
from mcp_agent_kit.a2a.protocol import A2AError
from mcp_agent_kit.a2a.skills import result_parts, skill_for
from mcp_agent_kit.core import content, invoke
from mcp_agent_kit.core.context import Context, InputRequired, ReplayBroker
from mcp_agent_kit.core.registry import Registry, ToolDef
from mcp_agent_kit.wire.jsonrpc import RpcError

EXTENSION_URI = "urn:mcp-agent-kit:a2a:mcp-tools:v1"
_CAPABILITIES: dict[str, Any] = {"elicitation": {}}


def coerce_integers(schema: Any, value: Any) -> Any:
    """Integral floats become ints wherever the schema's type is integer (nested objects and arrays too)."""
    if not isinstance(schema, dict):
        return value
    kind = schema.get("type")
    if type(value) is float and value.is_integer():
        wants = kind == "integer" or (isinstance(kind, list) and "integer" in kind and "number" not in kind)
        return int(value) if wants else value
    if isinstance(value, dict):
        props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        extra = schema.get("additionalProperties")
        return {key: coerce_integers(props.get(key, extra), item) for key, item in value.items()}
    if isinstance(value, list):
        return [coerce_integers(schema.get("items"), item) for item in value]
    return value


def _object(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first JSON object in a data part or a JSON text part."""
    for part in parts:
        if isinstance(part.get("data"), dict):
            data: dict[str, Any] = part["data"]
            return data
    for text in texts({"parts": parts}):
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                value = json.loads(stripped)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


class ToolAgent(Agent):
    """A registry's tools as skills."""

    def __init__(self, registry: Registry, description: str | None = None) -> None:
        self.registry = registry
        self.name = registry.title or registry.name
        self.description = description or registry.description or f"{self.name}: MCP tools served as A2A skills"
        self.version = registry.version
        self._media: tuple[object, frozenset[str]] = (None, frozenset())  # (the listing it is for, the types)

    def skills(self) -> list[dict[str, Any]]:
        return [skill_for(tool) for tool in self.registry.listing("tools")]

    def accepted_media_types(self) -> frozenset[str]:
        """Agent's answer, worked out again only when the registry's tool listing (a cached snapshot) changes."""
        tools = self.registry.listing("tools")
        if self._media[0] is not tools:
            self._media = (tools, super().accepted_media_types())
        return self._media[1]

    def extensions(self) -> list[dict[str, Any]]:
        tools = {}
        for tool in self.registry.listing("tools"):
            schemas = {"inputSchema": tool.input_schema}
            if "outputSchema" in tool.wire and not tool.wrapped:  # a wrapped value travels as its text
                schemas["outputSchema"] = tool.wire["outputSchema"]
            tools[tool.name] = schemas
        return [
            {
                "uri": EXTENSION_URI,
                "description": "The JSON Schemas of each skill's arguments and result (data only).",
                "required": False,
                "params": {"tools": tools},
            }
        ]

    # ---- routing --------------------------------------------------------------------------------
    def _tool(self, name: Any, field: str) -> ToolDef:
        tool = self.registry.get_tool(name) if isinstance(name, str) else None
        if tool is None:
            known = ", ".join(t.name for t in self.registry.listing("tools")) or "none"
            raise invalid(field, f"names no skill ({name!r}); skills: {known}")
        return tool

    def route(self, message: dict[str, Any]) -> tuple[ToolDef, dict[str, Any]]:
        parts = message["parts"]
        for index, part in enumerate(parts):
            data = part.get("data")
            if isinstance(data, dict) and "skill" in data:
                tool = self._tool(data["skill"], f"message.parts[{index}].data.skill")
                arguments = data.get("arguments", {})
                if not isinstance(arguments, dict):
                    raise invalid(f"message.parts[{index}].data.arguments", "must be an object")
                return tool, arguments
        skill_id = (message.get("metadata") or {}).get("skillId")
        if skill_id is not None:
            return self._tool(skill_id, "message.metadata.skillId"), _object(parts) or {}
        tools = self.registry.listing("tools")
        if len(tools) == 1:
            return tools[0], _object(parts) or {}
        known = ", ".join(t.name for t in tools) or "none"
        raise invalid(
            "message.parts",
            f'name a skill with a data part {{"skill": id, "arguments": {{...}}}} or metadata.skillId; skills: {known}',
        )

    def accept(self, message: dict[str, Any], task: dict[str, Any] | None) -> Work:
        if task is None:
            tool, arguments = self.route(message)
            return self._plan(tool, arguments)
        pending = task.get("_pending")
        if not isinstance(pending, dict) or "tool" not in pending:
            raise A2AError("UnsupportedOperation", f"Task {task['id']} is not waiting for input this agent understands")
        tool = self._tool(pending["tool"], "task")
        if pending.get("kind") == "elicit":
            answers = dict(pending.get("answers", {}))
            answers.update(_answers(message, pending["asked"]))
            return self._plan(tool, pending["arguments"], answers, pending.get("state") or {})
        arguments = dict(pending["arguments"])
        arguments.update(_continuation(message, tool, pending.get("missing", [])))
        return self._plan(tool, arguments)

    def _plan(
        self, tool: ToolDef, arguments: dict[str, Any], answers: dict[str, Any] | None = None, state: Any = None
    ) -> Work:
        arguments = coerce_integers(tool.input_schema, arguments)
        required = tool.input_schema.get("required", [])
        missing = [name for name in required if isinstance(name, str) and name not in arguments]
        wrong = [
            (f"arguments.{v.path}" if v.path else "arguments", v.message)
            for v in tool.validator().validate(arguments)
            if not (v.rule == "required" and v.path == "")
        ]
        if wrong:
            detail = "; ".join(why for _, why in wrong)
            raise A2AError("InvalidParams", detail=f"arguments for {tool.name}: {detail}", violations=wrong)
        if missing:
            return lambda job: self._ask_arguments(job, tool, arguments, missing)
        return lambda job: self._execute(job, tool, arguments, answers or {}, state or {})

    # ---- work ---------------------------------------------------------------------------------------
    def _ask_arguments(self, job: Job, tool: ToolDef, arguments: dict[str, Any], missing: list[str]) -> None:
        props = tool.input_schema.get("properties", {})
        described = [f"{name} ({props.get(name, {}).get('description', 'required')})" for name in missing]
        question = (
            f"{tool.name} needs {', '.join(described)}. Reply on this task with a data part "
            f"{{{', '.join(f'{json.dumps(n)}: ...' for n in missing)}}}."
        )
        schema = {"type": "object", "properties": {n: props.get(n, {}) for n in missing}, "required": missing}
        pending = {"kind": "arguments", "tool": tool.name, "arguments": arguments, "missing": missing}
        job.ask([text_part(question), data_part({"missing": missing, "schema": schema})], pending)

    def _execute(self, job: Job, tool: ToolDef, arguments: dict[str, Any], answers: dict[str, Any], state: Any) -> None:
        job.working()
        ctx = self._context(job, answers, state)
        try:
            value = invoke.call(tool.handler, arguments, ctx, job.cancel)
            result = content.tool_result(value)
        except InputRequired as need:
            self._ask_elicit(job, tool, arguments, answers, ctx.state, need.requests)
            return
        except RpcError as exc:
            job.fail(f"{tool.name}: {exc.message}")
            return
        except Exception as exc:
            job.fail(str(exc) or type(exc).__name__)
            return
        if result.get("isError"):
            job.fail("\n".join(b["text"] for b in result["content"] if b.get("type") == "text") or "the tool failed")
            return
        checker = tool.output_validator()
        problems = checker.validate(result.get("structuredContent")) if checker is not None else []
        if problems:
            job.fail(f"{tool.name} broke its outputSchema: {'; '.join(p.message for p in problems)}")
            return
        if tool.wrapped:  # {"result": value} exists for MCP's object rule; A2A gets the value's own text
            result.pop("structuredContent", None)
        parts = result_parts(result)
        if parts:
            job.artifact(parts, name=tool.name)
        job.complete()

    def _ask_elicit(
        self,
        job: Job,
        tool: ToolDef,
        arguments: dict[str, Any],
        answers: dict[str, Any],
        state: Any,
        requests: dict[str, dict[str, Any]],
    ) -> None:
        asked = sorted(requests)
        questions = [str((requests[key].get("params") or {}).get("message", "")) for key in asked]
        schemas = {key: (requests[key].get("params") or {}).get("requestedSchema", {}) for key in asked}
        parts = [text_part(" ".join(q for q in questions if q) or f"{tool.name} needs more input")]
        parts.append(data_part({"requestedSchema": schemas[asked[0]]} if len(asked) == 1 else {"requests": schemas}))
        pending = {"kind": "elicit", "tool": tool.name, "arguments": arguments, "answers": answers, "asked": asked}
        pending["state"] = state
        pending["schemas"] = schemas
        job.ask(parts, pending)

    def _context(self, job: Job, answers: dict[str, Any], state: Any) -> Context:
        def notify(message: dict[str, Any]) -> None:
            if message.get("method") == "notifications/progress":
                params = message["params"]
                total = f"/{params['total']:g}" if params.get("total") is not None else ""
                note = f": {params['message']}" if params.get("message") else ""
                job.working(f"progress {params['progress']:g}{total}{note}")

        return Context(
            method="tools/call",
            request_id=job.task_id,
            era="a2a",
            version="1.0",
            client_capabilities=_CAPABILITIES,
            client_info=None,
            notify=notify,
            broker=ReplayBroker(_CAPABILITIES, answers),
            progress_token=job.task_id,
            principal=job.owner or None,
            cancel_event=job.cancel,
            state=state if isinstance(state, dict) else {},
        )


def _continuation(message: dict[str, Any], tool: ToolDef, missing: list[str]) -> dict[str, Any]:
    found = _object(message["parts"])
    if found is not None:
        inner = found.get("arguments")
        return inner if isinstance(inner, dict) and "skill" in found else found
    words = [t for t in texts(message) if t.strip()]
    if len(missing) == 1 and words:
        schema = tool.input_schema.get("properties", {}).get(missing[0], {})
        return {missing[0]: _scalar(schema, words[0].strip())}
    raise invalid("message.parts", f"reply with a data part holding {', '.join(missing)}")


def _scalar(schema: Any, text: str) -> Any:
    if isinstance(schema, dict) and schema.get("type") == "string":
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _answers(message: dict[str, Any], asked: list[str]) -> dict[str, Any]:
    """ElicitResults for the asked keys from a continuation message."""
    found = _object(message["parts"])
    words = [t.strip() for t in texts(message) if t.strip()]
    if found is None and words and words[0].lower() in ("decline", "cancel"):
        return {key: {"action": words[0].lower()} for key in asked}
    if found is None:
        raise invalid("message.parts", "reply with a data part holding the requested fields (or the text 'decline')")
    if len(asked) > 1:
        return {key: {"action": "accept", "content": found.get(key, {})} for key in asked}
    return {asked[0]: {"action": "accept", "content": found}}
