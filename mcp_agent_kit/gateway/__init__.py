"""gateway: many MCP servers served as one, built from client/ parts on a Server, plus agents as tools.

The layer above client/ and the server (DESIGN.md): it may import client/, server, core/, wire/,
store/, safefile, cli_common, the transports, and the clients of a2a/ and acp/ (tests/test_layers.py
holds the list); nothing below imports it. Modules: config (the mcpServers file), backend (one
server behind us), relay (a backend's questions to our caller), merged (the merged namespace as a
Server), cli (the `probe` and `gateway` commands), auth_cli (`auth login|status|logout`). Agents as
tools: agents_config (the `agents` section), agent_backend (the AgentBackend protocol an agent kind
implements, and its events), a2a_backend (an A2A v1.0 agent, through a2a.client), acp_backend (an
ACP v1 agent process, through acp), agent_questions (pauses as elicitation forms), agent_store
(sessions, turns and checkpoints on a store.Store; agent_records their record shapes, agent_store_v0
the migration of older session files), agent_turns (running turns, per-agent queues, sealed task
ids), agent_service (their one owner) and agent_tools (the MCP tools and their tasks). The names
below load lazily, so `mcp-agent-kit probe` (which lives in gateway.cli) never imports the server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Backend": "mcp_agent_kit.gateway.backend",
    "ConfigError": "mcp_agent_kit.gateway.config",
    "load_config": "mcp_agent_kit.gateway.config",
    "parse_config": "mcp_agent_kit.gateway.config",
    "Gateway": "mcp_agent_kit.gateway.merged",
    "GatewayServer": "mcp_agent_kit.gateway.merged",
}

__all__ = ["Backend", "ConfigError", "Gateway", "GatewayServer", "load_config", "parse_config"]

if TYPE_CHECKING:
    from mcp_agent_kit.gateway.backend import Backend
    from mcp_agent_kit.gateway.config import ConfigError, load_config, parse_config
    from mcp_agent_kit.gateway.merged import Gateway, GatewayServer


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mcp_agent_kit.gateway' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
