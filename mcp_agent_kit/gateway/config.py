"""gateway.config: read the `mcpServers` file Claude Desktop and mcp.json use into backend specs.

Each entry is a stdio server (`command`, `args`, `env`, `cwd`) or a Streamable HTTP one (`url`,
optional `headers`, and `oauth` — the OAuth client settings of client/oauth/factory.py — when the
server needs a login), plus our `allowLegacy` and the backend's limits, `timeout` (seconds one
request to it may take) and `maxInFlight` (calls to it at once); the result is {alias:
normalised spec}, every key filled in (the defaults below). Rules: plain data in, plain data out;
a malformed file is one ConfigError naming the entry; no I/O beyond reading the file, no clients,
no server. The file is read through safefile: a regular file (a FIFO or device is refused, not
waited on) of at most MAX_CONFIG_BYTES.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_agent_kit.client.oauth.factory import check_settings
from mcp_agent_kit.safefile import read_bytes

MAX_CONFIG_BYTES = 1 << 20  # 1 MiB
DEFAULT_TIMEOUT = 60.0
"""Seconds a backend may take to answer one request (a tool call, a list, a read)."""
DEFAULT_MAX_IN_FLIGHT = 16
"""Calls (tools, prompts, resources) one backend may have in flight at once through the gateway."""


class ConfigError(ValueError):
    """The gateway config file is missing or malformed."""


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{what} must be a list of strings")
    return list(value)


def _string_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{what} must be an object of strings")
    return dict(value)


def _limits(alias: str, spec: dict[str, Any]) -> dict[str, Any]:
    timeout = spec.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 86400:
        raise ConfigError(f"server {alias!r}: timeout must be a number of seconds, more than 0 and at most 86400")
    most = spec.get("maxInFlight", DEFAULT_MAX_IN_FLIGHT)
    if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= 100_000:
        raise ConfigError(f"server {alias!r}: maxInFlight must be a whole number from 1 to 100000")
    return {"timeout": float(timeout), "maxInFlight": most}


def parse_config(data: Any) -> dict[str, dict[str, Any]]:
    """{alias: normalised server spec} from a parsed mcpServers document."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if isinstance(data, dict) and data.get("agents") and servers is None:
        servers = {}  # agents alone: no MCP backends to merge
    elif not isinstance(servers, dict) or not servers:
        raise ConfigError('the config needs a non-empty "mcpServers" object (or an "agents" object)')
    out: dict[str, dict[str, Any]] = {}
    for alias, spec in servers.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"server {alias!r}: expected an object")
        entry: dict[str, Any] = {"allowLegacy": bool(spec.get("allowLegacy", False)), **_limits(str(alias), spec)}
        if isinstance(spec.get("url"), str):
            entry["url"] = spec["url"]
            entry["headers"] = _string_map(spec.get("headers", {}), f"server {alias!r} headers")
            entry["oauth"] = None
            if spec.get("oauth") is not None:
                try:
                    entry["oauth"] = check_settings(spec["oauth"], f"server {alias!r} oauth")
                except ValueError as exc:
                    raise ConfigError(str(exc)) from None
        elif isinstance(spec.get("command"), str):
            entry["command"] = spec["command"]
            entry["args"] = _strings(spec.get("args", []), f"server {alias!r} args")
            entry["env"] = _string_map(spec.get("env", {}), f"server {alias!r} env")
            if spec.get("cwd") is not None and not isinstance(spec.get("cwd"), str):
                raise ConfigError(f"server {alias!r}: cwd must be a string")
            entry["cwd"] = spec.get("cwd")
        else:
            raise ConfigError(f'server {alias!r}: needs "command" (stdio) or "url" (HTTP)')
        out[str(alias)] = entry
    return out


def load_config(path: str) -> dict[str, dict[str, Any]]:
    return parse_config(load_document(path))


def load_document(path: str) -> Any:
    """The parsed JSON of the config file (its `mcpServers` and `agents` are parsed separately)."""
    try:
        return json.loads(read_bytes(path, limit=MAX_CONFIG_BYTES).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"{path} is not JSON: {exc}") from exc
