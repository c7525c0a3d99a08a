"""hosts.ws_acp: ACP's WebSocket profile in front of one agent process per connection.

The app (hosts.app) takes a place for the agent, then upgrades the request (httpd.ws_server.accept: the 101
carries `Acp-Connection-Id`). `opened` starts the agent; each text message from the client is one JSON-RPC
message, written to the agent's stdin unchanged; binary messages are ignored (the RFD); text that is not
JSON is answered with a JSON-RPC parse error (-32700), a batch or a non-object with -32600. Every message the
agent writes goes back as one text message, unchanged (its `fs/*`, `terminal/*` and permission requests
reach the remote client like any other). The connection's end (close, a dropped socket, the idle reaper, the
host stopping) stops the agent's process tree; the agent's end closes the socket (1011, saying why). A
connection bound to a workspace (`workspace`: its path) has the host answer the agent's fs and terminal
requests there and advertise them in `initialize` (hosts.confined); everything else still passes unchanged.
Rules: the ACP wire passes unchanged; handler calls run on the hub's workers, never at once for one socket.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from mcp_agent_kit.hosts.config import HostedAgent
from mcp_agent_kit.hosts.confined import Confined
from mcp_agent_kit.hosts.link import AgentProcess, LinkError
from mcp_agent_kit.hosts.registry import HostApi
from mcp_agent_kit.httpd import WsConnection

__all__ = ["AcpSocket"]

REASON_BYTES = 120  # a close reason is at most 123 bytes


def _error(code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}},
                      separators=(",", ":"))


def _reason(text: str) -> str:
    return text.encode()[:REASON_BYTES].decode("utf-8", "ignore")


class AcpSocket:
    """One WebSocket connection and its agent process (an httpd WsHandler)."""

    profile = "websocket"

    def __init__(self, host: HostApi, agent: HostedAgent, cwd: str, workspace: str | None = None) -> None:
        self.host, self.agent = host, agent
        self.id = uuid.uuid4().hex
        self.link = AgentProcess(agent, cwd=cwd, on_message=self._from_agent, on_end=self._agent_ended,
                              label=f"acp-ws-{self.id[:8]}")
        self.confined = None if workspace is None else Confined(workspace, agent, self.link.send)
        self.conn: WsConnection | None = None
        self._lock = threading.Lock()
        self._closing = False

    # ---- WsHandler -----------------------------------------------------------------------------------
    def opened(self, conn: WsConnection) -> None:
        with self._lock:
            self.conn = conn
        try:
            self.link.start()
        except LinkError as exc:
            conn.close(1011, _reason(str(exc)))

    def received(self, conn: WsConnection, message: str | bytes) -> None:
        if isinstance(message, bytes):
            return  # the RFD: binary frames are ignored
        text = message.strip()
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            conn.send(_error(-32700, f"not JSON: {exc}"))
            return
        if not isinstance(parsed, dict):
            conn.send(_error(-32600, "send one JSON-RPC message (an object) per WebSocket message; no batches"))
            return
        advertised = None if self.confined is None else self.confined.initialize(parsed)
        if advertised is not None:
            self.link.send(advertised)
        else:
            self.link.send(parsed, text)

    def closed(self, conn: WsConnection, code: int, reason: str) -> None:
        with self._lock:
            self._closing = True
        self.link.stop()
        if self.confined is not None:
            self.confined.close()
        self.host.registry.remove(self)

    # ---- the agent's side --------------------------------------------------------------------------
    def _from_agent(self, text: str, message: dict[str, Any]) -> None:
        if self.confined is not None and self.confined.intercept(message):
            return
        conn = self.conn
        if conn is not None:
            conn.send(text)

    def _agent_ended(self, why: str) -> None:
        with self._lock:
            closing, conn = self._closing, self.conn
        if conn is not None and not closing:
            conn.close(1011, _reason(why))

    # ---- Hosted ----------------------------------------------------------------------------------------
    def end(self, why: str) -> None:
        """Close the socket (1001, going away); `closed` then stops the agent."""
        with self._lock:
            conn = self.conn
        if conn is None:
            self.link.stop()
            if self.confined is not None:
                self.confined.close()
            self.host.registry.remove(self)
        else:
            conn.close(1001, _reason(why))

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "agent": self.agent.id, "profile": self.profile, **self.link.usage()}
