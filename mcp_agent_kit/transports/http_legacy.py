"""http_legacy: handshake-era (2024-11-05 … 2025-11-25) sessions of Streamable HTTP.

`initialize` mints an unguessable `Mcp-Session-Id`; later requests must echo it (missing →
400, unknown or expired → 404). A session holds the era Connection, the server→client
requests waiting for answers, the standalone GET stream for list-changed and resource-updated
notifications, and the log of its resumable tool-call streams (sse_replay; the standalone
stream is not resumable). Rules: no socket code beyond the Exchange it is handed; a session
belongs to the principal that made it.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from concurrent.futures import Future
from typing import Any

from mcp_agent_kit.core.dispatcher import Connection, Dispatcher
from mcp_agent_kit.transports.sse import Exchange
from mcp_agent_kit.transports.sse_replay import EventLog
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, RpcError


class Session:
    """One legacy client session."""

    def __init__(self, id_: str, principal: str | None) -> None:
        self.id = id_
        self.conn = Connection(era=mcp.LEGACY, principal=principal, can_request=True)
        self.last_used = time.monotonic()
        self.closed = threading.Event()
        self.stream: Exchange | None = None
        self.pending: dict[Any, Future[dict[str, Any]]] = {}
        self.lock = threading.Lock()
        self.stream_lock = threading.Lock()  # held while the GET stream opens, so no push is lost
        self.events = EventLog()
        self._ids = itertools.count(1)

    def next_request_id(self) -> str:
        return f"srv-{next(self._ids)}"

    def resolve(self, message: dict[str, Any]) -> None:
        """A client's JSON-RPC response to one of our requests."""
        with self.lock:
            future = self.pending.get(message.get("id"))
        if future is None or future.done():
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            future.set_exception(RpcError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "error"))))
        else:
            result = message.get("result")
            future.set_result(result if isinstance(result, dict) else {})

    def push(self, message: dict[str, Any]) -> bool:
        """Send on the standalone GET stream, if one is open."""
        with self.stream_lock:
            stream = self.stream
        if stream is None or stream.broken:
            return False
        stream.notify(message)
        return not stream.broken


class Sessions:
    """All legacy sessions of one HTTP server."""

    def __init__(self, dispatcher: Dispatcher, *, idle_ttl: float = 3600.0, max_sessions: int = 10_000,
                 request_timeout: float = 300.0) -> None:
        self.dispatcher = dispatcher
        self.idle_ttl = idle_ttl
        self.max_sessions = max_sessions
        self.request_timeout = request_timeout
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._unsubscribe = dispatcher.registry.on_change(self._registry_changed)

    def create(self, principal: str | None) -> Session:
        self._expire()
        session = Session(secrets.token_urlsafe(24), principal)
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                oldest = min(self._sessions.values(), key=lambda s: s.last_used)
                self._drop(oldest.id)
            self._sessions[session.id] = session
        return session

    def get(self, id_: str, principal: str | None) -> Session | None:
        with self._lock:
            session = self._sessions.get(id_)
        if session is None or session.conn.principal != principal:
            return None
        if time.monotonic() - session.last_used > self.idle_ttl:
            self.delete(id_)
            return None
        session.last_used = time.monotonic()
        return session

    def delete(self, id_: str) -> bool:
        with self._lock:
            return self._drop(id_)

    def close(self) -> None:
        self._unsubscribe()
        with self._lock:
            for id_ in list(self._sessions):
                self._drop(id_)

    def _drop(self, id_: str) -> bool:
        session = self._sessions.pop(id_, None)
        if session is None:
            return False
        session.closed.set()
        self.dispatcher.end_connection(session.conn)  # its 2025-11-25 tasks are cancelled and dropped
        for future in list(session.pending.values()):
            if not future.done():
                future.set_exception(RpcError(INTERNAL_ERROR, "the session was closed"))
        return True

    def _expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            for id_, session in list(self._sessions.items()):
                if now - session.last_used > self.idle_ttl:
                    self._drop(id_)

    # ---- server→client traffic -------------------------------------------------------------------
    def request(self, session: Session, via: Exchange, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request on the POST's stream (or the GET stream) and wait for the answer."""
        id_ = session.next_request_id()
        future: Future[dict[str, Any]] = Future()
        with session.lock:
            session.pending[id_] = future
        try:
            message = jsonrpc.request(id_, method, params)
            if via.can_stream and not via.broken and not via.sent:
                via.notify(message)
            elif not session.push(message):
                raise RpcError(INTERNAL_ERROR, "no stream is open to send a request to the client")
            return future.result(timeout=self.request_timeout)
        except TimeoutError as exc:
            raise RpcError(INTERNAL_ERROR, f"the client did not answer {method} in time") from exc
        finally:
            with session.lock:
                session.pending.pop(id_, None)

    def _registry_changed(self, kind: str, uri: str | None) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            if not session.conn.initialized:
                continue
            if uri is None and kind in mcp.LIST_CHANGED:
                session.push(jsonrpc.notification(mcp.LIST_CHANGED[kind]))
            elif uri is not None and uri in session.conn.subscriptions:
                session.push(jsonrpc.notification("notifications/resources/updated", {"uri": uri}))
