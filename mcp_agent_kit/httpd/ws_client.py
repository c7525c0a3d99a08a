"""ws_client: a blocking RFC 6455 client — `connect(url)`, then `send`, `recv`, `ping`, `close`.

For tests, the CLI and remote agent hosts: one socket, no thread. `recv` answers pings itself and
returns whole messages (str for text, bytes for binary); `close` runs the closing handshake; `send_close`
and `abort` end it from another thread than the one in `recv`. The handshake response's headers stay
readable (`headers`, and every `Set-Cookie` in `set_cookies`). ws:// and wss:// (ssl, the system's trust
store unless a context is given). Rules: every failure —
refused handshake, broken protocol, a closed connection, a timeout — is a WsClientError (a
timeout is also a TimeoutError); the close code and reason the server sent stay readable.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from urllib.parse import urlsplit

from mcp_agent_kit.httpd import websocket as ws

MAX_HEAD = 65536


class WsClientError(Exception):
    """The connection failed or is closed; `code`/`reason`: the close seen (None when none was)."""

    def __init__(self, message: str, code: int | None = None, reason: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.status = status  # the HTTP status of a refused handshake


class WsTimeout(WsClientError, TimeoutError):
    """Nothing arrived in time (the connection stays usable)."""


def _split(url: str) -> tuple[bool, str, int, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise WsClientError(f"not a WebSocket URL: {url!r} (use ws://HOST[:PORT]/PATH or wss://...)")
    secure = parts.scheme == "wss"
    try:
        port = parts.port or (443 if secure else 80)
    except ValueError:
        raise WsClientError(f"bad port in {url!r}") from None
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return secure, parts.hostname, port, target


def _read_head(sock: socket.socket) -> tuple[int, dict[str, str], list[str], bytes]:
    """The response's status, headers (lower-case names), its Set-Cookie values and the bytes after its head."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEAD:
            raise WsClientError("handshake response head too large")
        chunk = sock.recv(4096)
        if not chunk:
            raise WsClientError("the server closed the connection during the handshake")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("iso-8859-1").split("\r\n")
    words = lines[0].split(" ", 2)
    if len(words) < 2 or not words[0].startswith("HTTP/") or not words[1].isdigit():
        raise WsClientError(f"not an HTTP response: {lines[0][:100]!r}")
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        if key == "set-cookie":
            cookies.append(value.strip())
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return int(words[1]), headers, cookies, rest


