"""hosts.registry: the connections an agent host serves now — bounded per agent, ended when idle.

Each connection (a WebSocket or a Streamable HTTP connection, one agent process each) is `reserve`d against
its agent's `max_concurrent` before its process starts, `add`ed under its id, and `remove`d once, when it
ends (which frees its place). A reaper thread ends every connection whose agent has passed no message either
way for the agent's `idle` seconds. `listing()` is what `/api/v1/sessions` shows. Rules: owns no socket and
no process; a connection ends itself (`end(why)`), the registry only asks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from mcp_agent_kit.hosts.config import HostedAgent
from mcp_agent_kit.hosts.link import AgentProcess
from mcp_agent_kit.httpd import Channel, Request, WsHandler, WsLimits

__all__ = ["HostApi", "HostConnections", "Hosted"]

REAP_TICK_S = 0.5
STOP_WAIT_S = 10.0  # per agent, when the host stops


class Hosted(Protocol):
    """One served connection, whatever its profile."""

    id: str
    agent: HostedAgent
    link: AgentProcess

    def end(self, why: str) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class HostApi(Protocol):
    """What the connections and agentctl use of their host (hosts.app.AgentHost)."""

    registry: HostConnections
    place: Callable[[HostedAgent], str]
    keepalive: float
    max_body: int

    def hand_off(self, channel: Channel, run: Callable[[], bool]) -> bool: ...

    def no_default(self) -> str: ...

    def upgrade(self, request: Request, channel: Channel, handler: WsHandler, principal: str | None = None,
                headers: dict[str, str] | None = None, limits: WsLimits | None = None) -> bool: ...


class HostConnections:
    """The live connections by id, their count per agent, and the idle reaper."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conns: dict[str, Hosted] = {}
        self._counts: dict[str, int] = {}
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None

    def start(self) -> None:
        self._reaper = threading.Thread(target=self._reap_loop, name="agent-host-reaper", daemon=True)
        self._reaper.start()

    def reserve(self, agent: HostedAgent) -> bool:
        """Take a place for one more connection to `agent`; False when it has max_concurrent already."""
        with self._lock:
            if self._stop.is_set() or self._counts.get(agent.id, 0) >= agent.spec.max_concurrent:
                return False
            self._counts[agent.id] = self._counts.get(agent.id, 0) + 1
            return True

    def release(self, agent: HostedAgent) -> None:
        """Give back a place that no connection took (its start failed)."""
        with self._lock:
            self._counts[agent.id] = max(0, self._counts.get(agent.id, 0) - 1)

    def add(self, conn: Hosted) -> None:
        with self._lock:
            self._conns[conn.id] = conn

    def remove(self, conn: Hosted) -> None:
        """The connection ended: forget it and free its place (once)."""
        with self._lock:
            if self._conns.pop(conn.id, None) is conn:
                self._counts[conn.agent.id] = max(0, self._counts.get(conn.agent.id, 0) - 1)

    def get(self, conn_id: str) -> Hosted | None:
        with self._lock:
            return self._conns.get(conn_id)

    def count(self, agent_id: str | None = None) -> int:
        with self._lock:
            return len(self._conns) if agent_id is None else self._counts.get(agent_id, 0)

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            conns = list(self._conns.values())
        return [conn.describe() for conn in conns]

    def close(self) -> None:
        """End every connection (the host is stopping) and wait, bounded, for their agents' process trees to end."""
        self._stop.set()
        with self._lock:
            conns = list(self._conns.values())
        for conn in conns:
            conn.end("the agent host is stopping")
        for conn in conns:
            conn.link.stopped(STOP_WAIT_S)

    def _reap_loop(self) -> None:
        while not self._stop.wait(REAP_TICK_S):
            now = time.monotonic()
            with self._lock:
                idle = [conn for conn in self._conns.values()
                        if now - conn.link.last_active > conn.agent.spec.idle]
            for conn in idle:
                conn.end(f"no message for {conn.agent.spec.idle:g} s (the agent's idle limit)")
