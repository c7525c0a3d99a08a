"""board.live_http: the live API on the board's HTTP server — `/ws` (the WebSocket envelope) and `/events` (SSE).

`LiveHttp(board, policy)` is one engine app for both paths (`mount(server)` puts it on the board's socket,
beside `/mcp` and the A2A face). Both pass the same gate first: Host and Origin (httpd.gate.Policy: a
browser on another origin is refused 403), then who is asking: no authentication configured → principal
None (every task); else `Authorization: Bearer` (programs), or the page's session cookie when a `cookie`
check is given (then every WebSocket request must carry the page's CSRF token: board.live); neither → 401.

`GET /events?task=ID&after=N` streams the task's events after N as Server-Sent Events, resumable:
`Last-Event-ID` overrides `after`. Each event is `id: <seq>`, `event: <action>`, `data: <payload JSON>`
(board.live_events.notification: the WebSocket notifications' actions and payloads), a `: keep-alive`
comment after KEEPALIVE_S of quiet; the stream ends after the task's final state (done, discarded). It runs
on one of the engine's stream threads (httpd.engine.Server.hand_off), woken by one board listener.
`GET /ws` upgrades to a WebSocket (httpd.ws_server.accept) driven by a board.live.LiveSocket.
Rules: HTTP framing and the gate only; the envelope is board.live's, the events board.live_events'.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp_agent_kit.auth.dpop import proofs_in
from mcp_agent_kit.auth.resource import Refusal
from mcp_agent_kit.board.errors import BoardError, TaskNotFound
from mcp_agent_kit.board.live import LiveSocket
from mcp_agent_kit.board.live_events import PAGE, notification
from mcp_agent_kit.board.states import FINAL
from mcp_agent_kit.httpd import Channel, Policy, Request, Server

__all__ = ["EVENTS_PATH", "KEEPALIVE_S", "WS_PATH", "LiveHttp", "Signed", "mount_live"]

EVENTS_PATH, WS_PATH = "/events", "/ws"
KEEPALIVE_S = 15.0


@dataclass(frozen=True)
class Signed:
    """A request signed in with the page's session cookie: its principal and the check of its CSRF token."""

    principal: str
    csrf_check: Callable[[str], bool]


CookieCheck = Callable[[Request], "Signed | None"]


class _Answered(Exception):
    """The request was refused; the reply is written."""


def reply(channel: Channel, status: int, message: str, headers: dict[str, str] | None = None) -> bool:
    """A plain-text answer that closes the connection; False (the engine's 'no further request')."""
    body = (message + "\n").encode()
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "Content-Type: text/plain; charset=utf-8",
             f"Content-Length: {len(body)}", "Cache-Control: no-store", "Connection: close",
             *(f"{name}: {value}" for name, value in (headers or {}).items())]
    channel.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    return False


