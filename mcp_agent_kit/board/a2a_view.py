"""board.a2a_view: a board task and its transcript, seen as an A2A v1.0 Task and its stream events.

Pure functions; board.a2a_face calls them on what the Board returns. The view (documented in docs/board.md):
- `id` = the board task id; `contextId` = the board task id too (one conversation per task: follow-up
  prompts and answers continue it; it never changes, while an agent session id may).
- `status.state` = board.states.A2A_STATES[task state] (the one table); `status.timestamp` = when the task
  last ended, started or was created; `status.message` (ROLE_AGENT) = the question while it needs input
  (its text, and the question object as a data part: `options` or `schema`), the result in review or
  done, the error when failed or cancelled.
- `history` = the transcript as messages, oldest first: each turn's prompt (ROLE_USER, from `turn_start`),
  the agent's text of the turn (the `message` deltas joined, ROLE_AGENT), each question (ROLE_AGENT) and
  answer (ROLE_USER), each `error`; a prompt not started yet (a queued task) ends it. Message ids are
  `<task id>-<seq>` (stable across reads). historyLength keeps the latest N (0: none).
- `artifacts` = one artifact `result` once the agent has replied: the result text, and in review the
  diff summary (`{"files": [{path, status, added, removed}]}`, no patch) as a data part.
- `metadata` = the board's own fields: state, waiting, branch, base, priority, agent, title, blockedBy.
Stream events (StreamResponse) from transcript events: a `state` move is a statusUpdate (the status as
above when it is the task's state now, the bare state otherwise; metadata.state = the board state); the
agent's `message` deltas are artifactUpdates of `result` (the first of a turn replaces it, the rest
append); a `progress` line is a statusUpdate in the current state with that text. Thoughts, plans and
tool calls are not streamed (MCP's task_events has them).
Rules: no I/O, no Board calls; plain dicts in and out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mcp_agent_kit.a2a.protocol import ROLE_AGENT, ROLE_USER
from mcp_agent_kit.board.states import A2A_STATES, FINAL, HELD, QUEUED

__all__ = ["A2A_TERMINAL", "ARTIFACT", "METADATA_FIELDS", "a2a_state", "history", "status", "stream_events",
           "task_view"]

ARTIFACT = "result"
METADATA_FIELDS = ("state", "waiting", "branch", "base", "priority", "agent", "title", "blockedBy")
A2A_TERMINAL = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"})
_STATUS_TEXT = {"needs_input": None, "review": "result", "done": "result", "failed": "error", "cancelled": "error"}


def a2a_state(board_state: str) -> str:
    return A2A_STATES[board_state]


def _message(task_id: str, message_id: str, role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"messageId": message_id, "contextId": task_id, "taskId": task_id, "role": role, "parts": parts}


def _question_parts(question: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if question.get("message"):
        parts.append({"text": str(question["message"])})
    parts.append({"data": {"question": dict(question)}, "mediaType": "application/json"})
    return parts


def status(task: Mapping[str, Any], state: str | None = None) -> dict[str, Any]:
    """The A2A TaskStatus of the task (in `state`, when given and not the task's own: no message then)."""
    board_state = state or task["state"]
    out: dict[str, Any] = {"state": a2a_state(board_state)}
    if board_state == task["state"]:
        parts: list[dict[str, Any]] = []
        if board_state == "needs_input" and task.get("question"):
            parts = _question_parts(task["question"])
        else:
            field = _STATUS_TEXT.get(board_state)
            text = task.get(field) if field else None
            if text:
                parts = [{"text": str(text)}]
        if parts:
            out["message"] = _message(task["id"], f"{task['id']}-status-{board_state}", ROLE_AGENT, parts)
    stamp = task.get("endedAt") or task.get("startedAt") or task.get("createdAt")
    if stamp:
        out["timestamp"] = stamp
    return out


def _kind(event: Mapping[str, Any]) -> str:
    return str(event.get("type") or event.get("kind") or "")


def _answer_parts(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    answer = event.get("answer", event.get("optionId"))
    if isinstance(answer, (dict, list)):
        return [{"data": answer, "mediaType": "application/json"}]
    if answer is None:
        answer = event.get("outcome") or "answered"
    return [{"text": str(answer)}]


def history(task: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The transcript as A2A messages, oldest first (see the module's doc)."""
    task_id = str(task["id"])
    out: list[dict[str, Any]] = []
    reply: list[str] = []
    reply_id = ""
    last_prompt: str | None = None

    def flush() -> None:
        nonlocal reply, reply_id
        if reply:
            out.append(_message(task_id, reply_id, ROLE_AGENT, [{"text": "".join(reply)}]))
        reply, reply_id = [], ""

    for event in events:
        kind, seq = _kind(event), event.get("seq")
        if kind == "message" and isinstance(event.get("text"), str):
            reply_id = reply_id or f"{task_id}-{seq}"
            reply.append(event["text"])
            continue
        if kind not in ("turn_start", "question", "answer", "error", "turn_end"):
            continue
        flush()
        if kind == "turn_start":
            last_prompt = str(event.get("prompt") or (task["prompt"] if last_prompt is None else ""))
            if last_prompt:
                out.append(_message(task_id, f"{task_id}-{seq}", ROLE_USER, [{"text": last_prompt}]))
        elif kind == "question" and isinstance(event.get("question"), Mapping):
            out.append(_message(task_id, f"{task_id}-{seq}", ROLE_AGENT, _question_parts(event["question"])))
        elif kind == "answer":
            out.append(_message(task_id, f"{task_id}-{seq}", ROLE_USER, _answer_parts(event)))
        elif kind == "error" and event.get("text"):
            out.append(_message(task_id, f"{task_id}-{seq}", ROLE_AGENT, [{"text": str(event["text"])}]))
    flush()
    if task["state"] in (HELD, QUEUED) and task.get("prompt") and task["prompt"] != last_prompt:
        out.append(_message(task_id, f"{task_id}-prompt-{len(out)}", ROLE_USER, [{"text": str(task["prompt"])}]))
    return out


def task_view(task: Mapping[str, Any], events: Iterable[Mapping[str, Any]] | None = None, *,
              history_length: int | None = None, diff: Mapping[str, Any] | None = None,
              artifacts: bool = True) -> dict[str, Any]:
    """The A2A Task of a board task (`events`: its transcript, None: no history; `diff`: task_diff's answer)."""
    view: dict[str, Any] = {"id": task["id"], "contextId": task["id"], "status": status(task)}
    if artifacts and task.get("result"):
        parts: list[dict[str, Any]] = [{"text": str(task["result"])}]
        if diff is not None and task["state"] == "review":
            files = [{k: change.get(k) for k in ("path", "status", "added", "removed")} for change in diff["files"]]
            parts.append({"data": {"files": files}, "mediaType": "application/json"})
        view["artifacts"] = [{"artifactId": ARTIFACT, "name": "result", "parts": parts}]
    if events is not None and history_length != 0:
        messages = history(task, events)
        view["history"] = messages if history_length is None else messages[-history_length:]
    view["metadata"] = {name: task.get(name) for name in METADATA_FIELDS if task.get(name) not in (None, [])}
    return view


def stream_events(task: Mapping[str, Any], events: Iterable[Mapping[str, Any]],
                  replying: bool) -> tuple[list[dict[str, Any]], bool]:
    """StreamResponses for transcript `events` of `task` (the task as it is now), and whether the agent's
    reply of the current turn has started (`replying` in, for the next call: its deltas then append)."""
    task_id = str(task["id"])
    out: list[dict[str, Any]] = []
    for event in events:
        kind = _kind(event)
        if kind == "turn_start":
            replying = False
        elif kind == "message" and isinstance(event.get("text"), str) and event["text"]:
            update: dict[str, Any] = {"taskId": task_id, "contextId": task_id,
                                      "artifact": {"artifactId": ARTIFACT, "name": "result",
                                                   "parts": [{"text": event["text"]}]}}
            if replying:
                update["append"] = True
            replying = True
            out.append({"artifactUpdate": update})
        elif kind == "state" and event.get("state") in A2A_STATES:
            board_state = str(event["state"])
            moved = status(task, board_state)
            if board_state != task["state"] and event.get("time"):
                moved["timestamp"] = event["time"]
            out.append({"statusUpdate": {"taskId": task_id, "contextId": task_id, "status": moved,
                                         "metadata": {"state": board_state}}})
        elif kind == "progress" and event.get("text") and task["state"] not in FINAL:
            line = _message(task_id, f"{task_id}-{event.get('seq')}", ROLE_AGENT, [{"text": str(event["text"])}])
            out.append({"statusUpdate": {"taskId": task_id, "contextId": task_id,
                                         "status": {"state": a2a_state(task["state"]), "message": line},
                                         "metadata": {"state": task["state"]}}})
    return out, replying
