"""acp.connection: a bidirectional JSON-RPC 2.0 peer over newline-delimited byte streams.

Both ends of ACP send requests and both number them from 0, so every incoming message is routed
by "has a method" first (a request or a notification of the peer) and only then by id (a response
to one of ours). Incoming requests run on their own worker threads (a handler may itself wait on a
request to the peer), at most `max_handlers` at once; unknown requests are answered -32601, unknown
notifications go to `fallback` (ignored when none). Notifications run in arrival order on the
reader thread, so a handler sees every update that preceded its request. Outgoing requests are
`Pending` objects with bounded waits; end of input (or `fail_pending`) fails every one of them.
Lines that are not a JSON-RPC object are skipped and reported to `log`, up to `max_junk` (then
the connection gives up); lines up to `max_line` bytes (16 MiB) are accepted, longer ones are
reported and dropped. Writes are serialised by a lock.

Rules: transport-neutral (it takes a readable and a writable binary stream and never spawns,
signals or knows ACP methods); imports only `wire` and `logs`.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import mcp_agent_kit.logs as logs
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError

MIB = 1 << 20
DEFAULT_MAX_LINE = 16 * MIB
DEFAULT_MAX_JUNK = 1000
DEFAULT_MAX_HANDLERS = 32

RequestHandler = Callable[[Any], Any]
NotificationHandler = Callable[[Any], None]
Fallback = Callable[[str, Any], None]


class ConnectionClosed(Exception):
    """The peer's output ended (or the connection was closed) before an answer came."""


class RequestTimeout(Exception):
    """No answer within the wait's deadline."""


_SETTLING = threading.Lock()  # settle and add_done_callback agree on whether the answer is in


