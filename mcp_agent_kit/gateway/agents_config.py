"""gateway.agents_config: read the gateway config's `agents` section into AgentSpecs.

Keys are `namespace/name` (`name` alone means namespace `default`); each value names exactly one kind: `a2a` (the
agent's base URL or its card URL) or `acp` (an object: `command`, `args`, `env`, `cwd`, `approve`,
`max_concurrent`, `idle`, `mcpServers`, and the sandbox's `sandbox` ("bwrap"), `network`, `binds`, `writable`:
mcp_agent_kit.sandbox, docs/sandbox.md; or, in place of `command`, a remote agent's `url` (ws://, wss://, http://,
https://: ACP's network transport) with `headers` (an object of strings) and `tokenEnv` (the environment variable
holding its bearer token, read when it connects)). An acp `mcpServers` object is keyed by name like the gateway's
own section — `{"command", "args", "env"}` (stdio) or `{"url", "headers", "type": "http"|"sse"}` — and becomes
ACP's McpServer array (env and headers as `[{name, value}]`), handed on `session/new`, `session/load` and
`session/fork`. Entry-level `max_concurrent` (turns at once) and `timeout` (seconds one turn may take) apply to
both kinds. The top-level `agentSessions` object holds the session retention, `{"maxAgeDays": N}`: sessions not
used for N days are deleted (default: kept). Rules: plain data in, frozen specs out; a malformed entry is one
ConfigError naming it; no I/O (but looking for the bwrap program of a sandboxed entry), no clients.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_agent_kit.gateway.config import ConfigError
from mcp_agent_kit.sandbox import KEYS as SANDBOX_KEYS
from mcp_agent_kit.sandbox import Sandbox, SandboxError
from mcp_agent_kit.sandbox import parse as parse_sandbox

DEFAULT_NAMESPACE = "default"
DEFAULT_MAX_CONCURRENT = 4
DEFAULT_TURN_TIMEOUT = 600.0
DEFAULT_IDLE = 600.0
APPROVE = ("ask", "reads", "all")
"""ACP permission policy: ask every time, approve read-only tool kinds and ask the rest, approve all."""
_HEADER = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_ACP_KEYS = frozenset({"command", "args", "env", "cwd", "approve", "max_concurrent", "idle", "mcpServers",
                       *SANDBOX_KEYS})
_ACP_REMOTE_KEYS = frozenset({"url", "headers", "tokenEnv"})
_ACP_LOCAL_ONLY = frozenset({"command", "args", "env", *SANDBOX_KEYS})
_STDIO_KEYS = frozenset({"command", "args", "env"})
_REMOTE_KEYS = frozenset({"url", "headers", "type"})
REMOTE_TYPES = ("http", "sse")
_ENTRY_KEYS = frozenset({"a2a", "acp", "max_concurrent", "timeout", "description"})


@dataclass(frozen=True)
class AgentSpec:
    """One configured agent."""

    namespace: str
    name: str
    kind: str  # "a2a" or "acp"
    url: str = ""  # a2a: base URL or card URL; acp: a remote agent's ACP endpoint (instead of command)
    command: str = ""  # acp
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    approve: str = "ask"
    idle: float = DEFAULT_IDLE
    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    timeout: float = DEFAULT_TURN_TIMEOUT
    description: str = ""
    mcp_servers: tuple[dict[str, Any], ...] = ()  # acp: ACP McpServer wire objects
    sandbox: Sandbox | None = None  # acp: run the agent under bwrap
    headers: dict[str, str] = field(default_factory=dict)  # acp url: sent on every request
    token_env: str = ""  # acp url: the environment variable holding its bearer token

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def split_key(key: str) -> tuple[str, str]:
    """`ns/name` or `name` -> (namespace, name); ConfigError for anything else."""
    parts = key.split("/")
    if len(parts) == 1:
        parts = [DEFAULT_NAMESPACE, parts[0]]
    if len(parts) != 2 or not all(_PART.fullmatch(part) for part in parts):
        raise ConfigError(f"agent {key!r}: the key must be namespace/name (letters, digits, '.', '_', '-')")
    return parts[0], parts[1]


def _number(value: Any, what: str, low: float, high: float, *, whole: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) or not low <= value <= high:
        kind = "a whole number" if whole else "a number"
        raise ConfigError(f"{what} must be {kind} from {low:g} to {high:g}")
    return float(value)


def _pairs(value: Any, what: str) -> list[dict[str, str]]:
    """An object of strings as ACP's [{name, value}] list."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{what} must be an object of strings")
    return [{"name": name, "value": item} for name, item in value.items()]


