"""mcp: protocol facts of MCP 2026-07-28 and the handshake revisions, as tables.

Versions, `_meta` keys, error codes with their HTTP statuses, method sets per era, and the
per-era shaping of results. Rules: data and pure functions only; imports nothing of ours but
`wire.jsonrpc`.
"""

from __future__ import annotations

from typing import Any, Final

# The two eras a connection can be in: 2026-07-28's per-request `_meta` envelope ("modern") or
# the initialize handshake of the older revisions ("legacy"). Defined here only.
MODERN: Final = "modern"
LEGACY: Final = "legacy"
ERAS: Final = (MODERN, LEGACY)

MODERN_VERSIONS: Final = ("2026-07-28",)
LEGACY_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY: Final = LEGACY_VERSIONS[0]

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"

# The list-changed notification for each kind of registry entry (templates share resources').
LIST_CHANGED: Final = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
    "resourceTemplates": "notifications/resources/list_changed",
}
# 2025-11-25's experimental tasks (SEP-1686), declared at initialize: task-augmented tools/call.
LEGACY_TASKS_SINCE: Final = "2025-11-25"


def legacy_tasks_capability() -> dict[str, Any]:
    """A fresh `capabilities.tasks` object for 2025-11-25's experimental tasks."""
    return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


# Error codes (basic/index.mdx §Error Codes) and the HTTP status each one travels with.
HEADER_MISMATCH: Final = -32020
MISSING_CAPABILITY: Final = -32021
UNSUPPORTED_VERSION: Final = -32022
LEGACY_RESOURCE_NOT_FOUND: Final = -32002

HTTP_STATUS_BY_CODE: Final[dict[int, int]] = {
    -32700: 400,
    -32600: 400,
    -32601: 404,
    HEADER_MISMATCH: 400,
    MISSING_CAPABILITY: 400,
    UNSUPPORTED_VERSION: 400,
}

LOG_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_LEVEL_RANK: Final = {name: rank for rank, name in enumerate(LOG_LEVELS)}

# Methods whose complete results are cacheable (SEP-2549) and must carry ttlMs + cacheScope.
CACHEABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "skills/list",  # the Skills extension: both results are CacheableResults (SEP-2640 stable page)
        "skills/get",
    }
)
# Only these may answer with an InputRequiredResult (basic/patterns/mrtr.mdx).
INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})

# Input request kind -> the client capability that must be declared for it.
INPUT_CAPABILITY: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}

MODERN_ONLY_RESULT_KEYS: Final = ("resultType", "ttlMs", "cacheScope")

# Tool fields by the legacy revision that introduced them (feature table, digest §9).
_TOOL_FIELDS_SINCE: Final = {"annotations": "2025-03-26", "title": "2025-06-18", "outputSchema": "2025-06-18"}


def shape_legacy_result(result: dict[str, Any], version: str) -> dict[str, Any]:
    """Strip modern-only envelope keys (and fields the revision lacks) from a result."""
    for key in MODERN_ONLY_RESULT_KEYS:
        result.pop(key, None)
    meta = result.get("_meta")
    if isinstance(meta, dict):
        meta.pop(META_SERVER_INFO, None)
        if not meta:
            del result["_meta"]
    tools = result.get("tools")
    if isinstance(tools, list):
        result["tools"] = [_tool_for_version(tool, version) for tool in tools]
    # Before 2026-07-28 structuredContent (and outputSchema) must be objects.
    if version < "2025-06-18" or not isinstance(result.get("structuredContent", {}), dict):
        result.pop("structuredContent", None)
    return result


def _tool_for_version(tool: dict[str, Any], version: str) -> dict[str, Any]:
    shaped = {
        key: value for key, value in tool.items() if key not in _TOOL_FIELDS_SINCE or version >= _TOOL_FIELDS_SINCE[key]
    }
    output = shaped.get("outputSchema")
    if isinstance(output, dict) and output.get("type") != "object":
        del shaped["outputSchema"]
    return shaped


def unsupported_version_data(requested: Any) -> dict[str, Any]:
    return {"supported": list(MODERN_VERSIONS), "requested": requested}


def negotiate_legacy(requested: Any) -> str:
    """The handshake answer: echo a legacy version we speak, else offer our latest."""
    return requested if requested in LEGACY_VERSIONS else LATEST_LEGACY
