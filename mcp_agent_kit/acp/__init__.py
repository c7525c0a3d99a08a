"""acp: the Agent Client Protocol v1, both ends — a client that spawns and drives agents over stdio,
and a framework for writing an agent in plain Python.

Two subpackages on one role-neutral peer: acp.client (AcpAgent and its sessions, events, permission
policies, the client's `fs/*` and `terminal/*` methods, errors, the known agents, and the `mcp-agent-kit
acp` and `agents` commands) and acp.agent (Agent, Turn, the update builders, session stores). Both sit on
connection (the ACP connection on the one threaded line driver, line_peer). The client's public names
load lazily from here (`from mcp_agent_kit.acp import AcpAgent, AllowReads, events`), so importing the
package costs nothing; an agent author imports from acp.agent. Rules: may import `wire`, `logs`,
`safefile`, `process` (every spawned agent goes through its one child-process manager) and `cli_common`
only; never `core`, `client`, `gateway` or `a2a`; acp.agent never imports acp.client, nor acp.client
acp.agent (tests/test_layers.py checks both).
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "AcpAgent": "mcp_agent_kit.acp.client.client",
    "AgentInfo": "mcp_agent_kit.acp.client.client",
    "ClientOptions": "mcp_agent_kit.acp.client.client",
    "Timeouts": "mcp_agent_kit.acp.client.client",
    "Session": "mcp_agent_kit.acp.client.session",
    "TurnResult": "mcp_agent_kit.acp.client.session",
    "AllowAll": "mcp_agent_kit.acp.client.permissions",
    "AllowReads": "mcp_agent_kit.acp.client.permissions",
    "Ask": "mcp_agent_kit.acp.client.permissions",
    "DenyAll": "mcp_agent_kit.acp.client.permissions",
    "PermissionRequest": "mcp_agent_kit.acp.client.permissions",
    "AcpError": "mcp_agent_kit.acp.client.errors",
    "AgentCrashed": "mcp_agent_kit.acp.client.errors",
    "NotSupported": "mcp_agent_kit.acp.client.errors",
    "TurnTimeout": "mcp_agent_kit.acp.client.errors",
}
# Modules that load as attributes of the package (`from mcp_agent_kit.acp import events`, as docs/acp.md does).
_MODULES = {"events": "mcp_agent_kit.acp.client.events"}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _MODULES:
        value: Any = importlib.import_module(_MODULES[name])
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'mcp_agent_kit.acp' has no attribute {name!r}")
    globals()[name] = value
    return value
