"""client: a dual-era MCP client, its channels, and namespace merging across servers.

Rules: imports wire/ and its own modules only (never core/, the server, transports or the
package root); tests/test_layers.py enforces it. What builds a server from client parts (the
gateway) and the command-line front doors live above, in mcp_agent_kit.gateway.
"""

from __future__ import annotations

from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.client import Client, Unavailable, forget_verdicts
from mcp_agent_kit.client.inputs import ClientError
from mcp_agent_kit.client.probe import Probe, Verdict

__all__ = ["Client", "ClientError", "PeerError", "Probe", "Unavailable", "Verdict", "forget_verdicts"]