def connect(url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 10.0,
            subprotocols: Sequence[str] = (), ssl_context: ssl.SSLContext | None = None,
            max_message: int = 1 << 20) -> WsClient:
    """Open a WebSocket; `timeout` bounds the connection and the handshake."""
    secure, host, port, target = _split(url)
    key = ws.new_key()
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise WsClientError(f"cannot connect to {host}:{port}: {exc}") from None
    try:
        if secure:
            sock = (ssl_context or ssl.create_default_context()).wrap_socket(sock, server_hostname=host)
        host_value = f"[{host}]" if ":" in host else host
        if port != (443 if secure else 80):
            host_value += f":{port}"
        lines = [f"GET {target} HTTP/1.1", f"Host: {host_value}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        if subprotocols:
            lines.append("Sec-WebSocket-Protocol: " + ", ".join(subprotocols))
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status, got, cookies, rest = _read_head(sock)
        if status != 101:
            raise WsClientError(f"the server refused the WebSocket upgrade: HTTP {status}", status=status)
        if "websocket" not in ws.tokens(got.get("upgrade")) or "upgrade" not in ws.tokens(got.get("connection")):
            raise WsClientError("the 101 response lacks Upgrade: websocket / Connection: Upgrade")
        if got.get("sec-websocket-accept") != ws.accept_key(key):
            raise WsClientError("the server's Sec-WebSocket-Accept does not match our key")
        chosen = got.get("sec-websocket-protocol")
        if chosen is not None and chosen not in subprotocols:
            raise WsClientError(f"the server chose a subprotocol we did not offer: {chosen!r}")
        if got.get("sec-websocket-extensions"):
            raise WsClientError("the server chose an extension we did not offer")
    except (OSError, WsClientError) as exc:
        sock.close()
        if isinstance(exc, WsClientError):
            raise
        raise WsClientError(f"WebSocket handshake with {host}:{port} failed: {exc}") from None
    client = WsClient(sock, rest, chosen, max_message=max_message)
    client.headers, client.set_cookies = got, cookies
    return client


class WsClient:
    """An open client connection (from `connect`). recv from one thread; send from any."""

    def __init__(self, sock: socket.socket, rest: bytes, subprotocol: str | None, *, max_message: int) -> None:
        self.sock = sock
        self.subprotocol = subprotocol
        self.close_code: int | None = None  # the code of the server's close frame (1005: none named)
        self.close_reason = ""
        self.headers: dict[str, str] = {}  # the handshake response's (lower-case names)
        self.set_cookies: list[str] = []  # its Set-Cookie values, in order
        self._decoder = ws.Decoder(server=False, max_frame=max_message, max_message=max_message)
        self._pending: collections.deque[ws.Event] = collections.deque()
        self._messages: collections.deque[str | bytes] = collections.deque()
        self._send_lock = threading.Lock()
        self._close_sent = False
        self._gone = False
        if rest:
            self._absorb(rest)

    def __enter__(self) -> WsClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    # ---- out ----------------------------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        with self._send_lock:
            if self._gone:
                raise WsClientError("the connection is closed", self.close_code, self.close_reason)
            try:
                self.sock.sendall(data)
            except OSError as exc:
                self._drop()
                raise WsClientError(f"send failed: {exc}", self.close_code, self.close_reason) from None

    def send(self, message: str | bytes) -> None:
        if self._close_sent:
            raise WsClientError("the connection is closing", self.close_code, self.close_reason)
        self._write(ws.message_frame(message, masked=True))

    def send_fragments(self, parts: Iterable[str | bytes]) -> None:
        """One message in several frames (all str: text; all bytes: binary)."""
        items = list(parts)
        if not items:
            raise ValueError("send_fragments needs at least one part")
        opcode = ws.TEXT if isinstance(items[0], str) else ws.BINARY
        frames = []
        for index, part in enumerate(items):
            raw = part.encode("utf-8") if isinstance(part, str) else bytes(part)
            frames.append(ws.frame(opcode if index == 0 else ws.CONT, raw, fin=index == len(items) - 1,
                                   masked=True))
        self._write(b"".join(frames))

    def ping(self, data: bytes = b"", timeout: float | None = 10.0) -> None:
        """Send a ping and wait for its pong; messages that arrive meanwhile wait for `recv`."""
        self._write(ws.frame(ws.PING, data, masked=True))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            event = self._next_event(deadline)
            if isinstance(event, ws.Pong) and event.data == data:
                return
            if isinstance(event, ws.WsMessage):
                self._messages.append(event.data)

    def close(self, code: int = 1000, reason: str = "", timeout: float = 5.0) -> None:
        """The closing handshake: send our close, wait (bounded) for the server's, close the socket."""
        if self._gone:
            return
        if not self._close_sent:
            self._close_sent = True
            try:
                self._write(ws.close_frame(code, reason, masked=True))
            except WsClientError:
                return
        deadline = time.monotonic() + timeout
        try:
            while self.close_code is None:
                self._next_event(deadline)
        except WsClientError:
            pass
        self._drop()

    def send_close(self, code: int = 1000, reason: str = "") -> None:
        """Send our close frame and return: the thread in `recv` sees the server's answer (then the end)."""
        if self._close_sent or self._gone:
            return
        self._close_sent = True
        with contextlib.suppress(WsClientError):
            self._write(ws.close_frame(code, reason, masked=True))

    def abort(self) -> None:
        """End the connection now, without a handshake: a thread blocked in `recv` wakes with WsClientError."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self._drop()

    # ---- in -----------------------------------------------------------------------------------------
    def recv(self, timeout: float | None = None) -> str | bytes:
        """The next message; WsTimeout after `timeout` seconds, WsClientError once closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._messages:
            event = self._next_event(deadline)
            if isinstance(event, ws.WsMessage):
                return event.data
        return self._messages.popleft()

    def _next_event(self, deadline: float | None) -> ws.Event:
        """The next event, having answered pings and closes; raises once the connection is over."""
        while not self._pending:
            if self._gone or self.close_code is not None:
                self._drop()
                raise WsClientError(self._closed_text(), self.close_code, self.close_reason)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WsTimeout("no message before the timeout")
            try:
                self.sock.settimeout(left)
                data = self.sock.recv(65536)
            except TimeoutError:
                raise WsTimeout("no message before the timeout") from None
            except OSError as exc:
                self._drop()
                raise WsClientError(f"receive failed: {exc}") from None
            if not data:
                self._drop()
                raise WsClientError(self._closed_text(), self.close_code, self.close_reason)
            self._absorb(data)
        event = self._pending.popleft()
        if isinstance(event, ws.Ping):
            with self._send_lock, contextlib.suppress(OSError):  # a broken socket shows on the next read
                if not self._gone and not self._close_sent:
                    self.sock.sendall(ws.frame(ws.PONG, event.data, masked=True))
        elif isinstance(event, ws.Close):
            self.close_code, self.close_reason = event.code, event.reason
            if not self._close_sent:
                self._close_sent = True
                with self._send_lock, contextlib.suppress(OSError):
                    self.sock.sendall(ws.frame(ws.CLOSE, ws.echo_payload(event),
                                               masked=True))
        return event

    def _absorb(self, data: bytes) -> None:
        try:
            self._pending.extend(self._decoder.feed(data))
        except ws.WsFailure as failure:
            with self._send_lock:
                try:
                    if not self._close_sent:
                        self.sock.sendall(ws.close_frame(failure.code, failure.reason, masked=True))
                except OSError:
                    pass
            self._close_sent = True
            self._drop()
            raise WsClientError(f"the server broke the protocol: {failure.reason}", failure.code,
                                failure.reason) from None

    def _closed_text(self) -> str:
        if self.close_code is None:
            return "the connection closed without a close frame"
        return f"the connection is closed ({self.close_code} {self.close_reason})".rstrip()

    def _drop(self) -> None:
        self._gone = True
        with contextlib.suppress(OSError):
            self.sock.close()
