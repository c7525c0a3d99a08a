"""acp.client.events: typed, frozen events for every `session/update` kind, plus the client's own turn events.

`parse_update(params)` turns the params of one `session/update` notification into one event; a
table maps each `sessionUpdate` kind to its class, and a kind we do not know (or a malformed one)
becomes an `UnknownUpdate`, never an error. Every event keeps the raw update dict, so fields the
schema added after us still reach the caller. Rules: plain data only; imports only `wire`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_agent_kit.wire import acp as wire


@dataclass(frozen=True)
class Event:
    """Something that happened in a session; `raw` is the update (or record) as received."""

    session_id: str
    kind: str
    raw: dict[str, Any]


@dataclass(frozen=True)
class Chunk(Event):
    """A piece of a message: `content` is the ContentBlock, `text` its text ('' for non-text blocks)."""

    content: dict[str, Any]
    text: str
    message_id: str | None


class UserMessageChunk(Chunk):
    """A piece of the user's message (seen when a session is loaded and its history replayed)."""


class AgentMessageChunk(Chunk):
    """A piece of the agent's answer."""


class AgentThoughtChunk(Chunk):
    """A piece of the agent's reasoning."""


@dataclass(frozen=True)
class ToolCall(Event):
    """A tool call started (`tool_call`) or changed (`tool_call_update`, fields None when unchanged)."""

    tool_call_id: str
    title: str | None
    tool_kind: str | None
    status: str | None
    content: list[Any] | None
    locations: list[Any] | None


class ToolCallUpdate(ToolCall):
    """A change to a tool call: only the fields that changed are set."""


@dataclass(frozen=True)
class Plan(Event):
    """The agent's complete plan (it replaces the previous one)."""

    entries: list[dict[str, Any]]


@dataclass(frozen=True)
class AvailableCommands(Event):
    """The slash commands the agent offers now."""

    commands: list[dict[str, Any]]


@dataclass(frozen=True)
class ModeChanged(Event):
    """The session's current mode changed (modes are deprecated in favour of config options)."""

    mode_id: str


@dataclass(frozen=True)
class ConfigOptions(Event):
    """The session's complete list of config options."""

    options: list[dict[str, Any]]


@dataclass(frozen=True)
class SessionInfo(Event):
    """The session's title and/or last update time changed."""

    title: str | None
    updated_at: str | None


@dataclass(frozen=True)
class Usage(Event):
    """Tokens used of the context size, and the cost when the agent knows it."""

    used: int
    size: int
    cost: dict[str, Any] | None


@dataclass(frozen=True)
class UnknownUpdate(Event):
    """An update kind this client does not know, or one missing a required field: passed through whole."""

    problem: str


@dataclass(frozen=True)
class PermissionAsked(Event):
    """A permission question, placed in the turn's stream by whoever will answer it: it reaches the turn's
    reader after every update the agent sent before the question (`request` is the PermissionRequest)."""

    request: Any


@dataclass(frozen=True)
class PermissionDecision(Event):
    """The client's answer to a `session/request_permission` (outcome 'selected' or 'cancelled')."""

    tool_call_id: str | None
    outcome: str
    option_id: str | None
    option_kind: str | None


@dataclass(frozen=True)
class FileWritten(Event):
    """A `fs/write_text_file` the client carried out (or refused, with `error`)."""

    path: str
    error: str | None


def _text(content: Any) -> str:
    return content.get("text", "") if isinstance(content, dict) and content.get("type") == "text" else ""


def _chunk(cls: type[Chunk]) -> Callable[[str, dict[str, Any]], Event]:
    def build(session_id: str, update: dict[str, Any]) -> Event:
        content = update["content"]
        if not isinstance(content, dict):
            raise TypeError("content is not a ContentBlock object")
        message_id = update.get("messageId")
        return cls(session_id, update["sessionUpdate"], update, content, _text(content),
                   message_id if isinstance(message_id, str) else None)
    return build


def _tool(cls: type[ToolCall]) -> Callable[[str, dict[str, Any]], Event]:
    def build(session_id: str, update: dict[str, Any]) -> Event:
        tool_call_id = update["toolCallId"]
        if not isinstance(tool_call_id, str):
            raise TypeError("toolCallId is not a string")
        if cls is ToolCall and not isinstance(update.get("title"), str):
            raise TypeError("tool_call has no title")
        default_status = "pending" if cls is ToolCall else None
        return cls(session_id, update["sessionUpdate"], update, tool_call_id, update.get("title"),
                   update.get("kind"), update.get("status", default_status), update.get("content"),
                   update.get("locations"))
    return build


def _list(update: dict[str, Any], key: str) -> list[Any]:
    value = update[key]
    if not isinstance(value, list):
        raise TypeError(f"{key} is not a list")
    return value


BUILDERS: dict[str, Callable[[str, dict[str, Any]], Event]] = {
    wire.USER_MESSAGE_CHUNK: _chunk(UserMessageChunk),
    wire.AGENT_MESSAGE_CHUNK: _chunk(AgentMessageChunk),
    wire.AGENT_THOUGHT_CHUNK: _chunk(AgentThoughtChunk),
    wire.TOOL_CALL: _tool(ToolCall),
    wire.TOOL_CALL_UPDATE: _tool(ToolCallUpdate),
    wire.PLAN: lambda sid, u: Plan(sid, wire.PLAN, u, _list(u, "entries")),
    wire.AVAILABLE_COMMANDS_UPDATE: lambda sid, u: AvailableCommands(
        sid, wire.AVAILABLE_COMMANDS_UPDATE, u, _list(u, "availableCommands")),
    wire.CURRENT_MODE_UPDATE: lambda sid, u: ModeChanged(sid, wire.CURRENT_MODE_UPDATE, u, str(u["currentModeId"])),
    wire.CONFIG_OPTION_UPDATE: lambda sid, u: ConfigOptions(
        sid, wire.CONFIG_OPTION_UPDATE, u, _list(u, "configOptions")),
    wire.SESSION_INFO_UPDATE: lambda sid, u: SessionInfo(sid, wire.SESSION_INFO_UPDATE, u, u.get("title"),
                                                         u.get("updatedAt")),
    wire.USAGE_UPDATE: lambda sid, u: Usage(sid, wire.USAGE_UPDATE, u, int(u["used"]), int(u["size"]), u.get("cost")),
}


def parse_update(params: Any) -> Event:
    """One event for the params of a `session/update` notification (UnknownUpdate when it is not one we know)."""
    if not isinstance(params, dict):
        return UnknownUpdate("", "", {"params": params}, "session/update params are not an object")
    session_id = params.get("sessionId")
    session_id = session_id if isinstance(session_id, str) else ""
    update = params.get("update")
    if not isinstance(update, dict):
        return UnknownUpdate(session_id, "", {"params": params}, "session/update has no update object")
    kind = update.get("sessionUpdate")
    build = BUILDERS.get(kind) if isinstance(kind, str) else None
    if build is None:
        return UnknownUpdate(session_id, str(kind), update, f"unknown sessionUpdate kind {kind!r}")
    try:
        return build(session_id, update)
    except (KeyError, TypeError, ValueError) as exc:
        return UnknownUpdate(session_id, str(kind), update, f"malformed {kind}: {type(exc).__name__} {exc}")
