"""acp.agent.params: what acp.agent checks in the params a client sent, each check one -32602 naming the field.

Params must be an object; ids non-empty strings; `cwd` and `additionalDirectories` absolute paths;
`mcpServers` a list (its object entries are handed on as the client sent them). `json_checked` wraps
an author's extension method so a result that is not JSON fails as -32603 naming the problem,
instead of a reply that cannot be written.
Rules: pure functions over parsed JSON; imports `wire` only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError

MethodHandler = Callable[[dict[str, Any]], Any]


def as_object(params: Any) -> dict[str, Any]:
    """The params as an object (absent: {})."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(wire.INVALID_PARAMS, "params must be an object")
    return params


def nonempty_string(params: dict[str, Any], key: str) -> str:
    """`params[key]`, a non-empty string."""
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(wire.INVALID_PARAMS, f"{key} must be a non-empty string")
    return value


def absolute_path(params: dict[str, Any], key: str) -> str:
    """`params[key]`, an absolute path."""
    value = nonempty_string(params, key)
    if not os.path.isabs(value):
        raise RpcError(wire.INVALID_PARAMS, f"{key} must be an absolute path, got {value!r}")
    return value


def directories(params: dict[str, Any]) -> list[str]:
    """additionalDirectories (absolute paths; mcpServers checked to be a list too)."""
    value = params.get("additionalDirectories", [])
    if not isinstance(value, list) or not all(isinstance(d, str) and os.path.isabs(d) for d in value):
        raise RpcError(wire.INVALID_PARAMS, "additionalDirectories must be a list of absolute paths")
    if not isinstance(params.get("mcpServers", []), list):
        raise RpcError(wire.INVALID_PARAMS, "mcpServers must be a list")
    return list(value)


def servers(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The McpServer entries the client handed on (checked to be a list by directories)."""
    return [server for server in params.get("mcpServers") or [] if isinstance(server, dict)]


def json_checked(handler: MethodHandler) -> MethodHandler:
    """An author's handler whose result must be JSON (else -32603 names the problem, instead of a
    reply that cannot be written)."""

    def checked(params: dict[str, Any]) -> Any:
        result = handler(params)
        try:
            json.dumps(result, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise RpcError(wire.INTERNAL_ERROR, f"the handler's result is not JSON: {exc}") from None
        return result

    return checked
