"""httpd: one HTTP/1.1 engine for every server of the kit (MCP Streamable HTTP, A2A, the gateway).

An event loop reads request heads and bodies (no thread waits for bytes), a bounded worker pool
runs handlers, and one gate decides Host, Origin and bearer tokens. Several apps may share one
socket, picked by path (routes, `Server.mount`). Rules: it knows no MCP or A2A;
it imports nothing else of the kit.
"""

from mcp_agent_kit.httpd.engine import Channel, Limits, Request, Server
from mcp_agent_kit.httpd.gate import Policy
from mcp_agent_kit.httpd.handler import Handler
from mcp_agent_kit.httpd.head import Headers
from mcp_agent_kit.httpd.routes import Routes

__all__ = ["Channel", "Handler", "Headers", "Limits", "Policy", "Request", "Routes", "Server"]
