"""channel: what the client needs from a transport, and the probe driver that uses one.

A Channel sends one JSON-RPC request and turns whatever happens into a probe Event (a Reply or
a Failure); it never raises for peer misbehaviour. Server notifications and (legacy) server
requests go to what the client registered with `channel.add_listener(kind, fn) -> remove`
(ChannelListeners: any number of "notification" listeners, one "request" handler), never
assigned over the channel. An HTTP channel can also fall back to the
2024-11-05 HTTP+SSE transport (`StreamCapable`) when the probe asks. Rules: no protocol
decisions here beyond mapping transport outcomes to events; the probe state machine decides.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Literal, Protocol, overload, runtime_checkable

from mcp_agent_kit.client.probe import Event, Failure, Opened, OpenStream, Probe, Reply, Verdict
from mcp_agent_kit.wire import jsonrpc

log = logging.getLogger("mcp_agent_kit.client")
CHANNEL_KINDS = ("notification", "request")  # what a channel's add_listener takes


class Slot:
    """Where a reader thread leaves the answer to one pending request."""

    __slots__ = ("done", "event")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.event: Event | None = None

    def resolve(self, event: Event) -> None:
        if not self.done.is_set():
            self.event = event
            self.done.set()

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        """As a line peer's waiter (wire.peer.Waiter): `result` is the Reply its outcome made of the response."""
        self.resolve(result)


RequestHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
"""Answers one server→client request (legacy era) with a full JSON-RPC reply. The second argument
is the id of our request it belongs to, when the transport tells (a POST's SSE stream), else None."""
NotificationHandler = Callable[[dict[str, Any]], None]


def reply_to_request(handler: RequestHandler | None, request: dict[str, Any], related: Any = None) -> dict[str, Any]:
    """The reply to a server→client request: the handler's, or method-not-found without one."""
    if handler is None:
        return jsonrpc.RpcError.method_not_found(request["method"]).reply(request["id"])
    return handler(request, related)


class ChannelListeners:
    """Who hears a channel: every "notification" listener hears each server notification (one that
    raises is logged and the others still hear); the one "request" handler answers server→client
    requests (a request needs exactly one reply: a second handler is refused until the first is
    removed; without one a request gets method-not-found). Channels inherit this; registering
    returns the function that removes the listener again (twice is harmless)."""

    def __init__(self) -> None:
        self._listeners_lock = threading.Lock()
        self._notification_listeners: tuple[NotificationHandler, ...] = ()
        self._request_handler: RequestHandler | None = None

    @overload
    def add_listener(self, kind: Literal["notification"], listener: NotificationHandler) -> Callable[[], None]: ...

    @overload
    def add_listener(self, kind: Literal["request"], listener: RequestHandler) -> Callable[[], None]: ...

    def add_listener(self, kind: str, listener: Callable[..., Any]) -> Callable[[], None]:
        if kind not in CHANNEL_KINDS:
            raise ValueError(f"unknown listener kind {kind!r}; use one of {', '.join(CHANNEL_KINDS)}")
        with self._listeners_lock:
            if kind == "notification":
                self._notification_listeners = (*self._notification_listeners, listener)
            elif self._request_handler is not None:
                raise ValueError("this channel already has a request handler; remove it first")
            else:
                self._request_handler = listener

        def remove() -> None:
            with self._listeners_lock:
                if kind == "notification":
                    self._notification_listeners = tuple(
                        item for item in self._notification_listeners if item is not listener)
                elif self._request_handler is listener:
                    self._request_handler = None

        return remove

    def tell_notification(self, message: dict[str, Any]) -> None:
        """A server notification, to every notification listener (on the transport's thread)."""
        for listener in self._notification_listeners:
            try:
                listener(message)
            except Exception:
                log.exception("a notification listener failed on %s", message.get("method"))

    def answer_request(self, request: dict[str, Any], related: Any = None) -> dict[str, Any]:
        """The reply to a server→client request: the request handler's, or method-not-found without one."""
        return reply_to_request(self._request_handler, request, related)


class Channel(Protocol):
    """One connection to one MCP server (a child process or an HTTP endpoint); its server notifications
    and requests go to the listeners registered with `add_listener` (ChannelListeners)."""

    strict: bool
    legacy_version: str | None

    @overload
    def add_listener(self, kind: Literal["notification"], listener: NotificationHandler) -> Callable[[], None]: ...

    @overload
    def add_listener(self, kind: Literal["request"], listener: RequestHandler) -> Callable[[], None]: ...

    def exchange(self, message: dict[str, Any], timeout: float, headers: dict[str, str] | None = None) -> Event:
        """Send one request and wait for its reply, or a Failure; never raises for the peer."""
        ...

    def notify(self, message: dict[str, Any]) -> None: ...

    def restart(self) -> None:
        """Start afresh (a new process for stdio; nothing for HTTP)."""
        ...

    def close(self) -> None: ...

    def describe(self) -> str: ...


@runtime_checkable
class StreamCapable(Protocol):
    """A channel that can switch to the 2024-11-05 HTTP+SSE transport."""

    def open_stream(self, timeout: float) -> Opened:
        """GET the URL as an SSE stream; a probe Endpoint, or a Failure."""
        ...

    def use_endpoint(self, url: str) -> None:
        """From now on POST to `url` and read replies from the opened stream."""
        ...


class PeerError(Exception):
    """The peer failed in a way that is not a JSON-RPC error (timeout, exit, garbage, HTTP)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


def drive(probe: Probe, channel: Channel, timeout: float) -> Verdict:
    """Run a probe to its verdict over a channel; strict while probing (garbage is a signal)."""
    channel.strict = True
    streamed = False
    try:
        action = probe.start()
        while not isinstance(action, Verdict):
            if isinstance(action, OpenStream):
                streamed = True
                opened: Opened = Failure("invalid", "this channel has no HTTP+SSE fallback")
                if isinstance(channel, StreamCapable):
                    opened = channel.open_stream(timeout)
                action = probe.feed(opened)
                continue
            if action.fresh:
                channel.restart()
            if action.endpoint is not None and isinstance(channel, StreamCapable):
                channel.use_endpoint(action.endpoint)
            event = channel.exchange(action.message, timeout)
            if isinstance(event, Reply) and action.message["method"] == "initialize" and "result" in event.message:
                channel.legacy_version = str(event.message["result"].get("protocolVersion"))
            action = probe.feed(event)
        if streamed and action.era == "unavailable":
            channel.restart()  # let go of a stream the probe refused (e.g. a cross-origin endpoint)
        if action.notify is not None:
            channel.notify(action.notify)
        return action
    finally:
        channel.strict = False
