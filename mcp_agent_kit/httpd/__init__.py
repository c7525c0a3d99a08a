"""httpd: one HTTP/1.1 engine for every server of the kit (MCP Streamable HTTP, A2A, the gateway).

An event loop reads request heads and bodies (no thread waits for bytes), a bounded worker pool
runs handlers, and one gate decides Host, Origin and bearer tokens. Several apps may share one
socket, picked by path (routes, `Server.mount`). WebSocket (RFC 6455): `accept` upgrades a request
onto the server's hub (one selector thread for every socket), `ws_connect` is the blocking
client. Rules: it knows no MCP or A2A; it imports nothing else of the kit.
"""

from mcp_agent_kit.httpd.engine import Channel, Limits, Request, Server
from mcp_agent_kit.httpd.gate import Policy
from mcp_agent_kit.httpd.handler import Handler
from mcp_agent_kit.httpd.head import Headers
from mcp_agent_kit.httpd.routes import Routes
from mcp_agent_kit.httpd.websocket import upgrade_refusal
from mcp_agent_kit.httpd.ws_client import WsClient, WsClientError, WsTimeout
from mcp_agent_kit.httpd.ws_client import connect as ws_connect
from mcp_agent_kit.httpd.ws_server import WsConnection, WsHandler, WsLimits, accept

__all__ = [
    "Channel", "Handler", "Headers", "Limits", "Policy", "Request", "Routes", "Server", "WsClient",
    "WsClientError", "WsConnection", "WsHandler", "WsLimits", "WsTimeout", "accept", "upgrade_refusal",
    "ws_connect",
]
