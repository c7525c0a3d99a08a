"""acp.agent: write an ACP v1 agent in plain Python — everything an author needs, importable from here.

`from mcp_agent_kit.acp.agent import Agent, Turn, updates`. The modules: agent (the `Agent` object:
registered handlers, `run()` on stdio, `serve()` per client), link (one client connection's state),
params (the params checks), connection (the agent's strict end of the pipe), session (sessions and their
stores), turn (one `session/prompt` as the author sees it), updates (the `session/update` builders).
Rules: the agent side of ACP; imports `wire`, `logs`, `safefile` and acp.connection, never acp.client
(tests/test_layers.py checks it).
"""

from __future__ import annotations

from mcp_agent_kit.acp.agent import updates
from mcp_agent_kit.acp.agent.agent import Agent, ConfigOption
from mcp_agent_kit.acp.agent.session import AgentSession, AgentSessionStore, JsonSessionStore, MemorySessionStore
from mcp_agent_kit.acp.agent.turn import (
    Cancelled,
    ClientCapabilityError,
    ClientRequestError,
    Permission,
    ToolCall,
    Turn,
)
from mcp_agent_kit.wire.jsonrpc import RpcError

__all__ = ["Agent", "AgentSession", "AgentSessionStore", "Cancelled", "ClientCapabilityError", "ClientRequestError",
           "ConfigOption", "JsonSessionStore", "MemorySessionStore", "MemoryStore", "Permission", "RpcError", "Session",
           "ToolCall", "Turn", "updates"]
# The documented names, kept importable; the classes are named AgentSession and MemorySessionStore
# (acp.Session is the client's session, store.memory.MemoryStore the records store).
Session = AgentSession
MemoryStore = MemorySessionStore
