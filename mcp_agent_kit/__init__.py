"""mcp-agent-kit: MCP 2026-07-28 (and handshake-era) servers with the standard library only.

The public API is re-exported here lazily, so `import mcp_agent_kit` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_agent_kit.wire import implementation as _implementation

__version__ = _implementation.VERSION  # the one source is wire/implementation.py

_EXPORTS = {
    "Server": "mcp_agent_kit.server",
    "Client": "mcp_agent_kit.client",
    "Context": "mcp_agent_kit.core.context",
    "Elicited": "mcp_agent_kit.core.elicit_types",
    "TestClient": "mcp_agent_kit.testing",
    "ToolResult": "mcp_agent_kit.core.content",
    "ToolError": "mcp_agent_kit.core.content",
    "ResourceNotFound": "mcp_agent_kit.core.registry",
    "RpcError": "mcp_agent_kit.wire.jsonrpc",
    "SkillError": "mcp_agent_kit.wire.skills",
    "SkillRejected": "mcp_agent_kit.core.skill_tree",
    "content": "mcp_agent_kit.core.content",
    "start_task": "mcp_agent_kit.core.tasks",
    "task_tool": "mcp_agent_kit.core.tasks",
}

__all__ = [
    "Client",
    "Context",
    "Elicited",
    "ResourceNotFound",
    "RpcError",
    "Server",
    "SkillError",
    "SkillRejected",
    "TestClient",
    "ToolError",
    "ToolResult",
    "content",
    "start_task",
    "task_tool",
]

if TYPE_CHECKING:
    from mcp_agent_kit.client import Client
    from mcp_agent_kit.core import content
    from mcp_agent_kit.core.content import ToolError, ToolResult
    from mcp_agent_kit.core.context import Context
    from mcp_agent_kit.core.elicit_types import Elicited
    from mcp_agent_kit.core.registry import ResourceNotFound
    from mcp_agent_kit.core.skill_tree import SkillRejected
    from mcp_agent_kit.core.tasks import start_task, task_tool
    from mcp_agent_kit.server import Server
    from mcp_agent_kit.testing import TestClient
    from mcp_agent_kit.wire.jsonrpc import RpcError
    from mcp_agent_kit.wire.skills import SkillError


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'mcp_agent_kit' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(module_name)
    value = module if name == "content" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API, for the REPL and IDEs (the names load lazily, so they are not globals yet)."""
    return sorted({*globals(), *__all__})
