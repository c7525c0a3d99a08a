"""http_headers: the MCP request headers of Streamable HTTP 2026-07-28, checked against the body.

`Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` (declared with `x-mcp-header` in a tool's
inputSchema) must agree with the JSON-RPC body; values may use the `=?base64?...?=`
sentinel. Any disagreement is HeaderMismatch -32020 (digest §6). Rules: pure functions over a
header lookup and a parsed message; no sockets, no dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core.registry import Registry
from mcp_agent_kit.wire import headers, mcp
from mcp_agent_kit.wire.jsonrpc import RpcError

Lookup = Callable[[str], str | None]
"""header(name) -> value or None (names are case-insensitive)."""

def mismatch(why: str) -> RpcError:
    return RpcError(mcp.HEADER_MISMATCH, f"Header mismatch: {why}")


def decode_value(raw: str) -> str:
    """A header value with optional whitespace trimmed and the base64 sentinel decoded."""
    try:
        return headers.decode_value(raw)
    except ValueError as exc:
        raise mismatch(str(exc)) from exc


def _same(header: str, value: Any) -> bool:
    """Does a decoded header value denote this body value? Numbers compare numerically."""
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            return float(header) == float(value)
        except ValueError:
            return False
    return isinstance(value, str) and header == value


def check_envelope(header: Lookup, message: dict[str, Any]) -> None:
    """Ladder step 4: MCP-Protocol-Version, Mcp-Method and Mcp-Name against the body."""
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    assert isinstance(params, dict)
    meta = params.get("_meta") or {}
    version = header("mcp-protocol-version")
    if version is None or version.strip() != meta.get(mcp.META_PROTOCOL_VERSION):
        raise mismatch("MCP-Protocol-Version does not match _meta protocolVersion")
    method = header("mcp-method")
    if method is None:
        raise mismatch("missing Mcp-Method header")
    if decode_value(method) != message.get("method"):
        raise mismatch("Mcp-Method does not match the request method")
    field = headers.NAME_FIELD.get(str(message.get("method")))
    name = header("mcp-name")
    if field is None:
        return
    body_value = params.get(field)
    if body_value is None:
        if name is not None:
            raise mismatch(f"Mcp-Name sent but the body has no {field}")
        return
    if name is None:
        raise mismatch("missing Mcp-Name header")
    if not _same(decode_value(name), body_value):
        raise mismatch(f"Mcp-Name does not match params.{field}")


def header_params(schema: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """(header suffix, property path) for each `x-mcp-header` reachable through `properties`."""
    found: list[tuple[str, tuple[str, ...]]] = []

    def walk(node: Any, path: tuple[str, ...]) -> None:
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict):
            return
        for key, sub in props.items():
            if not isinstance(sub, dict):
                continue
            name = sub.get("x-mcp-header")
            if isinstance(name, str) and name:
                found.append((name, (*path, key)))
            walk(sub, (*path, key))

    walk(schema, ())
    return found


def check_params(header: Lookup, message: dict[str, Any], registry: Registry) -> None:
    """Ladder step 8: each `Mcp-Param-{X}` against the tool argument annotated with X."""
    if message.get("method") != "tools/call":
        return
    params = message.get("params") or {}
    tool = registry.get_tool(str(params.get("name")))
    if tool is None:
        return
    arguments = params.get("arguments")
    for name, path in header_params(tool.input_schema):
        value = headers.value_at(arguments, path)
        raw = header(f"mcp-param-{name}")
        if value is None:
            if raw is not None:
                raise mismatch(f"Mcp-Param-{name} sent but the argument is absent")
            continue
        if raw is None:
            raise mismatch(f"missing Mcp-Param-{name} header")
        if not _same(decode_value(raw), value):
            raise mismatch(f"Mcp-Param-{name} does not match the argument")
