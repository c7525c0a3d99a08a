"""acp.connection: a bidirectional JSON-RPC 2.0 peer over newline-delimited byte streams (either ACP end).

A configuration of the kit's one line peer (line_peer.LinePeer over wire.peer.JsonRpcPeer) with ACP's
handler tables. Both ends of ACP send requests and both number them from 0, so every incoming message
is routed by "has a method" first (a request or a notification of the peer) and only then by id (a
response to one of ours). Incoming requests run on their own worker threads (a handler may itself wait
on a request to the peer), at most `max_handlers` at once; a handler that returns a `Deferred` frees its
thread at once and is answered when the Deferred is settled (at most `max_deferred` open; see line_peer);
unknown requests are answered -32601, unknown notifications go to `fallback` (ignored when none).
Notifications run in arrival order on the reader thread, so a handler sees every update that preceded
its request. Outgoing requests are `Pending`
objects with bounded waits; end of input (or `fail_pending`) fails every one of them. Lines up to
`max_line` bytes (16 MiB) are accepted, longer ones are reported and dropped. The line policy is
declared: lenient by default (reading an agent: lines that are not a JSON-RPC object are skipped and
reported to `log`, up to `max_junk`, then the connection gives up), or strict (serving a client, see
acp.agent.connection). `on_request` sees each request on the reader thread, in order with the
notifications; `in_flight` counts the requests read and not yet answered (deferred ones too).

Rules: transport-neutral (it takes a readable and a writable binary stream and never spawns,
signals or knows ACP methods); imports only `wire`, `logs` and `line_peer`.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping
from typing import IO, Any

import mcp_agent_kit.logs as logs
from mcp_agent_kit.line_peer import (
    DEFAULT_MAX_DEFERRED,
    ConnectionClosed,
    Deferred,
    LinePeer,
    Pending,
    RequestTimeout,
    Threads,
)
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError
from mcp_agent_kit.wire.peer import LENIENT_AGENT, JsonRpcPeer, LinePolicy, answer

__all__ = ["Connection", "ConnectionClosed", "Deferred", "Pending", "RequestTimeout", "RpcError"]

MIB = 1 << 20
DEFAULT_MAX_LINE = 16 * MIB
DEFAULT_MAX_JUNK = 1000
DEFAULT_MAX_HANDLERS = 32

RequestHandler = Callable[[Any], Any]
NotificationHandler = Callable[[Any], None]
Fallback = Callable[[str, Any], None]


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def _outcome(message: dict[str, Any]) -> tuple[Any, BaseException | None]:
    """A response -> its result, or its error as an RpcError that reads well to a person."""
    error = message.get("error")
    if error is None:
        return message.get("result"), None
    code = error.get("code") if isinstance(error, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    code = code if isinstance(code, int) else wire.INTERNAL_ERROR
    return None, RpcError.described(code, text if isinstance(text, str) else str(error),
                                    error.get("data") if isinstance(error, dict) else None,
                                    name=wire.error_name(code))


class Connection:
    """A JSON-RPC peer over `reader` (the other side's output) and `writer` (its input)."""

    def __init__(
        self,
        reader: IO[bytes],
        writer: IO[bytes],
        *,
        handlers: Mapping[str, RequestHandler] | None = None,
        notifications: Mapping[str, NotificationHandler] | None = None,
        fallback: Fallback | None = None,
        log: Callable[[str], None] | None = None,
        close_reason: Callable[[], str] | None = None,
        on_close: Callable[[], None] | None = None,
        trace: Callable[[str, dict[str, Any]], None] | None = None,
        max_line: int = DEFAULT_MAX_LINE,
        max_junk: int = DEFAULT_MAX_JUNK,
        max_handlers: int = DEFAULT_MAX_HANDLERS,
        max_deferred: int = DEFAULT_MAX_DEFERRED,
        name: str = "peer",
        policy: LinePolicy | None = None,
        on_request: Callable[[str, Any], None] | None = None,
    ) -> None:
        self.handlers: dict[str, RequestHandler] = dict(handlers or {})
        self.notifications: dict[str, NotificationHandler] = dict(notifications or {})
        self.fallback = fallback
        self._log = log or logs.logger("mcp_agent_kit.acp").warning
        self._close_reason = close_reason
        self._on_close = on_close
        self.policy = policy or dataclasses.replace(LENIENT_AGENT, max_junk=max_junk)
        self.max_line, self.max_junk, self.name = max_line, self.policy.max_junk, name
        self.closed = threading.Event()
        self.close_message = ""
        self._started = False
        peer: JsonRpcPeer[Pending] = JsonRpcPeer(self.policy, _outcome, max_line=max_line)
        self._lines = LinePeer(
            reader, writer, peer, handle=self._handle, notify=self._notify, encode=_encode,
            concurrency=Threads(max_handlers), on_bad_line=self._bad_line, on_oversize=self._oversize,
            on_request=(lambda message: on_request(message["method"], message.get("params"))) if on_request else None,
            on_end=self._finish, trace=trace, log=self._log, name=name, thread_name=f"acp-{name}",
            max_deferred=max_deferred)

    @property
    def trace(self) -> Callable[[str, dict[str, Any]], None] | None:
        """Sees every message in ("in") and out ("out"); set or cleared any time."""
        return self._lines.trace

    @trace.setter
    def trace(self, trace: Callable[[str, dict[str, Any]], None] | None) -> None:
        self._lines.trace = trace

    @property
    def junk_lines(self) -> int:
        return self._lines.peer.junk

    @property
    def oversize_lines(self) -> int:
        return self._lines.oversize_lines

    @property
    def in_flight(self) -> int:
        """Requests read whose handler has not yet written its answer."""
        return self._lines.in_flight

    def wait_idle(self, timeout: float) -> bool:
        """Wait at most `timeout` s until input ended and every request read is answered (no polling)."""
        return self._lines.wait_idle(timeout) if self._started else True  # never read: nothing in flight

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> Connection:
        """Start the reader thread (once); returns self."""
        self._started = True
        self._lines.start()
        return self

    def close(self, reason: str = "connection closed") -> None:
        """Close our output (the peer sees end of input) and fail every pending request."""
        self._lines.close_output()
        self.fail_pending(ConnectionClosed(reason))

    def join(self, timeout: float) -> bool:
        """Wait at most `timeout` s for the reader to reach end of input; whether it did."""
        return self._lines.join(timeout) if self._started else self.closed.is_set()

    def fail_pending(self, error: BaseException) -> None:
        """Settle every pending request with `error` (end of input, a crash, a timeout of the whole peer)."""
        for item in self._lines.take_all():
            item.settle(error=error)

    # -- outgoing ----------------------------------------------------------------------------
    def send_request(self, method: str, params: Any = None) -> Pending:
        """Send a request now; the answer arrives on the returned Pending."""
        pending = Pending(self._lines.peer.new_id(), method)
        if not self._lines.expect(pending.id, pending):
            self.closed.wait(5.0)  # the end of input is being reported: its reason is on its way
            pending.settle(error=ConnectionClosed(self.close_message or f"{self.name} has closed its output"))
            return pending
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": pending.id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._write(message)
        except ConnectionClosed as exc:
            self._lines.forget(pending.id)
            pending.settle(error=exc)
        return pending

    def request(self, method: str, params: Any = None, *, timeout: float) -> Any:
        """Send a request and wait at most `timeout` s for its result (see Pending.wait)."""
        pending = self.send_request(method, params)
        try:
            return pending.wait(timeout)
        finally:
            self._lines.forget(pending.id)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (ConnectionClosed when the peer's input is gone)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    def _write(self, message: dict[str, Any]) -> None:
        try:
            self._lines.send(message)
        except (OSError, ValueError) as exc:  # broken pipe, or closed by us
            raise ConnectionClosed(f"cannot write to {self.name}: {exc}") from None

    # -- incoming ----------------------------------------------------------------------------
    def _handle(self, message: dict[str, Any]) -> dict[str, Any] | Deferred:
        """A request of the peer (on its own thread) -> our answer (or the Deferred that will give it)."""
        request_id, method = message["id"], message["method"]
        handler = self.handlers.get(method)
        if handler is None:
            return answer(request_id, error=RpcError(wire.METHOD_NOT_FOUND, f"method not found: {method}"))
        try:
            result = handler(message.get("params"))
            return result if isinstance(result, Deferred) else answer(request_id, result)
        except RpcError as exc:
            return answer(request_id, error=exc)
        except Exception as exc:
            self._log(f"{self.name}: handler for {method} failed: {type(exc).__name__}: {exc}")
            return answer(request_id, error=RpcError(wire.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))

    def _notify(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params")
        handler = self.notifications.get(method)
        try:
            if handler is not None:
                handler(params)
            elif self.fallback is not None:
                self.fallback(method, params)
        except Exception as exc:  # a bad handler must not stop the reader
            self._log(f"{self.name}: handling notification {method} failed: {type(exc).__name__}: {exc}")

    def _bad_line(self, line: bytes, reply: dict[str, Any] | None) -> None:
        if reply is not None:
            error = reply["error"]
            self._log(f"{self.name}: answered bad input with error {error['code']}: {error['message']}")
        else:
            shown = line.strip()[:200].decode("utf-8", "replace")
            self._log(f"{self.name}: skipped a line that is not a JSON-RPC message: {shown!r}")

    def _oversize(self, size: int) -> None:
        self._log(f"{self.name}: dropped a {size}-byte line (over the {self.max_line}-byte line limit)")

    def _finish(self) -> None:
        if self.max_junk is not None and self.junk_lines > self.max_junk:
            self.close_message = f"{self.name} wrote more than {self.max_junk} lines that are not JSON-RPC to stdout"
            self._log(self.close_message)
        if not self.close_message:
            extra = self._close_reason() if self._close_reason else ""
            self.close_message = f"{self.name} closed its output" + (f": {extra}" if extra else "")
        self.closed.set()
        self.fail_pending(ConnectionClosed(self.close_message))
        if self._on_close is not None:
            try:
                self._on_close()
            except Exception as exc:
                self._log(f"{self.name}: on_close failed: {exc}")
