"""client: a dual-era MCP client, namespace merging across servers, and an aggregating gateway.

Rules: reuses wire/ (and core.schema where it checks what servers send); never imports the
server dispatcher (core.dispatcher, core.methods). The gateway alone builds a Server.
"""

from __future__ import annotations

from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.client import Client, Unavailable, forget_verdicts
from mcp_agent_kit.client.inputs import ClientError
from mcp_agent_kit.client.probe import Probe, Verdict

__all__ = ["Client", "ClientError", "PeerError", "Probe", "Unavailable", "Verdict", "forget_verdicts"]
