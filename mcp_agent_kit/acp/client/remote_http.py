"""acp.client.remote_http: the Streamable HTTP profile of ACP's draft network transport, client side.

An `HttpLink` turns the line driver's lines into the RFD's requests (HTTP/1.1, as the SDK and Qwen serve it):
`initialize` is POSTed first, alone, and its 200 answer carries the `Acp-Connection-Id` header (else the
`connectionId` of its `_meta`, as Qwen also sends it); before that answer is handed on, the connection-scoped
`GET` SSE stream is opened. Every later message is a POST with that header, answered 202 (a 200 with a
JSON body is taken too); one naming a session the connection knows (`params.sessionId`) also carries
`Acp-Session-Id`, as does our answer to a request of the agent (the session it came with). A session is known
once an answer names it (`result.sessionId` of session/new, or the answer to our session/load, resume or
fork): its session-scoped GET stream is opened *before* that answer is handed on, so nothing the agent says
in the session can be missed (the server buffers it until the GET comes; a session/load first tries to open
it ahead, as the RFD says, quietly when the server does not allow that yet). Every stream feeds one inbox, so
the agent's requests reach the client's handlers, routed by their `sessionId`. A POST that fails (network,
a status other than 200/202) answers the request it carried with an error, so the caller's call fails and
the link lives on; the end of the connection stream is the end of the link (a session stream's end is
not). `close` sends DELETE and ends the streams. Cookies and the caller's headers go on every request.
Rules: standard library http.client only; imports acp.client.remote (the link pieces) and wire.sse.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.acp.client.remote import (
    CookieJar,
    Link,
    LinkReader,
    LinkWriter,
    RemoteError,
    one_line,
    parse,
    refused,
    session_of,
)
from mcp_agent_kit.wire.sse import iter_sse

CONNECTION_HEADER = "Acp-Connection-Id"
SESSION_HEADER = "Acp-Session-Id"
PROFILE = "Streamable HTTP"
RESTORING = frozenset({"session/load", "session/resume"})  # name a session this connection may not know yet
DELETE_TIMEOUT = 5.0


@dataclass
class _EventStream:
    connection: http.client.HTTPConnection
    response: http.client.HTTPResponse
    session: str | None


def _key(id_: Any) -> str:
    return json.dumps(id_)


def _meta_connection_id(answer: dict[str, Any]) -> str | None:
    """`result.agentCapabilities._meta.<vendor>.connectionId` (Qwen), when the header is missing."""
    result = answer.get("result")
    caps = result.get("agentCapabilities") if isinstance(result, dict) else None
    meta = caps.get("_meta") if isinstance(caps, dict) else None
    for vendor in (meta or {}).values() if isinstance(meta, dict) else ():
        if isinstance(vendor, dict) and isinstance(vendor.get("connectionId"), str):
            return str(vendor["connectionId"])
    return None


class HttpLink(Link):
    """ACP over Streamable HTTP at `url` (see the module docstring)."""

    def __init__(self, url: str, headers: dict[str, str], jar: CookieJar, timeout: float,
                 log: Callable[[str], None]) -> None:
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            raise RemoteError(f"bad port in {url!r}") from None
        if not parts.hostname:
            raise RemoteError(f"no host in {url!r}")
        self.url, self._headers, self._jar, self._timeout, self._log = url, headers, jar, timeout, log
        self._secure = parts.scheme.lower() == "https"
        self._host, self._port = parts.hostname, port or (443 if self._secure else 80)
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._post_connection: http.client.HTTPConnection | None = None
        self._post_lock = threading.Lock()
        self._streams: dict[str | None, _EventStream] = {}
        self._streams_lock = threading.RLock()
        self._replies: dict[str, str] = {}  # the agent's request id -> the session its answer goes with
        self._ours: dict[str, str] = {}  # our request id -> the session it names
        self._known: set[str] = set()  # sessions this connection knows
        self._closing = False
        self._stream_error = RemoteError(f"{url}: the event stream did not open")
        self.inbox = LinkReader()
        self.reader, self.writer = self.inbox, LinkWriter(self._send, self._close_output)

    # -- requests ------------------------------------------------------------------------------------
    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self._secure:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _headers_for(self, extra: dict[str, str]) -> dict[str, str]:
        return {**self._headers, **self._jar.header(), **extra}

    def _exchange(self, method: str, body: bytes | None, extra: dict[str, str],
                  timeout: float) -> tuple[int, bytes, http.client.HTTPResponse]:
        """One request on the kept-alive connection (a fresh one once, when the kept one was closed)."""
        with self._post_lock:
            for attempt in (0, 1):
                reused = self._post_connection is not None
                connection = self._post_connection or self._connect(timeout)
                self._post_connection = None
                try:
                    connection.timeout = timeout
                    if connection.sock is not None:
                        connection.sock.settimeout(timeout)
                    connection.request(method, self._target, body, headers=self._headers_for(extra))
                    response = connection.getresponse()
                    data = response.read()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                    connection.close()
                    if reused and attempt == 0:
                        continue
                    raise RemoteError(f"{self.url}: the connection broke ({exc})") from None
                except (OSError, http.client.HTTPException) as exc:
                    connection.close()
                    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
                    raise RemoteError(f"cannot reach {self.url}: {why}") from None
                self._jar.absorb(response.headers.get_all("Set-Cookie") or [])
                if response.will_close:
                    connection.close()
                else:
                    self._post_connection = connection
                return response.status, data, response
        raise AssertionError("unreachable")

    def _post(self, line: bytes, extra: dict[str, str]) -> tuple[int, bytes, http.client.HTTPResponse]:
        timeout = self._timeout
        return self._exchange("POST", line, {"Content-Type": "application/json", "Accept": "application/json",
                                             **extra}, timeout)

    # -- out -----------------------------------------------------------------------------------------
    def _send(self, line: bytes) -> None:
        message = parse(line)
        if self.connection_id is None:
            self._initialize(line, message)
            return
        extra = {CONNECTION_HEADER: self.connection_id}
        session = self._scope(message)
        if session is not None:
            extra[SESSION_HEADER] = session
        if "method" in message and "id" in message and (named := session_of(message)) is not None:
            self._ours[_key(message["id"])] = named
            if message["method"] in RESTORING and named not in self._known:
                self._open_stream(named, quiet=True)  # the RFD's order; the SDK and Qwen allow it only later
        try:
            status, data, _ = self._post(line, extra)
        except RemoteError as exc:
            self._failed(message, str(exc))
            return
        if status == 200 and data.strip():
            self._take(data, None)
        elif status not in (200, 202):
            self._failed(message, f"{refused(self.url, status, PROFILE)}{self._error_text(data)}")

    def _scope(self, message: dict[str, Any]) -> str | None:
        """The Acp-Session-Id a POST of `message` carries (None: none)."""
        if "method" not in message:
            return self._replies.pop(_key(message.get("id")), None) if "id" in message else None
        session = session_of(message)
        if session is None or (message["method"] in RESTORING and session not in self._known):
            return None
        return session

    @staticmethod
    def _error_text(data: bytes) -> str:
        error = parse(data).get("error")
        text = error.get("message") if isinstance(error, dict) else error
        return f" ({str(text)[:200]})" if text else ""

    def _failed(self, message: dict[str, Any], text: str) -> None:
        """A POST that did not go through: the request it carried is answered with the error, else logged."""
        if "method" in message and "id" in message:
            self._ours.pop(_key(message["id"]), None)
            self.inbox.put(one_line(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                                 "error": {"code": -32603, "message": text}})))
        else:
            self._log(f"ACP link: a message was not delivered: {text}")

    def _initialize(self, line: bytes, message: dict[str, Any]) -> None:
        if message.get("method") != "initialize" or "id" not in message:
            raise ValueError("the first message to a remote agent must be the initialize request")
        try:
            status, data, response = self._post(line, {})
            if status != 200:
                raise refused(self.url, status, PROFILE)
            answer = parse(data)
            connection_id = response.headers.get(CONNECTION_HEADER) or _meta_connection_id(answer)
            if not answer or "id" not in answer:
                raise RemoteError(f"{self.url} did not answer initialize with JSON-RPC: it does not speak ACP's "
                                  f"{PROFILE} profile")
            if not connection_id:
                raise RemoteError(f"{self.url} answered initialize without an {CONNECTION_HEADER}: it does not "
                                  f"speak ACP's {PROFILE} profile")
            self.connection_id = connection_id
            if not self._open_stream(None):
                raise self._stream_error
        except RemoteError as exc:
            self.failure, self.end_reason = exc, str(exc)
            self._failed(message, str(exc))
            self.inbox.end()
            return
        self._take(data, None)

    # -- in ------------------------------------------------------------------------------------------
    def _open_stream(self, session: str | None, quiet: bool = False) -> bool:
        """Open the connection stream (None) or a session's stream, unless it is open; whether it is."""
        with self._streams_lock:
            if session in self._streams:
                return True
            if self._closing or self.connection_id is None:
                return False
            extra = {"Accept": "text/event-stream", CONNECTION_HEADER: self.connection_id}
            if session is not None:
                extra[SESSION_HEADER] = session
            connection = self._connect(self._timeout)
            try:
                connection.request("GET", self._target, headers=self._headers_for(extra))
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                self._stream_error = RemoteError(f"cannot open the event stream of {self.url}: {exc}")
                if not quiet:
                    self._log(f"ACP link: {self._stream_error}")
                return False
            self._jar.absorb(response.headers.get_all("Set-Cookie") or [])
            kind = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if response.status != 200 or kind != "text/event-stream":
                with contextlib.suppress(OSError, http.client.HTTPException):
                    response.read(4096)
                connection.close()
                if response.status == 200:
                    self._stream_error = RemoteError(
                        f"{self.url} answered the event stream's GET with {kind or 'no type'}: it does not speak "
                        f"ACP's {PROFILE} profile")
                else:
                    self._stream_error = refused(self.url, response.status, PROFILE)
                if not quiet:
                    where = f"session {session}" if session else "the connection"
                    self._log(f"ACP link: the event stream of {where} did not open: {self._stream_error}")
                return False
            if connection.sock is not None:
                connection.sock.settimeout(None)
            stream = _EventStream(connection, response, session)
            self._streams[session] = stream
        threading.Thread(target=self._read, args=(stream,), name="acp-http-stream", daemon=True).start()
        return True

    def _read(self, stream: _EventStream) -> None:
        reason = "the server ended it"
        try:
            for _event, data in iter_sse(stream.response):
                self._take(data.encode(), stream.session)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            reason = str(exc) or type(exc).__name__
        finally:
            with self._streams_lock:
                if self._streams.get(stream.session) is stream:
                    del self._streams[stream.session]
            stream.connection.close()
            if stream.session is None:
                self.end_reason = self.end_reason or f"the event stream of {self.url} ended ({reason})"
                self.inbox.end()

    def _take(self, data: bytes, stream_session: str | None) -> None:
        """One message from the agent: note what routing needs, open a session's stream it establishes, hand it on."""
        message = parse(data)
        if "method" in message and "id" in message:
            session = session_of(message) or stream_session
            if session is not None:
                self._replies[_key(message["id"])] = session
        elif "id" in message and "method" not in message:
            session = self._ours.pop(_key(message["id"]), None)
            result = message.get("result")
            if isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                session = result["sessionId"]
            if session is not None and "error" not in message:
                self._known.add(session)
                self._open_stream(session)
        self.inbox.put(one_line(data))

    # -- the end -------------------------------------------------------------------------------------
    def _close_output(self) -> None:
        """DELETE the connection (bounded) and end its streams."""
        if self._closing:
            return
        self._closing = True
        if self.connection_id is not None:
            with contextlib.suppress(RemoteError):
                self._exchange("DELETE", None, {CONNECTION_HEADER: self.connection_id}, DELETE_TIMEOUT)
        with self._post_lock:
            if self._post_connection is not None:
                self._post_connection.close()
                self._post_connection = None
        with self._streams_lock:
            streams = list(self._streams.values())
        for stream in streams:
            sock = stream.connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        if not streams:
            self.inbox.end()

    def stop(self, grace: float) -> None:
        self.writer.close()
        self.end_reason = self.end_reason or "the client closed the connection"
        self.inbox.end()
