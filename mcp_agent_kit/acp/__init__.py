"""acp: the Agent Client Protocol v1, both ends — a client that spawns and drives agents over stdio,
and a framework for writing an agent in plain Python.

Client side: client (AcpAgent: spawn, initialize, authenticate, sessions), session (prompt turns and
their TurnResult), events (typed `session/update` events), permissions (who answers
`session/request_permission`), files and terminals (the client's `fs/*` and `terminal/*` methods,
confined), errors. Agent side: agent (Agent, registered handlers, `run()` on stdio, `serve()` per client), agent_link
(one client connection's state), agent_params (params checks), agent_connection, agent_session
(session stores), turn (one `session/prompt` as the author sees it), updates (builders).
Both sit on connection (a bidirectional JSON-RPC peer over newline-delimited streams); cli is
`mcp-agent-kit acp probe|prompt|chat`. The client's public names load lazily from here (`from
mcp_agent_kit.acp import AcpAgent`), so importing the package costs nothing; an agent author imports
from acp.agent. Rules: may import `wire`, `logs`, `safefile`, `process` (every spawned agent goes
through its one child-process manager) and `cli_common` only; never `core`, `client`, `gateway` or
`a2a` (tests/test_layers.py checks it).
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "AcpAgent": "mcp_agent_kit.acp.client",
    "AgentInfo": "mcp_agent_kit.acp.client",
    "ClientOptions": "mcp_agent_kit.acp.client",
    "Timeouts": "mcp_agent_kit.acp.client",
    "Session": "mcp_agent_kit.acp.session",
    "TurnResult": "mcp_agent_kit.acp.session",
    "AllowAll": "mcp_agent_kit.acp.permissions",
    "AllowReads": "mcp_agent_kit.acp.permissions",
    "Ask": "mcp_agent_kit.acp.permissions",
    "DenyAll": "mcp_agent_kit.acp.permissions",
    "PermissionRequest": "mcp_agent_kit.acp.permissions",
    "AcpError": "mcp_agent_kit.acp.errors",
    "AgentCrashed": "mcp_agent_kit.acp.errors",
    "NotSupported": "mcp_agent_kit.acp.errors",
    "TurnTimeout": "mcp_agent_kit.acp.errors",
}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mcp_agent_kit.acp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