def _mcp_server(where: str, name: str, value: Any) -> dict[str, Any]:
    """One acp mcpServers entry as an ACP McpServer (stdio: no type; http/sse: `type`)."""
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: expected an object with "command" (stdio) or "url" (http, sse)')
    remote = "url" in value
    unknown = sorted(set(value) - (_REMOTE_KEYS if remote else _STDIO_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown} (known: {sorted(_REMOTE_KEYS if remote else _STDIO_KEYS)})")
    if remote:
        url, kind = value["url"], value.get("type", "http")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: url must be an http(s) URL")
        if kind not in REMOTE_TYPES:
            raise ConfigError(f"{where}: type must be one of {list(REMOTE_TYPES)}")
        return {"type": kind, "name": name, "url": url, "headers": _pairs(value.get("headers", {}), f"{where} headers")}
    command, args = value.get("command"), value.get("args", [])
    if not isinstance(command, str) or not command:
        raise ConfigError(f'{where}: needs a "command" string (stdio) or a "url" (http, sse)')
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: args must be a list of strings")
    return {"name": name, "command": command, "args": list(args), "env": _pairs(value.get("env", {}), f"{where} env")}


def _mcp_servers(key: str, value: Any) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f'agent {key!r}: acp mcpServers must be an object of "name": {{"command": ...}} or '
                          f'{{"url": ...}}')
    return tuple(_mcp_server(f"agent {key!r}: acp mcpServers {name!r}", str(name), entry)
                 for name, entry in value.items())


def _acp(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f'agent {key!r}: "acp" must be an object with a "command"')
    unknown = sorted(set(value) - _ACP_KEYS - _ACP_REMOTE_KEYS)
    if unknown:
        raise ConfigError(f"agent {key!r}: unknown acp keys {unknown} (known: {sorted(_ACP_KEYS | _ACP_REMOTE_KEYS)})")
    if "url" in value:
        return _acp_remote(key, value)
    misplaced = sorted(set(value) & (_ACP_REMOTE_KEYS - {"url"}))
    if misplaced:
        raise ConfigError(f'agent {key!r}: acp {misplaced[0]} is for a remote agent ("url")')
    command = value.get("command")
    if not isinstance(command, str) or not command:
        raise ConfigError(f'agent {key!r}: acp needs a "command" string')
    args = value.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"agent {key!r}: acp args must be a list of strings")
    env = value.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ConfigError(f"agent {key!r}: acp env must be an object of strings")
    out: dict[str, Any] = {"command": command, "args": tuple(args), "env": dict(env), **_common(key, value)}
    try:
        out["sandbox"] = parse_sandbox(value, f"agent {key!r}: acp")
    except SandboxError as exc:
        raise ConfigError(str(exc)) from None
    return _with_limits(key, value, out)


def _common(key: str, value: dict[str, Any]) -> dict[str, Any]:
    """What a spawned and a remote acp entry share: `cwd`, `approve` and `mcpServers`."""
    cwd = value.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd.startswith("/")):
        raise ConfigError(f"agent {key!r}: acp cwd must be an absolute path")
    approve = value.get("approve", "ask")
    if approve not in APPROVE:
        raise ConfigError(f"agent {key!r}: acp approve must be one of {list(APPROVE)}")
    return {"cwd": cwd, "approve": approve, "mcp_servers": _mcp_servers(key, value.get("mcpServers", {}))}


