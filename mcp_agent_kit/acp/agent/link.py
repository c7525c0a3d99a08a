"""acp.agent.link: one client's connection to an ACP `Agent` — the state that belongs to that client alone.

An Agent (acp.agent) keeps what all its clients share: the registered handlers, config options, the
session store and which sessions have a turn running. Everything else is per connection and lives in
an AgentLink, made afresh for each connection the agent serves: the connection itself, the client's
capabilities and info from `initialize`, the initialized flag, the sessions open on this connection,
its running turns and the cancel flags of prompts read but not yet started. A turn speaks only
through its own link's connection, so its updates and requests reach the client that sent the prompt
and no other; `session/cancel` (and the cancel at shutdown) reaches only the turns of its own link.
While a handler of a link runs, `current()` names that link on the handler's thread (acp.agent sends
out-of-turn updates there).
Rules: bookkeeping only (the protocol's handlers live in acp.agent); imports `wire`, `logs` and acp
siblings only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from mcp_agent_kit.acp.agent.connection import AgentConnection
from mcp_agent_kit.acp.agent.turn import Turn
from mcp_agent_kit.wire import acp as wire

Handler = Callable[[Any], Any]
_CURRENT: ContextVar[AgentLink | None] = ContextVar("mcp_agent_kit.acp.agent.link", default=None)


def current() -> AgentLink | None:
    """The link whose request is being handled on this thread (None elsewhere)."""
    return _CURRENT.get()


class AgentLink:
    """One client connection's state; `connection` is set once the agent made it (acp.agent.Agent.connect)."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.connection: AgentConnection | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] | None = None
        self.initialized = False
        self.open: set[str] = set()  # sessions opened on this connection (session/new, load, fork)
        self.turns: dict[str, Turn] = {}  # session id -> the turn this connection's prompt runs
        self.arriving: dict[str, threading.Event] = {}  # prompts read, not yet started: their cancel flag
        self.lock = threading.Lock()
        self._log = log

    def bind(self, handler: Handler) -> Handler:
        """`handler` with this link as `current()` while it runs."""

        def bound(params: Any) -> Any:
            token = _CURRENT.set(self)
            try:
                return handler(params)
            finally:
                _CURRENT.reset(token)

        return bound

    # ---- turns and cancels ------------------------------------------------------------------
    def arrived(self, method: str, params: Any) -> None:
        """On the reader thread: a prompt arrived; a cancel behind it must reach it (see cancel)."""
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if method == wire.SESSION_PROMPT and isinstance(session_id, str):
            with self.lock:
                self.arriving.setdefault(session_id, threading.Event())

    def take_arrival(self, session_id: Any) -> threading.Event | None:
        """The cancel flag of a prompt that arrived for `session_id` (dropped: its turn holds it now)."""
        with self.lock:
            return self.arriving.pop(session_id, None) if isinstance(session_id, str) else None

    def cancel(self, params: Any) -> None:
        """`session/cancel`: cancel this connection's turn in the session, or the prompt on its way to it."""
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        with self.lock:
            turn = self.turns.get(session_id) if isinstance(session_id, str) else None
            early = self.arriving.get(session_id) if isinstance(session_id, str) else None
        if turn is not None:
            turn.cancel()
        elif early is not None:
            early.set()  # the prompt is on its way to its thread: it starts cancelled
        else:
            self._log(f"session/cancel for {session_id!r}, which has no running prompt here: ignored")

    def cancel_all(self) -> None:
        with self.lock:
            turns = list(self.turns.values())
        for turn in turns:
            turn.cancel()

    def notify_update(self, session_id: str, update: dict[str, Any]) -> None:
        """A `session/update` to this client; a connection already gone drops it (logged)."""
        if self.connection is None:
            return
        try:
            self.connection.notify(wire.SESSION_UPDATE, {"sessionId": session_id, "update": update})
        except Exception as exc:
            self._log(f"session/update for {session_id} not sent: {type(exc).__name__}: {exc}")

    # ---- the end of the connection ----------------------------------------------------------
    def finish(self, shutdown_timeout: float) -> None:
        """Wait until the client closed its end, give the requests still being handled
        `shutdown_timeout` s to be answered, then cancel this link's turns and give them a moment."""
        connection = self.connection
        if connection is None:
            return
        while not connection.join(3600.0):
            pass
        if not connection.wait_idle(shutdown_timeout):
            self.cancel_all()
            connection.wait_idle(1.0)
