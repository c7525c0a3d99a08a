"""acp: the Agent Client Protocol v1 — a client that spawns and drives coding agents over stdio.

The client's public names load lazily from here (`from mcp_agent_kit.acp import AcpAgent`), so
importing the package costs nothing. Rules: may import `wire`, `safefile`, `cli_common` and `logs`
only; never `core`, `client`, `gateway` or `a2a` (tests/test_layers.py checks it).
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
