"""headers: the modern Streamable HTTP request headers a client derives from a request body.

MCP-Protocol-Version, Mcp-Method, Mcp-Name and the Mcp-Param-* headers mirrored from tool
arguments annotated with `x-mcp-header` (digest §6), with the `=?base64?...?=` sentinel
encoding; plus the check that drops tools whose annotations are invalid. Rules: pure
functions; no I/O, no HTTP library.
"""

from __future__ import annotations

import re
from typing import Any, Final

from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.headers import NAME_FIELD, encode_value, value_at

__all__ = ["NAME_FIELD", "encode_value", "header_params", "header_value", "request_headers"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_HEADER_TYPES: Final = frozenset({"string", "integer", "boolean"})


def header_value(value: Any) -> str | None:
    """The header text for an argument value, or None when no header is sent (null/absent)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError(f"integer {value} is outside the range a header may carry")
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return str(int(value))
    if isinstance(value, str):
        return encode_value(value)
    raise ValueError(f"a {type(value).__name__} cannot be mirrored into a header")


def header_params(schema: Any) -> dict[str, tuple[str, ...]] | None:
    """{header name: argument path} for a tool's inputSchema, or None when an annotation is invalid."""
    found: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    ok = _walk(schema, (), True, found, seen)
    return found if ok else None


def _walk(node: Any, path: tuple[str, ...], reachable: bool, found: dict[str, tuple[str, ...]], seen: set[str]) -> bool:
    if isinstance(node, list):
        return all(_walk(item, path, False, found, seen) for item in node)
    if not isinstance(node, dict):
        return True
    if "x-mcp-header" in node:
        name = node["x-mcp-header"]
        if not reachable or not path or not isinstance(name, str) or not _TOKEN.fullmatch(name):
            return False
        if node.get("type") not in _HEADER_TYPES or name.lower() in seen:
            return False
        seen.add(name.lower())
        found[name] = path
    for key, child in node.items():
        if key == "properties" and isinstance(child, dict):
            for prop, sub in child.items():
                if not _walk(sub, (*path, prop), reachable, found, seen):
                    return False
        elif (
            isinstance(child, dict | list)
            and key not in ("const", "enum", "default", "examples")
            and not _walk(child, path, False, found, seen)
        ):
            return False
    return True


def request_headers(message: dict[str, Any], params_map: dict[str, tuple[str, ...]] | None = None) -> dict[str, str]:
    """The modern headers for one enveloped request (empty for a legacy body)."""
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    if not isinstance(meta, dict) or mcp.META_PROTOCOL_VERSION not in meta:
        return {}
    method = str(message.get("method"))
    headers = {"MCP-Protocol-Version": str(meta[mcp.META_PROTOCOL_VERSION]), "Mcp-Method": method}
    field = NAME_FIELD.get(method)
    if field is not None and isinstance(params.get(field), str):
        headers["Mcp-Name"] = encode_value(params[field])
    if method == "tools/call" and params_map:
        arguments = params.get("arguments")
        for name, path in sorted(params_map.items()):
            text = header_value(value_at(arguments, path))
            if text is not None:
                headers[f"Mcp-Param-{name}"] = text
    return headers
