"""http_routes: which way one Streamable HTTP POST goes — modern, handshake-era session, or stateless.

One table (ROUTES) keyed by what the request shows: its `MCP-Protocol-Version` header (absent,
a 2026-07-28 value, or a handshake-era value), whether it carries `Mcp-Session-Id`, and the
message's shape (an `initialize`, a request with the `_meta` envelope, a bare request, one with
an older kit's bare `_meta` keys, a notification, a response). A bare request with no header
and no session is what kagent's curl examples send and what the official SDK's stateless mode
serves without `initialize` or a session: it is served once under an implied envelope
(`implied_envelope`: the newest modern version and the client capabilities of the request's
own `_meta`, else none), with no header checks, as there are no headers to check. Rules: pure
functions over header values and a parsed message; no sockets; of the dispatcher only its
bare-key test.
"""

from __future__ import annotations

from typing import Any, Final

from mcp_agent_kit.core.dispatcher import bare_key_hint
from mcp_agent_kit.wire import mcp

MODERN: Final = "modern"
LEGACY: Final = "legacy"  # the initialize handshake and its Mcp-Session-Id sessions
STATELESS: Final = "stateless"

# (header, has session, shape) -> route; header is "absent", "modern" or "legacy".
SHAPES: Final = ("initialize", "enveloped", "bare", "bare-keys", "notification", "response")
ROUTES: Final[dict[tuple[str, bool, str], str]] = {
    **{("modern", session, shape): MODERN for session in (False, True) for shape in SHAPES},
    **{("legacy", session, shape): LEGACY for session in (False, True) for shape in SHAPES},
    ("absent", False, "initialize"): LEGACY,
    ("absent", True, "initialize"): LEGACY,
    ("absent", False, "enveloped"): MODERN,
    ("absent", True, "enveloped"): MODERN,
    ("absent", False, "bare"): STATELESS,
    ("absent", True, "bare"): LEGACY,
    # an older "stateless MCP" kit's bare `_meta` keys: the session error, which names the MCP keys to send
    ("absent", False, "bare-keys"): LEGACY,
    ("absent", True, "bare-keys"): LEGACY,
    ("absent", False, "notification"): STATELESS,
    ("absent", True, "notification"): LEGACY,
    ("absent", False, "response"): STATELESS,
    ("absent", True, "response"): LEGACY,
}


def _meta(message: dict[str, Any]) -> dict[str, Any] | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else None


def shape(kind: str, message: dict[str, Any]) -> str:
    """initialize / enveloped / bare (requests), or the kind itself (notification, response)."""
    if kind != "request":
        return kind
    if message["method"] == "initialize":
        return "initialize"
    meta = _meta(message)
    if meta is not None and mcp.META_PROTOCOL_VERSION in meta:
        return "enveloped"
    return "bare-keys" if meta is not None and bare_key_hint(message) else "bare"


def header_class(version: str | None) -> str:
    if version is None:
        return "absent"
    return "legacy" if version.strip() in mcp.LEGACY_VERSIONS else "modern"


def route(version: str | None, has_session: bool, kind: str, message: dict[str, Any]) -> str:
    """The route of one POST (a row of ROUTES)."""
    return ROUTES[(header_class(version), has_session, shape(kind, message))]


def implied_envelope(message: dict[str, Any]) -> dict[str, Any]:
    """A stateless request with the envelope it implies: the newest modern version and the
    client capabilities of its own `_meta` (none when it declares none). Params that are not an
    object are left for the dispatcher to refuse."""
    params = message.get("params", {})
    if not isinstance(params, dict):
        return message
    meta = dict(_meta(message) or {})
    meta[mcp.META_PROTOCOL_VERSION] = mcp.MODERN_VERSIONS[0]
    meta.setdefault(mcp.META_CLIENT_CAPABILITIES, {})  # a malformed one is the dispatcher's -32602
    return {**message, "params": {**params, "_meta": meta}}
