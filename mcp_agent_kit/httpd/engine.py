"""engine: an HTTP/1.1 server whose event loop reads requests and whose bounded pool runs handlers.

One thread (the caller of `serve_forever`) owns a selector: it accepts connections, reads request
heads and bodies into buffers, enforces header, body and idle deadlines, and hands each complete
request to a worker. The worker runs the application with the socket in blocking mode under a write
timeout (a slow reader can stall its own response, never forever), then gives the connection back
to the loop for the next request (keep-alive, pipelined bytes kept) or for a lingering close. No
thread waits for a client to send. A long-lived stream (SSE, listen) is handed off (`hand_off`) to
a separate bounded set of stream threads, so streams never take the request workers. Rules: it
knows no protocol above HTTP; socketserver's names (`serve_forever`, `shutdown`, `server_close`,
`server_address`, `socket`) keep their meaning.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import logging
import resource
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from mcp_agent_kit.httpd import head as heads
from mcp_agent_kit.httpd.exchange import Channel as Channel
from mcp_agent_kit.httpd.exchange import Receiver
from mcp_agent_kit.httpd.exchange import Request as Request
from mcp_agent_kit.httpd.head import HeadError
from mcp_agent_kit.httpd.pool import Pool
from mcp_agent_kit.httpd.routes import Routes

log = logging.getLogger("mcp_agent_kit.httpd")
HEAD, BODY, DRAIN, WORK, LINGER = range(5)  # connection states; the loop owns all but WORK
_LISTEN, _WAKE = object(), object()
LINGER_SECONDS = 2.0
SWEEP_SECONDS = 0.1
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


@dataclass(frozen=True)
class Limits:
    """Bounds on what one client may cost. Times are seconds; sizes are bytes."""

    workers: int = 64
    max_connections: int = 16384
    backlog: int = 1024
    max_head: int = 65536
    max_headers: int = 100
    max_body: int = 4 * 1024 * 1024
    drain_limit: int = 0  # an over-limit body up to this size is read away (on the loop) before the 413
    header_timeout: float = 10.0  # first byte of a head to its end
    body_timeout: float = 30.0  # end of the head to the end of the body
    idle_timeout: float = 30.0  # a kept-alive connection waiting for its next request
    write_timeout: float = 30.0  # one blocked send of a response
    stream_workers: int = 256  # long-lived streams (SSE, listen) run here, never on the request workers
    drain_timeout: float = 5.0  # graceful stop: how long in-flight requests may still run
    single_headers: frozenset[str] = field(default=heads.SINGLE)


App = Callable[[Request, Channel], bool]
"""app(request, channel) -> may the connection carry another request?"""


class Hub(Protocol):
    """What the server keeps of the connections it gave away for good (the WebSocket hub)."""

    @property
    def count(self) -> int: ...

    def stop(self) -> None: ...


class _Conn:
    __slots__ = ("address", "buf", "deadline", "need", "request", "sock", "state")

    def __init__(self, sock: socket.socket, address: object, deadline: float) -> None:
        self.sock = sock
        self.address = address
        self.buf = bytearray()
        self.state = HEAD
        self.deadline = deadline
        self.request: Request | None = None
        self.need = 0


def _fd_room() -> int:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 1 << 30 if soft == resource.RLIM_INFINITY else max(16, soft - 64)


class Server:
    """Bind at construction; `serve_forever` runs the loop in the calling thread."""

    def __init__(self, address: tuple[str, int], app: App, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self._app = app
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(address)
            self.socket.listen(max(self.limits.backlog, 1))
        except OSError:
            self.socket.close()
            raise
        self.socket.setblocking(False)
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._max_conns = min(self.limits.max_connections, _fd_room())
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.socket, selectors.EVENT_READ, _LISTEN)
        self._accepting = True
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._woken = False
        self._back: collections.deque[tuple[_Conn, bool | None]] = collections.deque()  # None: given away
        self._conns: set[_Conn] = set()
        self._pool = Pool(self.limits.workers, "httpd-worker")
        self._streams = Pool(self.limits.stream_workers, "httpd-stream")
        self._stream_lock = threading.Lock()
        self._stream_count = 0
        self._stop = False
        self._closed = False
        self._loop_done = threading.Event()
        self._loop_done.set()
        self._retry_accept_at = 0.0
        self.hub: Hub | None = None  # made by the first WebSocket accept (httpd.ws_server), stopped with us

    # ---- socketserver-style lifecycle ------------------------------------------------------------
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._loop_done.clear()
        try:
            self._loop(min(poll_interval, SWEEP_SECONDS))
        finally:
            self._stop = False
            self._loop_done.set()

    def shutdown(self) -> None:
        """Stop the loop and wait for `serve_forever` to return (call from another thread); upgraded
        connections are closed (WebSocket 1001)."""
        self._stop_hub()
        self._stop = True
        self._wake()
        self._loop_done.wait()

    def server_close(self) -> None:
        """Stop accepting, let in-flight requests finish (bounded by drain_timeout), close everything."""
        if self._closed:
            return
        self._closed = True
        self._stop_hub()
        self._stop = True
        self._wake()
        self._loop_done.wait(self.limits.drain_timeout)
        with contextlib.suppress(OSError, KeyError, ValueError):
            self._sel.unregister(self.socket)
        self.socket.close()
        deadline = time.monotonic() + self.limits.drain_timeout
        while (self._pool.busy or self._streams.busy) and time.monotonic() < deadline:
            time.sleep(0.01)
        self._take_back()
        for conn in list(self._conns):
            if conn.state == WORK:  # still running: make its writes fail, its worker closes nothing
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)
            else:
                self._close(conn)
        self._pool.stop()
        self._streams.stop()
        self._sel.close()
        self._wake_r.close()
        self._wake_w.close()

    def mount(self, app: App, *, paths: Iterable[str] = (), trees: Iterable[str] = ()) -> None:
        """Serve `app` too, on this socket, at these exact paths and under these one-segment trees
        (httpd.routes); the server's own app keeps every other path. Call before `serve_forever`. A
        server nothing is mounted on runs its app directly: no route lookup."""
        routes: Routes[Request, Channel] = self._app if isinstance(self._app, Routes) else Routes(self._app)
        routes.add(app, paths=paths, trees=trees)
        self._app = routes

    @property
    def busy_workers(self) -> int:
        return self._pool.busy

    @property
    def streams(self) -> int:
        """Long-lived streams running now (on the stream threads)."""
        return self._stream_count

    def hand_off(self, channel: Channel, run: Callable[[], bool]) -> bool:
        """Run the rest of this request, a long-lived stream, on a stream thread instead of this
        request worker, which is released as soon as the app returns. `run()` returns whether the
        connection may carry another request. False (nothing changes) when all stream threads are
        taken: the caller answers 503."""
        with self._stream_lock:
            if self._stream_count >= self.limits.stream_workers:
                return False
            self._stream_count += 1
        channel.handoff = run
        return True

    def take_over(self, channel: Channel, receiver: Receiver) -> None:
        """Give this connection away once the app returns: its response is flushed, then
        `receiver(sock, rest)` gets the socket and the bytes already read past this request's head,
        and the engine forgets the connection (the WebSocket hub after a 101)."""
        channel.receiver = receiver

    @property
    def websocket_count(self) -> int:
        return self.hub.count if self.hub is not None else 0

    def _stop_hub(self) -> None:
        hub, self.hub = self.hub, None
        if hub is not None:
            hub.stop()

    @property
    def connections(self) -> int:
        return len(self._conns)

    def fileno(self) -> int:
        return self.socket.fileno()

    # ---- the loop ----------------------------------------------------------------------------------
    def _loop(self, tick: float) -> None:
        next_sweep = time.monotonic() + tick
        select = self._sel.select
        while not self._stop:
            for key, _ in select(tick):
                data = key.data
                if data is _LISTEN:
                    self._accept()
                elif data is _WAKE:
                    self._take_back()
                else:
                    self._readable(data)
            now = time.monotonic()
            if now >= next_sweep:
                next_sweep = now + tick
                self._sweep(now)

    def _wake(self) -> None:
        if not self._woken:
            self._woken = True
            with contextlib.suppress(OSError):
                self._wake_w.send(b"\0")

    def _accept(self) -> None:
        limits = self.limits
        while len(self._conns) < self._max_conns:
            try:
                sock, address = self.socket.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._pause_accept(time.monotonic() + 0.1)  # out of descriptors: let some close
                return
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(sock, address, time.monotonic() + limits.idle_timeout)
            self._conns.add(conn)
            self._sel.register(sock, selectors.EVENT_READ, conn)
        self._pause_accept(0.0)

    def _pause_accept(self, retry_at: float) -> None:
        if self._accepting:
            self._accepting = False
            self._sel.unregister(self.socket)
        self._retry_accept_at = retry_at

    def _resume_accept(self) -> None:
        if not self._accepting and not self._closed and len(self._conns) < self._max_conns:
            self._accepting = True
            self._sel.register(self.socket, selectors.EVENT_READ, _LISTEN)

    def _sweep(self, now: float) -> None:
        for conn in [c for c in self._conns if c.state != WORK and c.deadline <= now]:
            self._close(conn)
        if not self._accepting and self._retry_accept_at and now >= self._retry_accept_at:
            self._retry_accept_at = 0.0
            self._resume_accept()

    def _close(self, conn: _Conn) -> None:
        if conn.state != WORK:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._sel.unregister(conn.sock)
        conn.sock.close()
        self._conns.discard(conn)
        if not self._retry_accept_at:
            self._resume_accept()

    def _linger(self, conn: _Conn) -> None:
        """Half-closed by us: read away what the client still sends, until it closes (bounded)."""
        conn.state = LINGER
        conn.buf = bytearray()
        conn.deadline = time.monotonic() + LINGER_SECONDS
        with contextlib.suppress(OSError):
            conn.sock.shutdown(socket.SHUT_WR)

    def _refuse(self, conn: _Conn, status: int, reason: str) -> None:
        with contextlib.suppress(OSError):
            conn.sock.send(heads.status_reply(status, reason))
        self._linger(conn)

    def _readable(self, conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close(conn)
            return
        if conn.state == LINGER:
            return
        if conn.state == HEAD and not conn.buf:
            conn.deadline = time.monotonic() + self.limits.header_timeout
        conn.buf += chunk
        self._advance(conn)

    def _advance(self, conn: _Conn) -> None:
        """Move the connection on as far as its buffered bytes allow."""
        if conn.state == HEAD:
            self._read_head(conn)
        if conn.state == BODY and len(conn.buf) >= conn.need:
            request = conn.request
            assert request is not None
            request.body = bytes(conn.buf[: conn.need])
            del conn.buf[: conn.need]
            self._dispatch(conn, request)
        elif conn.state == DRAIN:
            gone = min(conn.need, len(conn.buf))
            conn.need -= gone
            del conn.buf[:gone]
            if conn.need == 0:
                assert conn.request is not None
                self._dispatch(conn, conn.request)

    def _read_head(self, conn: _Conn) -> None:
        buf, limits = conn.buf, self.limits
        while buf[:2] == b"\r\n":  # stray CRLF between requests (RFC 9112 2.2)
            del buf[:2]
        end = heads.head_end(buf)
        if end < 0 or end > limits.max_head:
            if buf.find(b"\n", 0, heads.MAX_LINE + 1) < 0 and len(buf) > heads.MAX_LINE:
                self._refuse(conn, 414, "Request-URI Too Long")
            elif len(buf) > limits.max_head:
                self._refuse(conn, 431, "Request Header Fields Too Large")
            return
        try:
            head = heads.parse(bytes(buf[:end]), limits.single_headers, limits.max_headers)
        except HeadError as exc:
            self._refuse(conn, exc.status, exc.reason)
            return
        del buf[:end]
        headers = head.headers
        request = Request(head.method, head.target, head.version, headers, b"", head.requestline, head.keep_alive)
        length_text = headers.get("content-length")
        if "transfer-encoding" in headers or (length_text is not None and not length_text.strip().isdigit()):
            request.complete = request.keep_alive = False  # framing we do not read: the handler refuses it
            self._dispatch(conn, request)
            return
        length = int(length_text) if length_text is not None else 0
        if length > limits.max_body:
            request.complete = request.keep_alive = False
            if length <= limits.drain_limit:
                conn.state, conn.need, conn.request = DRAIN, length, request
                conn.deadline = time.monotonic() + limits.body_timeout
                self._advance(conn)
            else:
                self._dispatch(conn, request)
            return
        conn.need, conn.request = length, request
        conn.state = BODY
        if len(buf) < length:
            conn.deadline = time.monotonic() + limits.body_timeout
            if headers.get("expect", "").lower() == "100-continue" and not buf:
                with contextlib.suppress(OSError):
                    conn.sock.send(CONTINUE)

    def _dispatch(self, conn: _Conn, request: Request) -> None:
        conn.state = WORK
        conn.request = None
        self._sel.unregister(conn.sock)
        self._pool.submit(self._work, conn, request)

    # ---- on a worker ----------------------------------------------------------------------------------
    def _work(self, conn: _Conn, request: Request) -> None:
        sock = conn.sock
        keep = False
        channel = Channel(sock, conn.address)
        try:
            sock.settimeout(self.limits.write_timeout)
            keep = self._app(request, channel)
            if channel.receiver is not None:
                self._give_away(conn, channel)
                return
            if channel.handoff is not None:  # a stream: it goes on elsewhere, this worker is free
                self._streams.submit(self._stream, conn, request, channel)
                return
            channel.flush()
            keep = keep and request.keep_alive and not channel.broken
        except OSError:
            keep = False
        except Exception:
            log.exception("HTTP handler failed")
            keep = False
        if channel.handoff is not None:  # the app failed after taking a stream thread's place
            channel.handoff = None
            with self._stream_lock:
                self._stream_count -= 1
        self._give_back(conn, keep)

    def _stream(self, conn: _Conn, request: Request, channel: Channel) -> None:
        keep = False
        run = channel.handoff
        assert run is not None
        channel.handoff = None
        try:
            keep = run()
            channel.flush()
            keep = keep and request.keep_alive and not channel.broken
        except OSError:
            keep = False
        except Exception:
            log.exception("HTTP stream failed")
            keep = False
        finally:
            with self._stream_lock:
                self._stream_count -= 1
        self._give_back(conn, keep)

    def _give_away(self, conn: _Conn, channel: Channel) -> None:
        receiver, rest = channel.receiver, bytes(conn.buf)
        assert receiver is not None
        channel.receiver = None
        try:
            channel.flush()
        except OSError:
            self._give_back(conn, False)
            return
        conn.buf = bytearray()
        self._back.append((conn, None))  # the loop forgets it
        self._wake()
        try:
            receiver(conn.sock, rest)
        except Exception:  # the engine no longer owns it: close rather than leak it
            log.exception("HTTP take-over failed")
            conn.sock.close()

    def _give_back(self, conn: _Conn, keep: bool) -> None:
        sock = conn.sock
        if not keep:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            sock.setblocking(False)
        self._back.append((conn, keep))
        self._wake()

    def _take_back(self) -> None:
        """Connections the workers are done with: wait for their next request, or close them."""
        with contextlib.suppress(OSError):  # drain first, then re-arm: a wake sent after this is kept
            while self._wake_r.recv(4096):
                pass
        self._woken = False
        back, now = self._back, time.monotonic()
        while back:
            conn, keep = back.popleft()
            if keep is None:
                self._conns.discard(conn)
                if not self._retry_accept_at:
                    self._resume_accept()
                continue
            if self._stop or self._closed:
                keep = False
            conn.state = HEAD
            conn.deadline = now + self.limits.idle_timeout
            try:
                self._sel.register(conn.sock, selectors.EVENT_READ, conn)
            except (OSError, ValueError):
                self._conns.discard(conn)
                conn.sock.close()
                continue
            if not keep:
                conn.state = LINGER
                conn.deadline = now + LINGER_SECONDS
                conn.buf = bytearray()
            elif conn.buf:
                self._advance(conn)
