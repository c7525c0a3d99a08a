"""hosts.app: the agent host's one engine app — the gate, the ACP endpoints, agentctl's routes and the listings.

Paths: `/acp` (the default agent) and `/agents/<id>/acp` (each agent: hosts.config), both profiles: a GET with
`Upgrade: websocket` becomes a WebSocket (hosts.ws_acp), anything else is Streamable HTTP (hosts.http_acp);
the seed's agentctl routes (hosts.agentctl) on the default agent; `GET /health` (`{"status": "ok", ...}`),
`GET /api/v1/agents` (the configured agents with their connection counts, and the known ACP agents found on
this machine's PATH: acp.client.known, looked up on first use and kept for FOUND_TTL_S) and
`GET /api/v1/sessions` (every connection with its agent's pid, RSS and CPU seconds: hosts.usage).
Every request passes the gate first (httpd.gate.Policy): Host and Origin (a browser page of another origin is
refused 403), then `Authorization: Bearer` or an OAuth access token when the host has any (401); `/health`
and the OAuth metadata document (RFC 9728) need no token. Where each agent process starts is `place(agent)`:
its entry's `cwd`, else the host's directory; a connection bound to a workspace (`Acp-Workspace: <id>` or
`?workspace=<id>`: hosts.workspaces, its routes under `/api/v1/workspaces` in hosts.workspace_routes) starts
its agent in that worktree instead, and the host answers the agent's fs and terminal requests there
(hosts.confined). Rules: routing and the gate; the profiles, agentctl and the registry do the
rest; nothing imports this package but the CLI (and, later, the board).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp_agent_kit.auth.dpop import proofs_in
from mcp_agent_kit.auth.resource import Refusal
from mcp_agent_kit.hosts import http_acp, workspace_routes
from mcp_agent_kit.hosts.agentctl import Agentctl
from mcp_agent_kit.hosts.config import HostConfig, HostedAgent
from mcp_agent_kit.hosts.link import default_place
from mcp_agent_kit.hosts.registry import HostConnections
from mcp_agent_kit.hosts.replies import send_error, send_json
from mcp_agent_kit.hosts.workspaces import HostWorkspaces, WorkspaceRefused, default_dir
from mcp_agent_kit.hosts.ws_acp import AcpSocket
from mcp_agent_kit.httpd import Channel, Limits, Policy, Request, Server, WsHandler, WsLimits

__all__ = ["FOUND_TTL_S", "KEEPALIVE_S", "AgentHost"]

KEEPALIVE_S = 15.0
FOUND_TTL_S = 600.0
ACP_PATH, AGENTS_PREFIX = "/acp", "/agents/"
Route = Callable[[Request, Channel], bool]
# ACP's WebSocket: binary messages are ignored, not refused (the RFD); a client may send files inline (16 MiB)
ACP_LIMITS = WsLimits(max_frame=16 << 20, max_message=16 << 20, max_queued_bytes=16 << 20, text_only=False)


class _Gated(Exception):
    """The gate answered the request."""


class AgentHost:
    """The engine app of one agent host (see the module's doc); `bind` makes its server."""

    def __init__(self, config: HostConfig, policy: Policy, *, place: Callable[[HostedAgent], str] = default_place,
                 keepalive: float = KEEPALIVE_S, workspaces: HostWorkspaces | None = None) -> None:
        self.config, self.policy, self.place, self.keepalive = config, policy, place, keepalive
        self.workspaces = workspaces or HostWorkspaces(default_dir())
        self.registry = HostConnections()
        self.agentctl = Agentctl(self, config.default_agent)
        self.server: Server | None = None
        self.max_body = Limits().max_body
        self._found: tuple[float, list[dict[str, Any]]] | None = None
        self._found_lock = threading.Lock()
        self._routes: dict[str, tuple[str, Route]] = {
            "/api/v1/agents": ("GET", self._agents), "/api/v1/sessions": ("GET", self._sessions),
            **self.agentctl.routes}

    def bind(self, host: str, port: int, limits: Limits | None = None) -> Server:
        """Listen on host:port (OSError when it cannot), start the idle reaper and, if asked, the agentctl agent."""
        server = Server((host, port), self, limits)
        self.server, self.max_body = server, server.limits.max_body
        self.registry.start()
        if self.config.auto_start and self.config.default_agent is not None:
            self.agentctl.start()
        return server

    def close(self) -> None:
        """End every connection and the agentctl agent (before the server closes)."""
        self.registry.close()
        self.agentctl.stop()

    def no_default(self) -> str:
        paths = ", ".join(agent.path for agent in self.config.agents.values())
        return f'no default agent is served at /acp: use one of {paths} (or give the config a "default")'

    def hand_off(self, channel: Channel, run: Callable[[], bool]) -> bool:
        assert self.server is not None, "bind the host first"
        return self.server.hand_off(channel, run)

    # ---- dispatch ------------------------------------------------------------------------------------
    def __call__(self, request: Request, channel: Channel) -> bool:
        path = urlsplit(request.target).path
        try:
            if path == "/health":
                self.gate(request, channel, token=False)
                return self._health(request, channel)
            oauth = self.policy.oauth
            if oauth is not None and path in oauth.metadata_paths and request.method == "GET":
                self.gate(request, channel, token=False)
                return send_json(channel, request, 200, oauth.document, {"Access-Control-Allow-Origin": "*"})
            if path == ACP_PATH or (path.startswith(AGENTS_PREFIX) and path.endswith(ACP_PATH)):
                return self._acp(path, request, channel)
            if workspace_routes.serves(path):
                self.gate(request, channel)
                return workspace_routes.handle(self.workspaces, request, channel)
            route = self._routes.get(path)
            if route is None:
                return send_error(channel, request, 404, f"nothing is served at {path[:100]}: see GET /api/v1/agents")
            self.gate(request, channel)
            if request.method != route[0]:
                return send_error(channel, request, 405, f"{path} takes {route[0]}", {"Allow": route[0]})
            return route[1](request, channel)
        except _Gated:
            return False

    def gate(self, request: Request, channel: Channel, token: bool = True) -> str | None:
        """Host and Origin, then who asks (when `token`); a refusal is answered and raised (_Gated)."""
        headers = request.headers
        refused = self.policy.refusal(headers.get("host"), headers.get("origin"), "the agent host")
        if refused is not None:
            send_error(channel, request, 403, refused)
            raise _Gated
        if not token:
            return None
        try:
            return self.policy.authorize(headers.get("authorization"), request.method,
                                         urlsplit(request.target).path, proofs_in(headers.get("dpop")))
        except Refusal as refusal:
            send_error(channel, request, refusal.status, refusal.description, {"WWW-Authenticate": refusal.challenge})
            raise _Gated from None

    def _acp(self, path: str, request: Request, channel: Channel) -> bool:
        principal = self.gate(request, channel)
        agent: HostedAgent | None
        if path == ACP_PATH:
            agent = self.config.default_agent
        else:
            agent = self.config.agents.get(path[len(AGENTS_PREFIX):-len(ACP_PATH)])
            if agent is None:
                return send_error(channel, request, 404, f"no agent is served at {path[:100]}: see GET /api/v1/agents")
        workspace = request.headers.get("acp-workspace") or parse_qs(urlsplit(request.target).query).get(
            "workspace", [""])[-1]
        bound: str | None = None
        if workspace:
            try:
                bound = self.workspaces.get(workspace.strip()).path
            except WorkspaceRefused as exc:
                return send_error(channel, request, exc.status, str(exc))
        upgrade = (request.headers.get("upgrade") or "").lower()
        if "websocket" not in upgrade:
            return http_acp.handle(self, agent, request, channel, bound)
        if agent is None:
            return send_error(channel, request, 404, self.no_default())
        if not self.registry.reserve(agent):
            return send_error(channel, request, 503, f"agent {agent.id!r} has {agent.spec.max_concurrent} connections,"
                              " its limit (max_concurrent): try again later", {"Retry-After": "5"})
        socket = AcpSocket(self, agent, bound or self.place(agent), workspace=bound)
        self.upgrade(request, channel, socket, principal, {"Acp-Connection-Id": socket.id}, ACP_LIMITS)
        if channel.receiver is None:  # refused (not a valid upgrade, or the hub is full)
            self.registry.release(agent)
        else:
            self.registry.add(socket)
        return False

    def upgrade(self, request: Request, channel: Channel, handler: WsHandler, principal: str | None = None,
                headers: dict[str, str] | None = None, limits: WsLimits | None = None) -> bool:
        """Make this request a WebSocket driven by `handler` (the gate has passed)."""
        from mcp_agent_kit.httpd import ws_server  # the WebSocket hub, loaded by the first upgrade

        assert self.server is not None, "bind the host first"
        return ws_server.accept(self.server, request, channel, handler, principal=principal, headers=headers,
                                limits=limits)

    # ---- the listings ----------------------------------------------------------------------------------
    def _health(self, request: Request, channel: Channel) -> bool:
        from mcp_agent_kit.wire.implementation import VERSION

        return send_json(channel, request, 200, {"status": "ok", "version": VERSION,
                                                 "agents": len(self.config.agents),
                                                 "connections": self.registry.count(),
                                                 "workspaces": self.workspaces.count(),
                                                 "capacity": {agent.id: agent.spec.max_concurrent
                                                              for agent in self.config.agents.values()},
                                                 "running": {agent.id: self.registry.count(agent.id)
                                                             for agent in self.config.agents.values()},
                                                 "agentctl": self.agentctl.status()["status"]})

    def found(self) -> list[dict[str, Any]]:
        """The known ACP agents on this machine's PATH (acp.client.known), looked up at most every FOUND_TTL_S."""
        from mcp_agent_kit.acp.client.known import found_agents

        with self._found_lock:
            if self._found is None or time.monotonic() - self._found[0] > FOUND_TTL_S:
                self._found = (time.monotonic(), [row.as_json() for row in found_agents()])
            return self._found[1]

    def _agents(self, request: Request, channel: Channel) -> bool:
        agents = [{**agent.describe(), "connections": self.registry.count(agent.id)}
                  for agent in self.config.agents.values()]
        return send_json(channel, request, 200, {"default": self.config.default, "agents": agents,
                                                 "found": self.found()})

    def _sessions(self, request: Request, channel: Channel) -> bool:
        return send_json(channel, request, 200, {"connections": self.registry.listing(),
                                                 "agentctl": self.agentctl.status()})