def _with_limits(key: str, value: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """An acp entry's `idle` (seconds) and `max_concurrent`, local or remote alike, added to `out`."""
    out["idle"] = _number(value.get("idle", DEFAULT_IDLE), f"agent {key!r}: acp idle (seconds)", 1, 86400)
    if "max_concurrent" in value:
        out["max_concurrent"] = int(_number(value["max_concurrent"], f"agent {key!r}: max_concurrent", 1, 1000,
                                            whole=True))
    return out


def _acp_remote(key: str, value: dict[str, Any]) -> dict[str, Any]:
    """An acp entry with `url`: a remote agent over ACP's network transport."""
    local = sorted(set(value) & _ACP_LOCAL_ONLY)
    if local:
        raise ConfigError(f'agent {key!r}: acp {local[0]} does not go with "url" (it is for a spawned agent)')
    url = value["url"]
    if not isinstance(url, str) or not url.lower().startswith(("ws://", "wss://", "http://", "https://")):
        raise ConfigError(f"agent {key!r}: acp url must be a ws://, wss://, http:// or https:// URL")
    headers = value.get("headers", {})
    if not isinstance(headers, dict) or not all(
            isinstance(k, str) and _HEADER.fullmatch(k) and isinstance(v, str) and not set(v) & {"\r", "\n"}
            for k, v in headers.items()):
        raise ConfigError(f"agent {key!r}: acp headers must be an object of strings (one line each)")
    token_env = value.get("tokenEnv", "")
    if not isinstance(token_env, str) or (token_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token_env)):
        raise ConfigError(f"agent {key!r}: acp tokenEnv must name an environment variable")
    out: dict[str, Any] = {"url": url, "headers": dict(headers), "token_env": token_env, **_common(key, value)}
    return _with_limits(key, value, out)


def remote_headers(spec: AgentSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """The headers an acp `url` entry sends: its `headers`, and `Authorization: Bearer $tokenEnv`;
    ConfigError when that variable is unset."""
    headers = dict(spec.headers)
    if spec.token_env:
        token = environ.get(spec.token_env, "")
        if not token:
            raise ConfigError(f"agent {spec.ref!r}: acp tokenEnv {spec.token_env} is not set")
        headers["Authorization"] = f"Bearer {token}"
    return headers


def parse_agents(data: Any) -> dict[str, AgentSpec]:
    """{"namespace/name": AgentSpec} from a parsed config document (empty without `agents`)."""
    agents = data.get("agents", {}) if isinstance(data, dict) else {}
    if not isinstance(agents, dict):
        raise ConfigError('"agents" must be an object of "namespace/name": {"a2a": URL} or {"acp": {...}}')
    out: dict[str, AgentSpec] = {}
    for key, entry in agents.items():
        namespace, name = split_key(str(key))
        if not isinstance(entry, dict):
            raise ConfigError(f'agent {key!r}: expected an object with "a2a" or "acp"')
        unknown = sorted(set(entry) - _ENTRY_KEYS)
        kinds = [kind for kind in ("a2a", "acp") if kind in entry]
        if unknown or len(kinds) != 1:
            raise ConfigError(f'agent {key!r}: give exactly one of "a2a" or "acp"'
                              + (f" (unknown keys {unknown})" if unknown else ""))
        fields: dict[str, Any] = {"namespace": namespace, "name": name, "kind": kinds[0]}
        if "max_concurrent" in entry:
            fields["max_concurrent"] = int(_number(entry["max_concurrent"], f"agent {key!r}: max_concurrent", 1, 1000,
                                                   whole=True))
        if "timeout" in entry:
            fields["timeout"] = _number(entry["timeout"], f"agent {key!r}: timeout (seconds)", 1, 86400)
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f"agent {key!r}: description must be a string")
        fields["description"] = description
        if kinds[0] == "a2a":
            url = entry["a2a"]
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ConfigError(f'agent {key!r}: "a2a" must be the agent\'s http(s) base URL or card URL')
            fields["url"] = url
        else:
            fields.update(_acp(str(key), entry["acp"]))
        spec = AgentSpec(**fields)
        if spec.ref in out:
            raise ConfigError(f"agent {key!r}: {spec.ref} is configured twice")
        out[spec.ref] = spec
    return out


_RETENTION_KEYS = frozenset({"maxAgeDays"})
DAY_S = 86400.0


def parse_retention(data: Any) -> float | None:
    """Seconds a session may go unused before it is deleted (`agentSessions.maxAgeDays`), None: kept forever."""
    section = data.get("agentSessions") if isinstance(data, dict) else None
    if section is None:
        return None
    if not isinstance(section, dict) or set(section) - _RETENTION_KEYS:
        raise ConfigError('"agentSessions" must be an object with only "maxAgeDays" (days a session may go unused '
                          'before it is deleted)')
    if "maxAgeDays" not in section:
        return None
    return _number(section["maxAgeDays"], '"agentSessions": maxAgeDays', 0.01, 36500) * DAY_S