class LiveHttp:
    """The engine app of `/ws` and `/events` (see the module's doc)."""

    def __init__(self, board: Any, policy: Policy, *, cookie: CookieCheck | None = None,
                 keepalive: float = KEEPALIVE_S) -> None:
        self.board, self.policy, self.cookie, self.keepalive = board, policy, cookie, keepalive
        self.server: Server | None = None
        self._streams: set[_Stream] = set()
        self._lock = threading.Lock()
        self._closing = False
        self._routes: dict[str, Callable[[Request, Channel], bool]] = {EVENTS_PATH: self._events, WS_PATH: self._ws}

    def mount(self, server: Server) -> None:
        """Serve `/ws` and `/events` on `server`'s socket (its stream threads run the SSE streams)."""
        self.server = server
        server.mount(self, paths=tuple(self._routes))

    def close(self) -> None:
        """End every SSE stream (before the server drains its stream threads)."""
        with self._lock:
            self._closing = True
            streams = list(self._streams)
        for stream in streams:
            stream.woke.set()

    def __call__(self, request: Request, channel: Channel) -> bool:
        route = self._routes.get(urlsplit(request.target).path)
        if route is None:
            return reply(channel, 404, "not found")
        if request.method != "GET":
            return reply(channel, 405, f"{request.method} is not served here: use GET", {"Allow": "GET"})
        try:
            return route(request, channel)
        except _Answered:
            return False

    # ---- the gate --------------------------------------------------------------------------------------
    def gate(self, request: Request, channel: Channel) -> tuple[str | None, Signed | None]:
        """Who asks: (principal, the cookie sign-in or None); a refusal is answered (_Answered)."""
        headers = request.headers
        refused = self.policy.refusal(headers.get("host"), headers.get("origin"), "the board")
        if refused is not None:
            reply(channel, 403, refused)
            raise _Answered
        authorization = headers.get("authorization")
        if self.policy.auth_required and not authorization and self.cookie is not None:
            signed = self.cookie(request)
            if signed is not None:
                return signed.principal, signed
        try:
            path = urlsplit(request.target).path
            return self.policy.authorize(authorization, request.method, path, proofs_in(headers.get("dpop"))), None
        except Refusal as refusal:
            reply(channel, refusal.status, refusal.description, {"WWW-Authenticate": refusal.challenge})
            raise _Answered from None

    def visible(self, task_id: str, principal: str | None) -> dict[str, Any]:
        task: dict[str, Any] = self.board.get_task(task_id)
        if principal is not None and task.get("owner") != principal:
            raise TaskNotFound(task_id)
        return task

    # ---- /ws ---------------------------------------------------------------------------------------------
    def _ws(self, request: Request, channel: Channel) -> bool:
        principal, signed = self.gate(request, channel)
        from mcp_agent_kit.httpd import ws_server  # the WebSocket hub, loaded by the first /ws request

        handler = LiveSocket(self.board, cookie_auth=signed is not None,
                             csrf_check=None if signed is None else signed.csrf_check)
        assert self.server is not None, "mount the app on a server first"
        return ws_server.accept(self.server, request, channel, handler, principal=principal)  # 400/426/503 too

    # ---- /events -----------------------------------------------------------------------------------------
    def _events(self, request: Request, channel: Channel) -> bool:
        principal, _ = self.gate(request, channel)
        query = parse_qs(urlsplit(request.target).query)
        task_id = (query.get("task") or [""])[0]
        after_text = request.headers.get("last-event-id") or (query.get("after") or ["0"])[0]
        if not task_id:
            return reply(channel, 400, "name the task: /events?task=ID&after=N")
        if not after_text.strip().isdigit():
            return reply(channel, 400, f"after (or Last-Event-ID) must be a sequence number, not {after_text[:50]!r}")
        after = int(after_text)
        try:
            self.visible(task_id, principal)
            at = self.board.task_events(task_id, after - 1, 1)["events"] if after else []
        except BoardError as exc:
            return reply(channel, 404 if isinstance(exc, TaskNotFound) else 400, str(exc))
        if after and [event["seq"] for event in at] != [after]:
            return reply(channel, 400, f"after {after} is past the last event of task {task_id}: start from 0")
        stream = _Stream(self, channel, task_id, after, at[0] if at else None)
        with self._lock:
            if self._closing:
                return reply(channel, 503, "the board is stopping", {"Retry-After": "5"})
            self._streams.add(stream)
        assert self.server is not None, "mount the app on a server first"
        if not self.server.hand_off(channel, stream.run):
            stream.done()
            return reply(channel, 503, "too many open streams: try again later", {"Retry-After": "5"})
        return False

    def gone(self, stream: _Stream) -> None:
        with self._lock:
            self._streams.discard(stream)

    @property
    def closing(self) -> bool:
        return self._closing


class _Stream:
    """One SSE client of one task: reads the log after its cursor whenever the board says the task changed."""

    def __init__(self, app: LiveHttp, channel: Channel, task_id: str, after: int, last: dict[str, Any] | None) -> None:
        self.app, self.channel, self.task_id, self.sent = app, channel, task_id, after
        self.ended = _is_final_state(last)  # the client has every event up to the final move already
        self.woke = threading.Event()

    def _heard(self, change: dict[str, Any]) -> None:
        if (change.get("task") or {}).get("id") == self.task_id:
            self.woke.set()

    def run(self) -> bool:
        """Write the stream until the task is final, the client goes, or the board stops; False (close)."""
        remove = self.app.board.add_listener("task", self._heard)
        try:
            self.channel.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
                               b"X-Accel-Buffering: no\r\nConnection: close\r\n\r\n")
            self.channel.flush()
            while not self.app.closing:
                self.woke.clear()
                events = self.app.board.task_events(self.task_id, self.sent, PAGE)["events"]
                for event in events:
                    action, payload = notification(event, self.task_id)
                    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
                    self.channel.write(f"id: {event['seq']}\nevent: {action}\ndata: {data}\n\n".encode())
                    self.sent, self.ended = event["seq"], _is_final_state(event)
                self.channel.flush()
                if len(events) == PAGE:
                    continue
                if self.ended:
                    break
                if not self.woke.wait(self.app.keepalive):
                    self.channel.write(b": keep-alive\n\n")
                    self.channel.flush()
        finally:
            remove()
            self.done()
        return False

    def done(self) -> None:
        self.app.gone(self)


def _is_final_state(event: dict[str, Any] | None) -> bool:
    """The event is the move to a final state (nothing comes after it)."""
    return event is not None and event.get("kind", event.get("type")) == "state" and event.get("state") in FINAL


def mount_live(board: Any, server: Any, *, cookie: CookieCheck | None = None) -> LiveHttp:
    """`/ws` and `/events` on the board's MCP server (its gate's settings: server.policy); the app, to close."""
    app = LiveHttp(board, server.policy, cookie=cookie)
    app.mount(server)
    return app
