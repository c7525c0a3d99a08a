"""hosts.config: what an agent host serves — its ACP agents, the default one, and the seed's AGENTCTL_* settings.

A CONFIG file is the gateway's `agents` shape (gateway/agents_config.py: `"namespace/name": {"acp": {"command",
"args", "env", "cwd", "idle", "sandbox", ...}, "max_concurrent": N}`) plus a top-level `"default"` naming the
agent served at `/acp`; without it a config of one agent serves that one. Each agent is served at
`/agents/<id>/acp`, where the id is its key (`name`, or `namespace/name` outside the default namespace). Per
agent, `max_concurrent` bounds its connections (one agent process each) and `acp.idle` is how long a connection
may pass no message before it is closed. Without a CONFIG the seed's environment describes one agent, `default`:
AGENTCTL_AGENT_COMMAND (default `auggie --acp`, split like a shell line), AGENTCTL_PORT (9999: the port when no
`--http` is given), AGENTCTL_AUTO_START (false: start the agentctl agent at once) and AGENTCTL_LOG_LEVEL (info).
Rules: plain data in, frozen values out; a mistake is one ConfigError naming the key; no processes, no sockets.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_agent_kit.gateway.agents_config import DEFAULT_NAMESPACE, AgentSpec, parse_agents
from mcp_agent_kit.gateway.config import ConfigError, load_document

__all__ = ["AGENTCTL_DEFAULTS", "ConfigError", "HostConfig", "HostedAgent", "from_environment", "load", "parse"]

AGENTCTL_DEFAULTS = {"AGENTCTL_PORT": "9999", "AGENTCTL_AGENT_COMMAND": "auggie --acp",
                     "AGENTCTL_AUTO_START": "false", "AGENTCTL_LOG_LEVEL": "info"}
LOG_LEVELS = {"debug": "DEBUG", "info": "INFO", "warn": "WARNING", "warning": "WARNING", "error": "ERROR"}
TRUE, FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off", ""})
TOP_KEYS = frozenset({"agents", "default"})


@dataclass(frozen=True)
class HostedAgent:
    """One agent this host serves: its id, its path and the gateway-shaped spec that starts it."""

    id: str
    spec: AgentSpec

    @property
    def path(self) -> str:
        return f"/agents/{self.id}/acp"

    @property
    def argv(self) -> list[str]:
        return [self.spec.command, *self.spec.args]

    def describe(self) -> dict[str, Any]:
        """The agent as the listing shows it (no environment values: they may hold keys)."""
        spec = self.spec
        return {"id": self.id, "path": self.path, "command": self.argv, "cwd": spec.cwd,
                "env": sorted(spec.env), "sandbox": spec.sandbox is not None,
                "max_connections": spec.max_concurrent, "idle_s": spec.idle, "description": spec.description}


@dataclass(frozen=True)
class HostConfig:
    """The agents by id, the default one's id (None: `/acp` serves nothing), the agentctl settings."""

    agents: dict[str, HostedAgent]
    default: str | None
    port: int = 9999
    auto_start: bool = False
    log_level: str = "INFO"
    source: str = "environment"

    @property
    def default_agent(self) -> HostedAgent | None:
        return None if self.default is None else self.agents[self.default]


def _id(spec: AgentSpec) -> str:
    return spec.name if spec.namespace == DEFAULT_NAMESPACE else spec.ref


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ.get(name, AGENTCTL_DEFAULTS[name]).strip().lower()
    if value in TRUE or value in FALSE:
        return value in TRUE
    raise ConfigError(f"{name}={value!r} is not a boolean: use true or false")


def _settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """AGENTCTL_PORT, AGENTCTL_AUTO_START and AGENTCTL_LOG_LEVEL (they apply with or without a CONFIG)."""
    port = environ.get("AGENTCTL_PORT", AGENTCTL_DEFAULTS["AGENTCTL_PORT"]).strip()
    if not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"AGENTCTL_PORT={port!r} is not a port: use a number from 0 to 65535")
    level = environ.get("AGENTCTL_LOG_LEVEL", AGENTCTL_DEFAULTS["AGENTCTL_LOG_LEVEL"]).strip().lower()
    if level not in LOG_LEVELS:
        raise ConfigError(f"AGENTCTL_LOG_LEVEL={level!r} is not a level: use one of {sorted(LOG_LEVELS)}")
    return {"port": int(port), "auto_start": _flag(environ, "AGENTCTL_AUTO_START"), "log_level": LOG_LEVELS[level]}


def parse(data: Any, environ: Mapping[str, str], source: str = "config") -> HostConfig:
    """The HostConfig of a parsed CONFIG document; ConfigError names what is wrong."""
    if not isinstance(data, dict):
        raise ConfigError(f'{source} must be a JSON object with "agents" (and "default")')
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown keys {unknown} (an agent host reads {sorted(TOP_KEYS)})")
    agents: dict[str, HostedAgent] = {}
    for spec in parse_agents(data).values():
        if spec.kind != "acp":
            raise ConfigError(f'agent {spec.ref!r}: an agent host serves ACP agents: give "acp", not "{spec.kind}"')
        agents[_id(spec)] = HostedAgent(_id(spec), spec)
    if not agents:
        raise ConfigError(f'{source} names no agent: add "agents": {{"NAME": {{"acp": {{"command": ...}}}}}}')
    default = data.get("default")
    if default is None:
        default = next(iter(agents)) if len(agents) == 1 else None
    elif not isinstance(default, str) or default.removeprefix(DEFAULT_NAMESPACE + "/") not in agents:
        raise ConfigError(f"{source}: default {default!r} is not one of the agents {sorted(agents)}")
    else:
        default = default.removeprefix(DEFAULT_NAMESPACE + "/")
    return HostConfig(agents, default, source=source, **_settings(environ))


def from_environment(environ: Mapping[str, str]) -> HostConfig:
    """The one agent AGENTCTL_AGENT_COMMAND names, as agent `default`."""
    line = environ.get("AGENTCTL_AGENT_COMMAND", AGENTCTL_DEFAULTS["AGENTCTL_AGENT_COMMAND"])
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise ConfigError(f"AGENTCTL_AGENT_COMMAND cannot be split into words: {exc}") from None
    if not argv:
        raise ConfigError("AGENTCTL_AGENT_COMMAND is empty: name the agent's command, e.g. 'auggie --acp'")
    data = {"agents": {"default": {"acp": {"command": argv[0], "args": argv[1:]}}}}
    return parse(data, environ, "AGENTCTL_AGENT_COMMAND")


def load(path: str | None, environ: Mapping[str, str]) -> HostConfig:
    """The CONFIG file's agents, else the environment's one agent."""
    if path is None:
        return from_environment(environ)
    return parse(load_document(path), environ, path)
