"""acp.client.remote: ACP's network transport (draft RFD "Streamable HTTP & WebSocket"), client side.

A remote agent is reached through a *link*: a readable and a writable byte stream of newline-delimited
JSON-RPC, exactly what acp.connection reads from and writes to a child process, so the one line driver and
everything above it (permissions, fs and terminal handlers, cancel, session/load after a drop) stay as they
are. acp.client.network.open_link(url, ...) picks the profile by scheme: `ws://`/`wss://` is the WebSocket
profile (here), `http://`/`https://` Streamable HTTP (acp.client.remote_http). Common to both: a `CookieJar` that keeps
`name=value` from every `Set-Cookie` and sends it on every request, the WebSocket handshake included (one jar
per AcpAgent, so a reconnect keeps its affinity); the caller's headers (`--header`, `--token`) on every
request, never logged; one-line `RemoteError`s for a refused connection, a 401/403 (credentials), a 404 (no
ACP endpoint at that path) and a server that speaks neither profile. WebSocket: one JSON-RPC object per text
frame (binary frames ignored), pings answered (by httpd.ws_client), our messages kept under 1 MiB (the SDK's
client limit: an answer too large becomes an error answer), incoming ones up to the client's line limit.
Rules: no ACP method knowledge beyond `initialize` and `sessionId` routing; imports httpd.ws_client (the
one WebSocket client) and, for the HTTP profile, wire.sse (the one SSE reader).
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcp_agent_kit.acp.client.errors import AcpError

MAX_MESSAGE = (1 << 20) - 1024  # ours stay under 1 MiB, with room for a frame's head
STATUS_HINTS = {
    401: "it wants credentials (a bearer token or an authorization header)",
    403: "it refused these credentials (or this client's origin or host)",
    404: "there is no ACP endpoint at this path",
    405: "this URL does not take ACP's requests",
}


class RemoteError(AcpError):
    """The remote agent could not be reached, or refused us; `status` is the HTTP status when one came."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def refused(url: str, status: int, profile: str) -> RemoteError:
    """The one-line error for an HTTP `status` where ACP's `profile` expected another."""
    hint = STATUS_HINTS.get(status, f"it does not speak ACP's {profile} profile")
    return RemoteError(f"{url} answered HTTP {status}: {hint}", status)


class CookieJar:
    """Cookies of one client, `name=value` only (attributes ignored; Max-Age=0 or an empty value deletes)."""

    def __init__(self) -> None:
        self._cookies: dict[str, str] = {}
        self._lock = threading.Lock()

    def absorb(self, set_cookies: list[str]) -> None:
        for line in set_cookies:
            first, *attributes = line.split(";")
            name, sep, value = first.strip().partition("=")
            if not sep or not name:
                continue
            gone = not value or any(a.strip().lower().replace(" ", "") == "max-age=0" for a in attributes)
            with self._lock:
                if gone:
                    self._cookies.pop(name, None)
                else:
                    self._cookies[name] = value

    def header(self) -> dict[str, str]:
        """`{"Cookie": ...}` when any is kept, else `{}`."""
        with self._lock:
            return {"Cookie": "; ".join(f"{k}={v}" for k, v in self._cookies.items())} if self._cookies else {}


def one_line(data: bytes | str) -> bytes:
    """A JSON text as one line: a raw CR or LF in valid JSON is whitespace (never inside a string)."""
    raw = data.encode() if isinstance(data, str) else data
    return raw.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"


class LinkReader(io.RawIOBase):
    """The readable side of a link: the lines of messages handed over by `put`, end of input after `end`.

    `pull`, when given, is called on the reading thread for the next line instead (None: the end), so a
    WebSocket is read by the line driver's own reader thread."""

    def __init__(self, pull: Callable[[], bytes | None] | None = None) -> None:
        super().__init__()
        self._pull = pull
        self._lines: list[bytes] = []
        self._ready = threading.Condition()
        self._ended = False
        self._current = b""

    def readable(self) -> bool:
        return True

    def put(self, line: bytes) -> None:
        with self._ready:
            self._lines.append(line)
            self._ready.notify()

    def end(self) -> None:
        with self._ready:
            self._ended = True
            self._ready.notify_all()

    def _next(self) -> bytes | None:
        if self._pull is not None:
            return self._pull()
        with self._ready:
            self._ready.wait_for(lambda: self._lines or self._ended)
            return self._lines.pop(0) if self._lines else None

    def readinto(self, buffer: Any) -> int:
        if not self._current:
            line = self._next()
            if line is None:
                return 0
            self._current = line
        size = min(len(buffer), len(self._current))
        buffer[:size] = self._current[:size]
        self._current = self._current[size:]
        return size


