"""wire.acp: the facts of the Agent Client Protocol v1 wire — versions, method names, enums, error codes.

Everything here is data taken from the ACP v1 schema (protocolVersion is the integer 1; updates are
discriminated by `sessionUpdate`; both sides send requests). Rules: imports only `wire.jsonrpc` (the
one code table), holds no behaviour beyond tiny lookups; the client (`acp/`) and the agent framework read it.
"""

from __future__ import annotations

from typing import Final

from mcp_agent_kit.wire import jsonrpc

PROTOCOL_VERSION: Final = 1

# -- methods the client calls on the agent ---------------------------------------------------
INITIALIZE: Final = "initialize"
AUTHENTICATE: Final = "authenticate"
LOGOUT: Final = "logout"
SESSION_NEW: Final = "session/new"
SESSION_LOAD: Final = "session/load"
SESSION_RESUME: Final = "session/resume"
SESSION_LIST: Final = "session/list"
SESSION_CLOSE: Final = "session/close"
SESSION_DELETE: Final = "session/delete"
SESSION_FORK: Final = "session/fork"  # unstable in the schema: gated on sessionCapabilities.fork
SESSION_PROMPT: Final = "session/prompt"
SESSION_CANCEL: Final = "session/cancel"  # a notification
SESSION_SET_MODE: Final = "session/set_mode"
SESSION_SET_CONFIG_OPTION: Final = "session/set_config_option"

# -- methods the agent calls on the client ---------------------------------------------------
SESSION_UPDATE: Final = "session/update"  # a notification
REQUEST_PERMISSION: Final = "session/request_permission"
FS_READ_TEXT_FILE: Final = "fs/read_text_file"
FS_WRITE_TEXT_FILE: Final = "fs/write_text_file"
TERMINAL_CREATE: Final = "terminal/create"
TERMINAL_OUTPUT: Final = "terminal/output"
TERMINAL_WAIT_FOR_EXIT: Final = "terminal/wait_for_exit"
TERMINAL_KILL: Final = "terminal/kill"
TERMINAL_RELEASE: Final = "terminal/release"
CANCEL_REQUEST: Final = "$/cancel_request"  # either direction, a notification

AGENT_METHODS: Final = frozenset({
    INITIALIZE, AUTHENTICATE, LOGOUT, SESSION_NEW, SESSION_LOAD, SESSION_RESUME, SESSION_LIST, SESSION_CLOSE,
    SESSION_DELETE, SESSION_FORK, SESSION_PROMPT, SESSION_CANCEL, SESSION_SET_MODE, SESSION_SET_CONFIG_OPTION,
})
CLIENT_METHODS: Final = frozenset({
    SESSION_UPDATE, REQUEST_PERMISSION, FS_READ_TEXT_FILE, FS_WRITE_TEXT_FILE, TERMINAL_CREATE, TERMINAL_OUTPUT,
    TERMINAL_WAIT_FOR_EXIT, TERMINAL_KILL, TERMINAL_RELEASE,
})

# session capability (agentCapabilities.sessionCapabilities.<key> present) -> the method it unlocks
SESSION_CAPABILITY_METHODS: Final = {
    "list": SESSION_LIST, "resume": SESSION_RESUME, "close": SESSION_CLOSE, "delete": SESSION_DELETE,
    "fork": SESSION_FORK,
}

# -- session/update kinds (`update.sessionUpdate`) -------------------------------------------
USER_MESSAGE_CHUNK: Final = "user_message_chunk"
AGENT_MESSAGE_CHUNK: Final = "agent_message_chunk"
AGENT_THOUGHT_CHUNK: Final = "agent_thought_chunk"
TOOL_CALL: Final = "tool_call"
TOOL_CALL_UPDATE: Final = "tool_call_update"
PLAN: Final = "plan"
AVAILABLE_COMMANDS_UPDATE: Final = "available_commands_update"
CURRENT_MODE_UPDATE: Final = "current_mode_update"
CONFIG_OPTION_UPDATE: Final = "config_option_update"
SESSION_INFO_UPDATE: Final = "session_info_update"
USAGE_UPDATE: Final = "usage_update"
UPDATE_KINDS: Final = (
    USER_MESSAGE_CHUNK, AGENT_MESSAGE_CHUNK, AGENT_THOUGHT_CHUNK, TOOL_CALL, TOOL_CALL_UPDATE, PLAN,
    AVAILABLE_COMMANDS_UPDATE, CURRENT_MODE_UPDATE, CONFIG_OPTION_UPDATE, SESSION_INFO_UPDATE, USAGE_UPDATE,
)

# -- prompt stop reasons ---------------------------------------------------------------------
END_TURN: Final = "end_turn"
MAX_TOKENS: Final = "max_tokens"
MAX_TURN_REQUESTS: Final = "max_turn_requests"
REFUSAL: Final = "refusal"
CANCELLED: Final = "cancelled"
STOP_REASONS: Final = (END_TURN, MAX_TOKENS, MAX_TURN_REQUESTS, REFUSAL, CANCELLED)

# -- permission options (`options[].kind`) and outcomes ---------------------------------------
ALLOW_ONCE: Final = "allow_once"
ALLOW_ALWAYS: Final = "allow_always"
REJECT_ONCE: Final = "reject_once"
REJECT_ALWAYS: Final = "reject_always"
PERMISSION_OPTION_KINDS: Final = (ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS)
ALLOW_KINDS: Final = (ALLOW_ONCE, ALLOW_ALWAYS)
REJECT_KINDS: Final = (REJECT_ONCE, REJECT_ALWAYS)
OUTCOME_SELECTED: Final = "selected"
OUTCOME_CANCELLED: Final = "cancelled"

# -- tool calls ------------------------------------------------------------------------------
TOOL_KINDS: Final = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
READ_ONLY_TOOL_KINDS: Final = frozenset({"read", "search", "fetch", "think"})
TOOL_STATUSES: Final = ("pending", "in_progress", "completed", "failed")
TOOL_CONTENT_TYPES: Final = ("content", "diff", "terminal")
PLAN_PRIORITIES: Final = ("high", "medium", "low")
PLAN_STATUSES: Final = ("pending", "in_progress", "completed")

# -- content blocks (`type`) and the promptCapabilities flag each one needs (None: always allowed)
CONTENT_CAPABILITY: Final = {
    "text": None, "resource_link": None, "image": "image", "audio": "audio", "resource": "embeddedContext",
}

# -- error codes -----------------------------------------------------------------------------
PARSE_ERROR: Final = jsonrpc.PARSE_ERROR
INVALID_REQUEST: Final = jsonrpc.INVALID_REQUEST
METHOD_NOT_FOUND: Final = jsonrpc.METHOD_NOT_FOUND
INVALID_PARAMS: Final = jsonrpc.INVALID_PARAMS
INTERNAL_ERROR: Final = jsonrpc.INTERNAL_ERROR
REQUEST_CANCELLED: Final = -32800
AUTH_REQUIRED: Final = -32000
RESOURCE_NOT_FOUND: Final = -32002
ERROR_NAMES: Final = {  # the standard codes named from the one JSON-RPC table, then ACP's own
    **{code: text.lower() for code, text in jsonrpc.MESSAGES.items()},
    REQUEST_CANCELLED: "request cancelled", AUTH_REQUIRED: "authentication required",
    RESOURCE_NOT_FOUND: "resource not found",
}


def error_name(code: int) -> str:
    """A short name for an ACP/JSON-RPC error code ('error -32042' for one the schema does not name)."""
    return ERROR_NAMES.get(code, f"error {code}")
