"""http: a client Channel to a Streamable HTTP MCP endpoint, with the standard library's http.client.

Each request is one POST on its own connection (so calls may run concurrently); the reply is
either one JSON object or an SSE stream carrying request-scoped notifications, legacy server
requests (answered by POSTing the reply back) and finally the response. Legacy sessions
(`Mcp-Session-Id`) are kept and echoed, and ended with DELETE on close; a 404 to a request that
carried the session id is reported as "expired" (the client re-initializes). When the probe
asks, the channel switches to the 2024-11-05 HTTP+SSE transport (client/sse.py). Rules: no
protocol decisions; outcomes map to probe events — 401/403 "auth", 5xx "http-5xx", a 4xx
without a JSON-RPC body "http-4xx", a refused connection "unreachable" — and are never raised.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.client.authorizer import Authorizer, Retry, challenged, credentials, origin_of, retrying
from mcp_agent_kit.client.channel import ChannelListeners
from mcp_agent_kit.client.headers import request_headers
from mcp_agent_kit.client.probe import Event, Failure, Opened, Reply
from mcp_agent_kit.client.sse import SseStream
from mcp_agent_kit.wire import jsonrpc
from mcp_agent_kit.wire.sse import iter_sse

log = logging.getLogger("mcp_agent_kit.client")
MAX_BODY = 32 * 1024 * 1024
MAX_RESUMES = 5  # reconnections in a row that bring no new event before giving up
MAX_RETRY_MS = 10_000  # the longest `retry` hint we honour
DEFAULT_RETRY_S = 0.5
STANDALONE_TIMEOUT = 120.0  # a silent GET stream is reopened after this (servers send keep-alives)
ACCEPT = "application/json, text/event-stream"
_HEADERED_SINCE = "2025-06-18"  # legacy revisions that send MCP-Protocol-Version after initialize


class HttpChannel(ChannelListeners):
    """One MCP endpoint URL; `headers` are added to every request (e.g. Authorization)."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, *, verify: bool = True,
                 auth: Authorizer | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.origin = origin_of(url)
        self._parts = parts
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.extra = dict(headers or {})
        self.verify = verify
        self.auth = auth  # OAuth: its headers go on every request to this URL, and it answers 401/403
        super().__init__()
        self.strict = False
        self.legacy_version: str | None = None
        self.session_id: str | None = None
        self.sse: SseStream | None = None  # the 2024-11-05 HTTP+SSE transport, once in use
        self._opening: SseStream | None = None
        self._standalone: http.client.HTTPConnection | None = None  # the legacy session's GET stream
        self.standalone_open = threading.Event()  # set while that GET stream is open (the server took it)
        self._lock = threading.Lock()

    def describe(self) -> str:
        return self.url

    def restart(self) -> None:
        self.session_id = None
        self.legacy_version = None
        self._drop_streams()

    def _drop_streams(self) -> None:
        streams, self.sse, self._opening = (self.sse, self._opening), None, None
        for stream in streams:
            if stream is not None:
                stream.close()

    # ---- the 2024-11-05 HTTP+SSE fallback ----------------------------------------------------------
    def open_stream(self, timeout: float) -> Opened:
        """GET the URL as an SSE stream; its endpoint event (the probe vets it) or a Failure."""
        self._drop_streams()
        self._opening = SseStream(self.url, self, self._connect, self.extra, self.auth)
        return self._opening.open(timeout)

    def use_endpoint(self, url: str) -> None:
        """Route every later message through the opened stream, POSTing to `url`."""
        stream, self._opening = self._opening, None
        if stream is None:
            raise RuntimeError("use_endpoint() before open_stream()")
        stream.use(url)
        self.sse = stream

    # ---- the standalone GET stream of a legacy session ----------------------------------------------
    def listen_standalone(self) -> bool:
        """Keep the session's GET stream open on a background thread, for server notifications
        and requests that belong to no request of ours (list changes, resource updates). It is
        opened again while the session lasts; `standalone_open` is set while the server holds it open
        (what it announces from then on reaches us). False when there is no legacy session."""
        if self.session_id is None or self.sse is not None:
            return False
        with self._lock:
            if self._standalone is None:
                self._standalone = self._connect(STANDALONE_TIMEOUT)
                threading.Thread(target=self._standalone_loop, args=(self.session_id,), daemon=True).start()
        return True

    def _standalone_loop(self, session: str) -> None:
        pause = 1.0
        while self.session_id == session:
            conn = self._standalone
            if conn is None:
                return
            try:
                headers = {**self.extra, **self._auth("GET"), "Accept": "text/event-stream",
                           **self._session_headers(session)}
                conn.request("GET", self.path, headers=headers)
                response = conn.getresponse()
                kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
                if response.status in (404, 405) or kind != "text/event-stream":
                    response.read(4096)
                    if response.status in (404, 405):
                        return  # no such stream offered, or the session is gone
                else:
                    self.standalone_open.set()
                    for _, data in iter_sse(response):
                        self._dispatch(data, None)
                    pause = 1.0
            except (OSError, http.client.HTTPException, ValueError, AttributeError) as exc:
                # AttributeError: http.client reading a response whose connection close() just took away
                log.debug("the GET stream of %s broke: %s", self.url, exc)
            finally:
                self.standalone_open.clear()
                conn.close()
            time.sleep(pause)
            pause = min(pause * 2, 30.0)

    def close(self) -> None:
        self._drop_streams()
        with self._lock:
            standalone, self._standalone = self._standalone, None
        if standalone is not None:  # end the GET stream's blocked read (close() alone does not wake it)
            with contextlib.suppress(OSError, AttributeError):
                standalone.sock.shutdown(socket.SHUT_RDWR)
            standalone.close()
        session, self.session_id = self.session_id, None
        if session is None:
            return
        try:
            conn = self._connect(5.0)
            conn.request("DELETE", self.path, headers={**self.extra, **self._auth("DELETE"), "Mcp-Session-Id": session})
            conn.getresponse().read()
            conn.close()
        except (OSError, http.client.HTTPException):
            pass

    # ---- plumbing ------------------------------------------------------------------------------
    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        host, port = self._parts.hostname or "", self._parts.port
        if self._parts.scheme == "https":
            context = ssl.create_default_context()
            if not self.verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def _session_headers(self, session: str | None) -> dict[str, str]:
        """What every request after a legacy initialize carries: the session, and the version."""
        headers = {"Mcp-Session-Id": session} if session else {}
        version = self.legacy_version
        if version and version >= _HEADERED_SINCE:
            headers["MCP-Protocol-Version"] = version
        return headers

    def _auth(self, method: str) -> dict[str, str]:
        return credentials(self.auth, self.url, method, self.url)

    def _headers(self, message: dict[str, Any], extra: dict[str, str] | None) -> dict[str, str]:
        headers = {**self.extra, **self._auth("POST"), "Content-Type": "application/json", "Accept": ACCEPT}
        modern = request_headers(message)
        if modern:
            headers.update(modern)
        elif message.get("method") != "initialize":
            headers.update(self._session_headers(self.session_id))
        headers.update(extra or {})
        return headers

    # ---- channel API -----------------------------------------------------------------------------
    def notify(self, message: dict[str, Any]) -> None:
        if self.sse is not None:
            self.sse.notify(message)
        else:
            self._post_quietly(message)

    def _post_quietly(self, message: dict[str, Any]) -> None:
        try:
            conn = self._connect(10.0)
            conn.request("POST", self.path, body=jsonrpc.encode(message), headers=self._headers(message, None))
            conn.getresponse().read(MAX_BODY)
            conn.close()
        except (OSError, http.client.HTTPException) as exc:
            log.warning("could not POST to %s: %s", self.url, exc)

    def exchange(self, message: dict[str, Any], timeout: float, headers: dict[str, str] | None = None) -> Event:
        if self.sse is not None:
            return self.sse.exchange(message, timeout)
        return retrying(lambda: self._exchange_once(message, timeout, headers), self.url)

    def _exchange_once(self, message: dict[str, Any], timeout: float, headers: dict[str, str] | None) -> Event | Retry:
        try:
            conn = self._connect(timeout)
        except ValueError as exc:
            return Failure("unreachable", str(exc))
        try:
            sent = self._headers(message, headers)
            conn.request("POST", self.path, body=jsonrpc.encode(message), headers=sent)
            response = conn.getresponse()
            if response.status == 404 and sent.get("Mcp-Session-Id"):
                response.read(MAX_BODY)
                return self._expired(sent["Mcp-Session-Id"])
            if response.status in (401, 403) and self.auth is not None:
                return challenged(self.auth, response, sent, self.url)
            if self.auth is not None:
                self.auth.accepted(sent)
            return self._outcome(message, response, timeout)
        except TimeoutError:
            return Failure("timeout", f"no reply to {message['method']} within {timeout:g}s")
        except (ConnectionRefusedError, socket.gaierror) as exc:
            return Failure("unreachable", f"{self.url}: {exc}")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            return Failure("exited", f"{self.url}: connection failed: {exc}")
        finally:
            conn.close()

    def _expired(self, session: str) -> Failure:
        with self._lock:
            if self.session_id == session:
                self.session_id = None
        return Failure("expired", f"HTTP 404: the server no longer knows session {session[:40]!r}", 404)

    def _outcome(self, message: dict[str, Any], response: http.client.HTTPResponse, timeout: float) -> Event:
        status = response.status
        if status in (401, 403):
            challenge = response.getheader("WWW-Authenticate")
            response.read(MAX_BODY)
            return Failure("auth", f"HTTP {status}" + (f" ({challenge})" if challenge else ""))
        if status >= 500:
            body = response.read(4096)
            return Failure("http-5xx", f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
        session = response.getheader("Mcp-Session-Id")
        if session and message.get("method") == "initialize" and status < 300:
            self.session_id = session
        content_type = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if content_type == "text/event-stream" and status < 300:
            return self._read_stream(message, response, timeout)
        body = response.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            return Failure("garbage", "the response body exceeds the size limit")
        incoming = jsonrpc.decode(body) if body else None
        if incoming is not None and incoming.kind == "response":
            return Reply(incoming.message, status)
        if status >= 400:
            return Failure("http-4xx", f"HTTP {status}: {body[:200].decode('utf-8', 'replace')!r}", status)
        if not body:
            return Failure("invalid", f"HTTP {status} with an empty body for a request")
        return Failure("garbage", f"HTTP {status}: not a JSON-RPC response: {body[:120].decode('utf-8', 'replace')!r}")

    def _read_stream(self, message: dict[str, Any], response: http.client.HTTPResponse, timeout: float) -> Event:
        """The response on the request's SSE stream, resuming it (legacy sessions) if it breaks."""
        seen: dict[str, str] = {}
        status = response.status
        original = response
        resumes = 0
        while True:
            before = seen.get("id")
            reply = self._read_events(message, response, status, seen)
            if reply is not None:
                if response is not original:
                    response.close()
                return reply
            last = seen.get("id")
            resumes = 0 if last != before else resumes + 1  # reset while the stream makes progress
            if not last or self.session_id is None or request_headers(message) or resumes > MAX_RESUMES:
                return Failure("exited", "the SSE stream ended before the response arrived")
            retry = seen.get("retry", "")
            time.sleep(min(int(retry), MAX_RETRY_MS) / 1000 if retry.isdigit() else DEFAULT_RETRY_S)
            resumed = self._resume(last, timeout)
            if isinstance(resumed, Failure):
                return resumed
            response = resumed

    def _resume(self, last_event_id: str, timeout: float) -> http.client.HTTPResponse | Failure:
        """GET the rest of a broken stream (2025-11-25 resumability)."""
        headers = {**self.extra, **self._auth("GET"), "Accept": "text/event-stream", "Last-Event-ID": last_event_id,
                   **self._session_headers(self.session_id)}
        try:
            conn = self._connect(timeout)
            conn.request("GET", self.path, headers=headers)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            return Failure("exited", f"{self.url}: could not resume the stream: {exc}")
        content_type = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if response.status != 200 or content_type != "text/event-stream":
            response.read(4096)
            conn.close()
            return Failure("exited", f"the SSE stream broke and could not be resumed (HTTP {response.status})")
        return response

    def _read_events(
        self, message: dict[str, Any], response: http.client.HTTPResponse, status: int, seen: dict[str, str]
    ) -> Event | None:
        for _, data in iter_sse(response, seen=seen):
            incoming = self._dispatch(data, message["id"])  # on this request's own stream: it belongs to it
            if incoming is None:
                continue
            if incoming.kind == "response" and incoming.message.get("id") == message["id"]:
                return Reply(incoming.message, status)
            if incoming.kind == "invalid" and self.strict:
                return Failure("garbage", f"non-JSON-RPC data on the SSE stream: {data[:120]!r}")
        response.close()
        return None

    def _dispatch(self, data: str, related: Any) -> jsonrpc.Incoming | None:
        """Hand one SSE event's notification or server request on; the parsed event (None if empty)."""
        if not data.strip():
            return None
        incoming = jsonrpc.decode(data)
        if incoming.kind == "notification":
            self.tell_notification(incoming.message)
        elif incoming.kind == "request":
            threading.Thread(target=self._answer, args=(incoming.message, related), daemon=True).start()
        return incoming

    def _answer(self, request: dict[str, Any], related: Any = None) -> None:
        reply = self.answer_request(request, related)
        self._post_quietly(reply)