class LinkWriter(io.RawIOBase):
    """The writable side of a link: each complete line written is handed to `send`; `close` ends the link."""

    def __init__(self, send: Callable[[bytes], None], on_close: Callable[[], None]) -> None:
        super().__init__()
        self._send, self._on_close = send, on_close
        self._partial = b""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.closed:
            raise ValueError("the link is closed")
        chunk = bytes(data)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                self._send(line)
        return len(chunk)

    def close(self) -> None:
        if not self.closed:
            super().close()
            self._on_close()


def parse(line: bytes | str) -> dict[str, Any]:
    """A JSON-RPC object, or {} for anything else (the line driver judges it)."""
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def session_of(message: Mapping[str, Any]) -> str | None:
    params = message.get("params")
    session = params.get("sessionId") if isinstance(params, dict) else None
    return session if isinstance(session, str) else None


def too_large_answer(line: bytes, limit: int) -> bytes:
    """Our answer to the agent, replaced by an error answer when it exceeds `limit`; ValueError for a
    request or notification that does (the caller's call fails, the link lives on)."""
    if len(line) <= limit:
        return line
    message = parse(line)
    if "method" in message or "id" not in message:
        raise ValueError(f"a {len(line)}-byte message exceeds the transport's {limit}-byte limit")
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {
        "code": -32603, "message": f"the answer ({len(line)} bytes) exceeds the transport's {limit}-byte limit"}},
        separators=(",", ":")).encode()


class Link:
    """What AcpAgent reads and writes (`reader`, `writer`), why it ended (`end_reason`), and `stop`."""

    reader: io.RawIOBase
    writer: io.RawIOBase
    connection_id: str | None = None
    end_reason = ""
    failure: RemoteError | None = None  # why the connection could not be set up (initialize refused)

    def stop(self, grace: float) -> None:
        raise NotImplementedError


class WebSocketLink(Link):
    """ACP over one WebSocket: text frames both ways, read on the line driver's reader thread."""

    def __init__(self, url: str, headers: Mapping[str, str], jar: CookieJar, timeout: float, max_in: int) -> None:
        from mcp_agent_kit.httpd.ws_client import WsClientError, connect

        try:
            self.client = connect(url, headers={**headers, **jar.header()}, timeout=timeout, max_message=max_in)
        except WsClientError as exc:
            if exc.status is not None:
                raise refused(url, exc.status, "WebSocket") from None
            raise RemoteError(f"{url}: {exc}") from None
        jar.absorb(self.client.set_cookies)
        self.connection_id = self.client.headers.get("acp-connection-id")
        self.url, self._ended = url, threading.Event()
        self.reader = LinkReader(pull=self._pull)
        self.writer = LinkWriter(self._send, self.client.send_close)

    def _pull(self) -> bytes | None:
        from mcp_agent_kit.httpd.ws_client import WsClientError

        while True:
            try:
                message = self.client.recv()
            except WsClientError as exc:
                self.end_reason = f"the WebSocket closed ({exc})"
                self._ended.set()
                self.client.abort()
                return None
            if isinstance(message, str):  # binary frames are ignored (RFD)
                return one_line(message)

    def _send(self, line: bytes) -> None:
        from mcp_agent_kit.httpd.ws_client import WsClientError

        try:
            self.client.send(too_large_answer(line, MAX_MESSAGE).decode())
        except WsClientError as exc:
            raise OSError(str(exc)) from None

    def stop(self, grace: float) -> None:
        """Our close frame, a bounded wait for the server's, then the socket goes."""
        self.client.send_close()
        self._ended.wait(grace)
        self.client.abort()
