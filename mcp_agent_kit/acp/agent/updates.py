"""acp.agent.updates: builders for the plain dicts an ACP v1 agent sends inside `session/update`.

Each function returns the `update` object (`{"sessionUpdate": kind, ...}`) with the v1 field names
to the letter; optional fields are left out when not given (never sent as null). Rules: pure
functions over dicts, no I/O, no session state; imports nothing of ours.
"""

from __future__ import annotations

from typing import Any, Final

TOOL_KINDS: Final = frozenset({"read", "edit", "delete", "move", "search", "execute", "think", "fetch",
                               "switch_mode", "other"})
TOOL_STATUSES: Final = frozenset({"pending", "in_progress", "completed", "failed"})
PLAN_PRIORITIES: Final = frozenset({"high", "medium", "low"})
PLAN_STATUSES: Final = frozenset({"pending", "in_progress", "completed"})
OPTION_KINDS: Final = frozenset({"allow_once", "allow_always", "reject_once", "reject_always"})

ContentBlock = dict[str, Any]


def text(value: str) -> ContentBlock:
    """A `text` content block."""
    return {"type": "text", "text": value}


def _chunk(kind: str, content: ContentBlock | str, message_id: str | None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": kind, "content": text(content) if isinstance(content, str) else content}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def agent_message(content: ContentBlock | str, message_id: str | None = None) -> dict[str, Any]:
    """An `agent_message_chunk` (a str becomes a text block)."""
    return _chunk("agent_message_chunk", content, message_id)


def user_message(content: ContentBlock | str, message_id: str | None = None) -> dict[str, Any]:
    """A `user_message_chunk`, as replayed by `session/load`."""
    return _chunk("user_message_chunk", content, message_id)


def thought(content: ContentBlock | str, message_id: str | None = None) -> dict[str, Any]:
    """An `agent_thought_chunk`."""
    return _chunk("agent_thought_chunk", content, message_id)


def _checked(name: str, value: str | None, allowed: frozenset[str]) -> str | None:
    if value is not None and value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
    return value


def plan_entry(content: str, priority: str = "medium", status: str = "pending") -> dict[str, Any]:
    """One entry of a `plan` update."""
    _checked("priority", priority, PLAN_PRIORITIES)
    _checked("status", status, PLAN_STATUSES)
    return {"content": content, "priority": priority, "status": status}


def plan(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """A `plan` update: always the complete list of entries (the client replaces its copy)."""
    return {"sessionUpdate": "plan", "entries": list(entries)}


def _tool_fields(kind: str | None, status: str | None, content: list[dict[str, Any]] | None,
                 locations: list[dict[str, Any]] | None, raw_input: Any, raw_output: Any) -> dict[str, Any]:
    fields = {"kind": _checked("kind", kind, TOOL_KINDS), "status": _checked("status", status, TOOL_STATUSES),
              "content": content, "locations": locations, "rawInput": raw_input, "rawOutput": raw_output}
    return {key: value for key, value in fields.items() if value is not None}


def tool_call(tool_call_id: str, title: str, *, kind: str | None = None, status: str | None = "pending",
              content: list[dict[str, Any]] | None = None, locations: list[dict[str, Any]] | None = None,
              raw_input: Any = None, raw_output: Any = None) -> dict[str, Any]:
    """A `tool_call` update announcing a new tool call."""
    return {"sessionUpdate": "tool_call", "toolCallId": tool_call_id, "title": title,
            **_tool_fields(kind, status, content, locations, raw_input, raw_output)}


def tool_call_fields(tool_call_id: str, *, title: str | None = None, kind: str | None = None,
                     status: str | None = None, content: list[dict[str, Any]] | None = None,
                     locations: list[dict[str, Any]] | None = None, raw_input: Any = None,
                     raw_output: Any = None) -> dict[str, Any]:
    """A ToolCallUpdate object (only the fields that changed): the body of `tool_call_update` and the
    `toolCall` of `session/request_permission`."""
    fields: dict[str, Any] = {"toolCallId": tool_call_id}
    if title is not None:
        fields["title"] = title
    return {**fields, **_tool_fields(kind, status, content, locations, raw_input, raw_output)}


def tool_call_update(tool_call_id: str, **changes: Any) -> dict[str, Any]:
    """A `tool_call_update` carrying only the changed fields (see tool_call_fields)."""
    return {"sessionUpdate": "tool_call_update", **tool_call_fields(tool_call_id, **changes)}


def content_item(block: ContentBlock | str) -> dict[str, Any]:
    """ToolCallContent of type `content` (a str becomes a text block)."""
    return {"type": "content", "content": text(block) if isinstance(block, str) else block}


def diff(path: str, new_text: str, old_text: str | None = None) -> dict[str, Any]:
    """ToolCallContent of type `diff` (old_text None: a new file)."""
    return {"type": "diff", "path": path, "oldText": old_text, "newText": new_text}


def terminal_item(terminal_id: str) -> dict[str, Any]:
    """ToolCallContent of type `terminal`, embedding a terminal the client runs."""
    return {"type": "terminal", "terminalId": terminal_id}


def location(path: str, line: int | None = None) -> dict[str, Any]:
    """A tool call location (absolute path, 1-based line)."""
    return {"path": path} if line is None else {"path": path, "line": line}


def permission_option(option_id: str, name: str, kind: str) -> dict[str, Any]:
    """A PermissionOption; the client chooses by `kind`."""
    _checked("kind", kind, OPTION_KINDS)
    return {"optionId": option_id, "name": name, "kind": kind}


def session_info(title: str | None = None, updated_at: str | None = None) -> dict[str, Any]:
    """A `session_info_update`."""
    update: dict[str, Any] = {"sessionUpdate": "session_info_update"}
    if title is not None:
        update["title"] = title
    if updated_at is not None:
        update["updatedAt"] = updated_at
    return update


def available_commands(commands: list[dict[str, Any]]) -> dict[str, Any]:
    """An `available_commands_update` ([{name, description, input?}])."""
    return {"sessionUpdate": "available_commands_update", "availableCommands": list(commands)}


def config_options(options: list[dict[str, Any]]) -> dict[str, Any]:
    """A `config_option_update` with the complete option list."""
    return {"sessionUpdate": "config_option_update", "configOptions": list(options)}