@dataclass
class Pending:
    """One outgoing request awaiting its answer."""

    id: int
    method: str
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _result: Any = field(default=None, repr=False)
    _error: BaseException | None = field(default=None, repr=False)
    _callbacks: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        with _SETTLING:
            if self._done.is_set():
                return
            self._result, self._error = result, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback()` once the answer is in (at once when it is already): on the thread that settles it."""
        with _SETTLING:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float) -> Any:
        """The result; RpcError for an error reply, ConnectionClosed, or RequestTimeout after `timeout` s."""
        if not self._done.wait(timeout):
            raise RequestTimeout(f"{self.method} (id {self.id}) got no answer within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self._result


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
        name: str = "peer",
    ) -> None:
        # readline on a raw stream reads byte by byte: buffer it
        self._reader: IO[bytes] = reader if isinstance(reader, io.BufferedIOBase) else io.BufferedReader(
            reader, 1 << 16)  # type: ignore[type-var]
        self._writer = writer
        self.handlers: dict[str, RequestHandler] = dict(handlers or {})
        self.notifications: dict[str, NotificationHandler] = dict(notifications or {})
        self.fallback = fallback
        self._log = log or logs.logger("mcp_agent_kit.acp").warning
        self._close_reason = close_reason
        self._on_close = on_close
        self._trace = trace
        self.max_line, self.max_junk, self.name = max_line, max_junk, name
        self._slots = threading.BoundedSemaphore(max_handlers)
        self._write_lock = threading.Lock()
        self._pending: dict[int, Pending] = {}
        self._pending_lock = threading.Lock()
        self._ids = itertools.count(0)
        self._thread: threading.Thread | None = None
        self.closed = threading.Event()
        self.close_message = ""
        self.junk_lines = 0
        self.oversize_lines = 0

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> Connection:
        """Start the reader thread (once); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._read_loop, name=f"acp-{self.name}-reader", daemon=True)
            self._thread.start()
        return self

    def close(self, reason: str = "connection closed") -> None:
        """Close our output (the peer sees end of input) and fail every pending request."""
        if self._write_lock.acquire(timeout=1.0):  # a write blocked on a full pipe must not block the close
            try:
                with contextlib.suppress(OSError, ValueError):
                    self._writer.close()
            finally:
                self._write_lock.release()
        self.fail_pending(ConnectionClosed(reason))

    def join(self, timeout: float) -> bool:
        """Wait at most `timeout` s for the reader to reach end of input; whether it did."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.closed.is_set()

    def fail_pending(self, error: BaseException) -> None:
        """Settle every pending request with `error` (end of input, a crash, a timeout of the whole peer)."""
        with self._pending_lock:
            pending, self._pending = list(self._pending.values()), {}
        for item in pending:
            item.settle(error=error)

    # -- outgoing ----------------------------------------------------------------------------
    def send_request(self, method: str, params: Any = None) -> Pending:
        """Send a request now; the answer arrives on the returned Pending."""
        pending = Pending(next(self._ids), method)
        with self._pending_lock:
            if self.closed.is_set():
                pending.settle(error=ConnectionClosed(self.close_message or f"{self.name} has closed its output"))
                return pending
            self._pending[pending.id] = pending
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": pending.id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._write(message)
        except ConnectionClosed as exc:
            self._forget(pending.id)
            pending.settle(error=exc)
        return pending

    def request(self, method: str, params: Any = None, *, timeout: float) -> Any:
        """Send a request and wait at most `timeout` s for its result (see Pending.wait)."""
        pending = self.send_request(method, params)
        try:
            return pending.wait(timeout)
        finally:
            self._forget(pending.id)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (ConnectionClosed when the peer's input is gone)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    def _forget(self, request_id: int) -> None:
        with self._pending_lock:
            self._pending.pop(request_id, None)

    def _write(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        if self._trace:
            self._trace("out", message)
        with self._write_lock:
            try:
                self._writer.write(data)
                self._writer.flush()
            except (OSError, ValueError) as exc:  # broken pipe, or closed by us
                raise ConnectionClosed(f"cannot write to {self.name}: {exc}") from None

    # -- incoming ----------------------------------------------------------------------------
    def _read_loop(self) -> None:
        try:
            while True:
                line = self._reader.readline(self.max_line + 1)
                if not line:
                    break
                if len(line) > self.max_line and not line.endswith(b"\n"):
                    self._drop_long_line(len(line))
                    continue
                if self._junk_over_cap(line):
                    break
        except (OSError, ValueError) as exc:
            self._log(f"{self.name}: reading its output failed: {exc}")
        finally:
            self._finish()

    def _drop_long_line(self, size: int) -> None:
        while True:
            chunk = self._reader.readline(MIB)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        self.oversize_lines += 1
        self._log(f"{self.name}: dropped a {size}-byte line (over the {self.max_line}-byte line limit)")

    def _junk_over_cap(self, line: bytes) -> bool:
        """Handle one line; True once the junk cap is passed (the loop then stops)."""
        text = line.strip()
        if not text:
            return False
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if isinstance(message, dict) and (isinstance(message.get("method"), str) or "id" in message):
            self._route(message)
            return False
        self.junk_lines += 1
        shown = text[:200].decode("utf-8", "replace")
        self._log(f"{self.name}: skipped a line that is not a JSON-RPC message: {shown!r}")
        if self.junk_lines > self.max_junk:
            self.close_message = f"{self.name} wrote more than {self.max_junk} lines that are not JSON-RPC to stdout"
            self._log(self.close_message)
            return True
        return False

    def _route(self, message: dict[str, Any]) -> None:
        if self._trace:
            self._trace("in", message)
        method = message.get("method")
        if isinstance(method, str):  # the peer's request or notification, whatever its id
            if "id" in message:
                self._incoming_request(message["id"], method, message.get("params"))
            else:
                self._incoming_notification(method, message.get("params"))
            return
        if "method" in message and "id" in message:
            self._answer(message["id"], error=RpcError(wire.INVALID_REQUEST, "method must be a string"))
            return
        self._incoming_response(message)

    def _incoming_response(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        with self._pending_lock:
            pending = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if pending is None:
            self._log(f"{self.name}: a response to no pending request of ours (id {request_id!r}) was ignored")
            return
        error = message.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            code = code if isinstance(code, int) else wire.INTERNAL_ERROR
            pending.settle(error=RpcError.described(code, text if isinstance(text, str) else str(error),
                                                    error.get("data") if isinstance(error, dict) else None,
                                                    name=wire.error_name(code)))
        else:
            pending.settle(result=message.get("result"))

    def _incoming_notification(self, method: str, params: Any) -> None:
        handler = self.notifications.get(method)
        try:
            if handler is not None:
                handler(params)
            elif self.fallback is not None:
                self.fallback(method, params)
        except Exception as exc:  # a bad handler must not stop the reader
            self._log(f"{self.name}: handling notification {method} failed: {type(exc).__name__}: {exc}")

    def _incoming_request(self, request_id: Any, method: str, params: Any) -> None:
        handler = self.handlers.get(method)
        if handler is None:
            self._answer(request_id, error=RpcError(wire.METHOD_NOT_FOUND, f"method not found: {method}"))
            return
        if not self._slots.acquire(blocking=False):
            self._answer(request_id, error=RpcError(wire.INTERNAL_ERROR, "too many requests at once"))
            return
        threading.Thread(target=self._run_handler, args=(handler, request_id, method, params),
                         name=f"acp-{self.name}-{method}", daemon=True).start()

    def _run_handler(self, handler: RequestHandler, request_id: Any, method: str, params: Any) -> None:
        try:
            try:
                result = handler(params)
            except RpcError as exc:
                self._answer(request_id, error=exc)
            except Exception as exc:
                self._log(f"{self.name}: handler for {method} failed: {type(exc).__name__}: {exc}")
                self._answer(request_id, error=RpcError(wire.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
            else:
                self._answer(request_id, result=result)
        finally:
            self._slots.release()

    def _answer(self, request_id: Any, result: Any = None, error: RpcError | None = None) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            reply["error"] = error.to_error()
        else:
            reply["result"] = result
        try:
            self._write(reply)
        except ConnectionClosed as exc:
            self._log(f"{self.name}: could not answer request {request_id!r}: {exc}")

    def _finish(self) -> None:
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
