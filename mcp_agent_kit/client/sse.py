"""sse: the 2024-11-05 HTTP+SSE transport that HttpChannel falls back to (events parsed by wire/sse.py).

The old transport keeps one `GET url` stream open: its first event, `endpoint`, names the URL
the client POSTs every message to; replies, notifications and server requests all arrive on the
stream as `event: message`. `SseStream.open()` makes the GET and hands back the endpoint event
as a probe Endpoint (or a Failure); `use(url)` starts the reader thread; `exchange()` registers
the request id, POSTs, and waits for the reply on the stream. Server requests are answered by
the owner's listeners (the HttpChannel's, client/channel.py) and the answers POSTed back. With
an Authorizer (OAuth) the GET stream and every POST carry its credentials, and a 401/403 on
either takes the same challenge, discovery and refresh path as Streamable HTTP
(client/authorizer.py); credentials go only to the stream's own origin, so an endpoint
elsewhere would get none (the probe refuses such an endpoint anyway). Rules: no protocol
decisions (the probe resolves and vets the endpoint, same origin only); peer misbehaviour
becomes a Failure, never an exception.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.client.authorizer import Authorizer, Retry, challenged, credentials, retrying
from mcp_agent_kit.client.channel import ChannelListeners, Slot
from mcp_agent_kit.client.probe import Endpoint, Event, Failure, FailureKind, Opened, Reply
from mcp_agent_kit.wire import jsonrpc
from mcp_agent_kit.wire.sse import iter_sse

log = logging.getLogger("mcp_agent_kit.client")
Connect = Callable[[float], http.client.HTTPConnection]


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class SseStream:
    """One 2024-11-05 HTTP+SSE session: the GET stream at `url` and the endpoint it names."""

    def __init__(self, url: str, owner: ChannelListeners, connect: Connect, headers: Mapping[str, str],
                 auth: Authorizer | None = None) -> None:
        self.url = url
        self.auth = auth
        self.owner = owner
        self.endpoint: str | None = None
        self._connect = connect
        self._headers = dict(headers)
        self._conn: http.client.HTTPConnection | None = None
        self._events: Iterator[tuple[str, str]] | None = None
        self._pending: dict[Any, Slot] = {}
        self._lock = threading.Lock()
        self._ended: str | None = None
        self._reading = False

    # ---- opening -----------------------------------------------------------------------------------
    def open(self, timeout: float) -> Opened:
        """GET the stream; an Endpoint event, or a Failure saying why there is none."""
        return retrying(lambda: self._open_once(timeout), self.url)

    def _open_once(self, timeout: float) -> Opened | Retry:
        try:
            conn = self._connect(timeout)
        except ValueError as exc:
            return Failure("unreachable", str(exc))
        try:
            sent = {**self._headers, **credentials(self.auth, self.url, "GET", self.url), "Accept": "text/event-stream"}
            conn.request("GET", path_of(self.url), headers=sent)
            response = conn.getresponse()
            if response.status in (401, 403) and self.auth is not None:
                conn.close()
                return challenged(self.auth, response, sent, self.url)
            failure = self._check(response)
            if failure is not None:
                conn.close()
                return failure
            if self.auth is not None:
                self.auth.accepted(sent)
            events = iter_sse(response)
            name, data = next(events, ("", ""))
        except TimeoutError:
            conn.close()
            return Failure("timeout", f"no endpoint event on {self.url} within {timeout:g}s")
        except (ConnectionRefusedError, socket.gaierror) as exc:
            conn.close()
            return Failure("unreachable", f"{self.url}: {exc}")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            conn.close()
            return Failure("exited", f"{self.url}: the SSE stream failed: {exc}")
        if name != "endpoint":
            conn.close()
            what = "ended before an endpoint event" if not name else f"began with {name!r}, not an endpoint event"
            return Failure("garbage", f"{self.url}: the SSE stream {what}")
        self._conn, self._events = conn, events
        return Endpoint(self.url, data)

    @staticmethod
    def _check(response: http.client.HTTPResponse) -> Failure | None:
        status = response.status
        if status in (401, 403):
            challenge = response.getheader("WWW-Authenticate")
            return Failure("auth", f"HTTP {status}" + (f" ({challenge})" if challenge else ""), status)
        if status >= 300:
            kind: FailureKind = "http-5xx" if status >= 500 else "http-4xx"
            body = response.read(4096)[:200].decode("utf-8", "replace")
            return Failure(kind, f"GET: HTTP {status}: {body!r}", status)
        content_type = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "text/event-stream":
            return Failure("garbage", f"GET: HTTP {status} answered with {content_type or 'no content type'!r}")
        return None

    def use(self, endpoint: str) -> None:
        """POST to `endpoint` from now on, and start reading the stream."""
        self.endpoint = endpoint
        conn = self._conn
        if conn is None:
            return
        if conn.sock is not None:
            conn.sock.settimeout(None)  # the stream idles between messages; close() ends it
        self._reading = True
        threading.Thread(target=self._read, args=(conn,), name="mcp-sse-reader", daemon=True).start()

    # ---- the stream --------------------------------------------------------------------------------
    def _read(self, conn: http.client.HTTPConnection) -> None:
        why = "the SSE stream ended"
        try:
            for name, data in self._events or iter(()):
                if name == "message" and data.strip():
                    try:
                        self._route(data)
                    except Exception:  # a failing callback must not end the session
                        log.exception("handling a message from the SSE stream failed")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            why = f"the SSE stream failed: {exc}"
        finally:
            conn.close()
        self._end(why)

    def _route(self, data: str) -> None:
        incoming = jsonrpc.decode(data)
        if incoming.kind == "response":
            with self._lock:
                slot = self._pending.pop(incoming.message.get("id"), None)
            if slot is None:
                log.warning("dropping a reply nobody waits for: %.120r", data)
            else:
                slot.resolve(Reply(incoming.message))
        elif incoming.kind == "notification":
            self.owner.tell_notification(incoming.message)
        elif incoming.kind == "request":
            threading.Thread(target=self._answer, args=(incoming.message,), daemon=True).start()
        elif incoming.kind == "invalid":
            log.warning("non-JSON-RPC data on the SSE stream: %.120r", data)

    def _answer(self, request: dict[str, Any]) -> None:
        reply = self.owner.answer_request(request)
        failure = self._post(reply, 10.0)
        if failure is not None:
            log.warning("could not answer %s: %s", request.get("method"), failure.detail)

    def _end(self, why: str) -> None:
        with self._lock:
            self._ended = self._ended or why
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot.resolve(Failure("exited", why))

    # ---- sending -----------------------------------------------------------------------------------
    def _post(self, message: dict[str, Any], timeout: float) -> Failure | None:
        endpoint = self.endpoint
        if endpoint is None:
            return Failure("invalid", "no endpoint to POST to")
        return retrying(lambda: self._post_once(endpoint, message, timeout), endpoint)

    def _post_once(self, endpoint: str, message: dict[str, Any], timeout: float) -> Failure | Retry | None:
        sent = {**self._headers, **credentials(self.auth, self.url, "POST", endpoint),
                "Content-Type": "application/json"}
        try:
            conn = self._connect(timeout)
            try:
                conn.request("POST", path_of(endpoint), body=jsonrpc.encode(message), headers=sent)
                response = conn.getresponse()
                if response.status in (401, 403) and self.auth is not None:
                    return challenged(self.auth, response, sent, endpoint)
                body = response.read(4096)
            finally:
                conn.close()
        except TimeoutError:
            return Failure("timeout", f"POST {endpoint}: no answer within {timeout:g}s")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            return Failure("exited", f"POST {endpoint}: {exc}")
        status = response.status
        if status in (401, 403):
            return Failure("auth", f"HTTP {status}", status)
        if self.auth is not None:
            self.auth.accepted(sent)
        if status >= 300:
            kind: FailureKind = "http-5xx" if status >= 500 else "http-4xx"
            return Failure(kind, f"POST {endpoint}: HTTP {status}: {body[:200].decode('utf-8', 'replace')!r}")
        return None

    def exchange(self, message: dict[str, Any], timeout: float) -> Event:
        slot = Slot()
        with self._lock:
            if self._ended is not None:
                return Failure("exited", self._ended)
            self._pending[message["id"]] = slot
        failure = self._post(message, timeout)
        if failure is None and not slot.done.wait(timeout):
            failure = Failure("timeout", f"no reply to {message['method']} within {timeout:g}s")
        if failure is not None:
            with self._lock:
                self._pending.pop(message["id"], None)
            slot.resolve(failure)
        assert slot.event is not None
        return slot.event

    def notify(self, message: dict[str, Any]) -> None:
        failure = self._post(message, 10.0)
        if failure is not None:
            log.warning("could not send %s: %s", message.get("method"), failure.detail)

    def close(self) -> None:
        """End the stream: shut the socket down so the reader wakes; the reader closes the rest."""
        conn, self._conn = self._conn, None
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        if conn is not None and not self._reading:
            conn.close()
        self._end("the client closed the SSE stream")
