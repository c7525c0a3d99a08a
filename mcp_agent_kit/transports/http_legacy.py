"""http_legacy: handshake-era (2024-11-05 … 2025-11-25) sessions of Streamable HTTP.

`initialize` mints an unguessable `Mcp-Session-Id`; later requests must echo it (missing →
400, unknown or expired → 404). A session holds the era Connection, the server→client
requests waiting for answers, the standalone GET stream for list-changed and resource-updated
notifications, and the log of its resumable tool-call streams (sse_replay; the standalone
stream is not resumable). With a store (`Server.use_store`), each session's record (kind
`legacy_sessions`: negotiated version, client info and capabilities, principal, expiry) is kept
there too, so any replica accepts the session id for POSTs; its server→client traffic (the GET
stream, requests a tool sends the client) stays on the replica holding the stream. Rules: no
socket code beyond the Exchange it is handed; a session belongs to the principal that made it.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import threading
import time
from concurrent.futures import Future
from typing import Any

from mcp_agent_kit.core.dispatcher import Connection, Dispatcher
from mcp_agent_kit.logs import logger
from mcp_agent_kit.store.base import Record, StoreError
from mcp_agent_kit.transports.sse import Exchange
from mcp_agent_kit.transports.sse_replay import EventLog
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, RpcError

KIND = "legacy_sessions"
RECHECK_S = 1.0  # how stale a replica's copy of a shared session may be (a DELETE elsewhere)


def _owner(principal: str | None) -> str:
    return "-" if principal is None else f"={principal}"


class LegacySession:
    """One legacy client session."""

    def __init__(self, id_: str, principal: str | None) -> None:
        self.id = id_
        self.conn = Connection(era=mcp.LEGACY, principal=principal, can_request=True)
        self.conn.key = id_  # its 2025-11-25 tasks are the session's on every replica (core.task_mirror)
        self.last_used = self.checked = time.monotonic()
        self.saved = False  # its record is in the store (written here, or read from there)
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
        self._sessions: dict[str, LegacySession] = {}
        self._lock = threading.Lock()
        self.store = dispatcher.store
        self._unsubscribe = dispatcher.registry.on_change(self._registry_changed)

    def create(self, principal: str | None) -> LegacySession:
        self._expire()
        session = LegacySession(secrets.token_urlsafe(24), principal)
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                oldest = min(self._sessions.values(), key=lambda s: s.last_used)
                self._drop(oldest.id)
            self._sessions[session.id] = session
        return session

    def get(self, id_: str, principal: str | None) -> LegacySession | None:
        with self._lock:
            session = self._sessions.get(id_)
        if self.store is not None and (session is None or time.monotonic() - session.checked > RECHECK_S):
            session = self._shared(id_, session)
        if session is None or session.conn.principal != principal:
            return None
        if time.monotonic() - session.last_used > self.idle_ttl and not self._alive_elsewhere(session):
            self.delete(id_)
            return None
        session.last_used = time.monotonic()
        return session

    def delete(self, id_: str) -> bool:
        """End the session here and, with a store, on every replica (its tasks there too)."""
        with self._lock:
            session = self._sessions.get(id_)
            dropped = self._drop(id_)
        if self.store is not None:
            try:
                self.store.delete(KIND, id_)
                if session is not None:
                    self.dispatcher.end_shared(session.conn)
            except (StoreError, RpcError) as exc:
                logger().warning("session %s: could not end it in the store: %s", id_[:8], exc)
        return dropped

    # ---- shared with other replicas ----------------------------------------------------------------
    def save(self, session: LegacySession) -> None:
        """Write the session's record (after initialize and notifications/initialized)."""
        if self.store is None:
            return
        conn = session.conn
        body = {"version": conn.version, "clientInfo": conn.client_info, "capabilities": conn.client_capabilities,
                "initialized": conn.initialized, "principal": conn.principal}
        record = Record(KIND, session.id, body, owner=_owner(conn.principal), state="open",
                        order=f"{time.time():017.6f}", expires=time.time() + self.idle_ttl)
        try:
            if not self.store.insert(record):
                stored = self.store.get(KIND, session.id)
                if stored is not None:
                    self.store.update(record._replace(order=stored.order))
        except StoreError as exc:  # the session still works here; other replicas will not know it
            logger().warning("session %s: could not write it to the store: %s", session.id[:8], exc)
            return
        session.saved = True
        session.checked = time.monotonic()

    def _shared(self, id_: str, local: LegacySession | None) -> LegacySession | None:
        """The session as the store has it: a local copy made (or refreshed), or dropped when gone."""
        assert self.store is not None
        try:
            stored = self.store.get(KIND, id_)
        except StoreError:
            return local  # the store is down: what this replica knows still holds
        if stored is None or (stored.expires is not None and stored.expires < time.time()):
            if local is not None and local.saved:  # deleted or expired elsewhere
                with self._lock:
                    self._drop(id_)
                return None
            return local  # still in its initialize round here (or no store was given then)
        if local is None:
            body = stored.body
            local = LegacySession(id_, body.get("principal"))
            conn = local.conn
            conn.version = str(body.get("version") or conn.version)
            conn.client_info = body.get("clientInfo")
            conn.client_capabilities = body.get("capabilities") or {}
            local.saved = True
            with self._lock:
                local = self._sessions.setdefault(id_, local)
        local.conn.initialized = local.conn.initialized or bool(stored.body.get("initialized"))
        if stored.expires is not None and stored.expires - time.time() < self.idle_ttl * 0.9:
            self._refresh(stored)
        local.checked = time.monotonic()
        return local

    def _refresh(self, stored: Record) -> None:
        assert self.store is not None
        with contextlib.suppress(StoreError):  # the next request tries again
            self.store.update(stored._replace(expires=time.time() + self.idle_ttl), expect_version=stored.version)

    def _alive_elsewhere(self, session: LegacySession) -> bool:
        """Idle here, but used through another replica lately (its shared record is unexpired)?"""
        if self.store is None:
            return False
        try:
            stored = self.store.get(KIND, session.id)
        except StoreError:
            return False
        return stored is not None and stored.expires is not None and stored.expires > time.time()

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
            idle = [session for session in self._sessions.values() if now - session.last_used > self.idle_ttl]
        for session in idle:
            if self._alive_elsewhere(session):
                session.last_used = now
            else:
                with self._lock:
                    self._drop(session.id)

    # ---- server→client traffic -------------------------------------------------------------------
    def request(self, session: LegacySession, via: Exchange, method: str, params: dict[str, Any]) -> dict[str, Any]:
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
