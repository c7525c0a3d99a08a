"""stdio: newline-delimited JSON-RPC over a byte stream pair, serving one Dispatcher.

One leader thread reads a line and handles it inline, so a fast call pays no thread hand-off.
A watchdog promotes a fresh leader when the current one has spent more than a couple of
milliseconds on one message (a slow tool, or a tool waiting for the client), so a slow tool
never blocks the next request; the old leader retires when its work is done. Rules: stdout carries nothing but
whole JSON-RPC lines (the real fd 1 is kept private and print() goes to stderr); lines are
bounded; EOF or SIGTERM lets in-flight work finish before exit 0. Protocol logic lives in the
dispatcher, never here.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from mcp_agent_kit.core.context import CancelFlag
from mcp_agent_kit.core.dispatcher import Connection, Dispatcher
from mcp_agent_kit.logs import log_to_stderr, logger
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import INVALID_REQUEST, RpcError
from mcp_agent_kit.wire.reply import encode_reply

if TYPE_CHECKING:
    from concurrent.futures import Future

DEFAULT_MAX_LINE = 4 * 1024 * 1024
STOP_POLL_S = 0.1  # how often the main thread looks for a stop request


class StdioOutbox:
    """Notifications and server→client requests for one request on a stdio stream."""

    def __init__(self, transport: StdioTransport) -> None:
        self._transport = transport

    def notify(self, message: dict[str, Any]) -> None:
        self._transport.write(message)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self._transport.request(method, params)


class StdioTransport:
    """Serve a dispatcher on a binary reader and writer (the process's stdio by default)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        reader: BinaryIO | None = None,
        writer: BinaryIO | None = None,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE,
        max_threads: int = 64,
        request_timeout: float = 300.0,
    ) -> None:
        self.dispatcher = dispatcher
        self.max_line_bytes = max_line_bytes
        self.max_threads = max_threads
        self.request_timeout = request_timeout
        self.conn = Connection()
        self._reader = reader
        self._writer = writer
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self.promote_after = 0.002
        self.idle_tick = 0.05
        self._workers: set[_Worker] = set()
        self._leader: _Worker | None = None
        self._stop_watch = threading.Event()
        self._stop_requested = False
        self._eof = False
        self._drained = threading.Condition(self._state_lock)
        self._pending: dict[Any, Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._outbox = StdioOutbox(self)
        self._unsubscribe = dispatcher.registry.on_change(self._registry_changed)

    # ---- output ----------------------------------------------------------------------------
    def write(self, message: dict[str, Any]) -> None:
        data = encode_reply(message) + b"\n"
        assert self._writer is not None
        with self._write_lock:
            self._writer.write(data)
            self._writer.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a server→client request and wait for the client's reply (legacy era)."""
        from concurrent.futures import Future  # lazily: it imports logging, and few servers ask the client

        id_ = f"srv-{next(self._ids)}"
        future: Future[dict[str, Any]] = Future()
        with self._state_lock:
            if self._eof:
                raise RpcError(jsonrpc.INTERNAL_ERROR, "the client has closed the connection")
            self._pending[id_] = future
        self._promote_if_leader()
        try:
            self.write(jsonrpc.request(id_, method, params))
            return future.result(timeout=self.request_timeout)
        except TimeoutError as exc:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"the client did not answer {method} in time") from exc
        finally:
            with self._state_lock:
                self._pending.pop(id_, None)

    def _registry_changed(self, kind: str, uri: str | None) -> None:
        if self.conn.era != mcp.LEGACY or not self.conn.initialized:
            return
        if uri is None and kind in mcp.LIST_CHANGED:
            self.write(jsonrpc.notification(mcp.LIST_CHANGED[kind]))
        elif uri is not None and uri in self.conn.subscriptions:
            self.write(jsonrpc.notification("notifications/resources/updated", {"uri": uri}))

    # ---- input -------------------------------------------------------------------------------
    def _read_line(self) -> bytes | None:
        """One line without its newline; None at EOF. Over-long lines are skipped whole."""
        assert self._reader is not None
        line = self._reader.readline(self.max_line_bytes + 1)
        if not line:
            return None
        if len(line) > self.max_line_bytes and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = self._reader.readline(self.max_line_bytes + 1)
            self.write(
                jsonrpc.error_reply(
                    None, INVALID_REQUEST, f"Invalid Request: message exceeds {self.max_line_bytes} bytes"
                )
            )
            return b""
        return line.rstrip(b"\r\n")

    def _lead(self, worker: _Worker) -> None:
        """Read and handle lines while this worker is the leader.

        Only the leader reads, and it marks itself busy before it lets go of the read lock, so
        the watchdog and the drain at shutdown see every line that is being handled. The busy
        flag and counter are this worker's own (plain attribute writes, no lock per line).
        """
        while True:
            with self._read_lock:
                if self._leader is not worker or self._eof:
                    return
                line = self._read_line()
                if line is not None:
                    worker.seq += 1
                    worker.busy = True
            if line is None:
                with self._state_lock:
                    self._finish_input()
                self._end_subscriptions()
                return
            try:
                if line.strip():
                    self._handle_line(line)
            except Exception:
                logger("mcp_agent_kit.stdio").exception("unexpected error while handling a line")
            finally:
                worker.busy = False
            if self._eof or self._leader is not worker:  # shutting down, or promoted away: retire
                with self._state_lock:
                    if self._leader is not worker:
                        self._workers.discard(worker)
                        return
                    self._drained.notify_all()

    def _busy(self) -> bool:
        """Is any worker handling a line? (call with _state_lock held)"""
        return any(worker.busy for worker in self._workers)

    def _promote(self) -> None:
        """Make a new leader (call with _state_lock held)."""
        if self._eof or len(self._workers) >= self.max_threads:
            return
        worker = _Worker()
        self._workers.add(worker)
        self._leader = worker
        thread = threading.Thread(target=self._lead, args=(worker,), name="mcp-stdio", daemon=True)
        worker.thread = thread
        thread.start()

    def _promote_if_leader(self) -> None:
        """A leader about to block (e.g. waiting for the client) hands over reading now."""
        with self._state_lock:
            leader = self._leader
            if leader is not None and leader.thread is threading.current_thread():
                self._promote()

    def _watch(self) -> None:
        """Promote a new leader when the current one has been on one message for a whole tick.

        It polls on its own clock (fast while lines flow, slow when idle) so the request path
        never has to wake it.
        """
        seen: tuple[_Worker | None, int, bool] = (None, -1, False)
        last_seq = -1
        while not self._stop_watch.wait(self.promote_after if last_seq >= 0 else self.idle_tick):
            with self._state_lock:
                leader = self._leader
                seq, started = (leader.seq, leader.busy) if leader else (0, False)
                if started and seen == (leader, seq, started):
                    self._promote()
            seen = (leader, seq, started)
            last_seq = seq if (seq != last_seq or started) else -1

    def _end_subscriptions(self) -> None:
        """Open subscriptions/listen requests never finish by themselves: end them at shutdown."""
        self.dispatcher.close()

    def _finish_input(self) -> None:
        """EOF (call with _state_lock held): fail pending client requests, wake the waiters."""
        self._eof = True
        self.dispatcher.end_connection(self.conn)  # the stream's 2025-11-25 tasks are cancelled and dropped
        for future in self._pending.values():
            future.set_exception(RpcError(jsonrpc.INTERNAL_ERROR, "the client closed the connection"))
        self._drained.notify_all()
        self._stop_watch.set()

    def _handle_line(self, line: bytes) -> None:
        incoming = jsonrpc.decode(line)
        if incoming.kind == "request":
            self._handle_request(incoming.message)
        elif incoming.kind == "invalid":
            assert incoming.reply is not None
            self.write(incoming.reply)
        elif incoming.kind == "response":
            with self._state_lock:
                future = self._pending.get(incoming.message["id"])
            if future is not None and not future.done():
                message = incoming.message
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    future.set_exception(
                        RpcError(int(error.get("code", -32603)), str(error.get("message", "client error")))
                    )
                else:
                    result = message["result"]
                    future.set_result(result if isinstance(result, dict) else {})
        else:  # a notification
            self.dispatcher.notification(incoming.message, self.conn)

    def _handle_request(self, message: dict[str, Any]) -> None:
        id_ = message["id"]
        cancel = CancelFlag()
        self.conn.inflight[id_] = cancel
        try:
            reply = self.dispatcher.handle(message, self.conn, self._outbox, cancel)
        finally:
            if self.conn.inflight.get(id_) is cancel:
                del self.conn.inflight[id_]
        if reply is not None:
            self.write(reply)

    # ---- lifecycle ---------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Ask serve() to stop reading and drain (safe from a signal handler: it only sets a flag)."""
        self._stop_requested = True

    def serve(self) -> int:
        """Serve until EOF or request_stop() (SIGTERM); in-flight requests finish first."""
        with self._state_lock:
            self._promote()
        threading.Thread(target=self._watch, name="mcp-stdio-watch", daemon=True).start()
        try:
            with self._state_lock:
                while not (self._eof and not self._busy()) and not self._stop_requested:
                    self._drained.wait(STOP_POLL_S)
            if self._stop_requested:
                self._stop_watch.set()
                self._end_subscriptions()
                with self._state_lock:
                    self._eof = True
                    while self._busy():
                        self._drained.wait(STOP_POLL_S)
        finally:
            self._unsubscribe()
        return 0

    def readers_alive(self) -> bool:
        return any(worker.thread is not None and worker.thread.is_alive() for worker in list(self._workers))


class _Worker:
    """One leader-capable thread and what it is working on."""

    __slots__ = ("busy", "seq", "thread")

    def __init__(self) -> None:
        self.seq = 0
        self.busy = False
        self.thread: threading.Thread | None = None


def serve_stdio(dispatcher: Dispatcher, before_exit: Callable[[], None] | None = None, **options: Any) -> int:
    """Serve on the process's stdin/stdout, keeping stray prints off the protocol stream.

    before_exit runs before the process is left with os._exit (see below)."""
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    log_to_stderr()
    transport = StdioTransport(dispatcher, sys.stdin.buffer, protocol_out, **options)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: transport.request_stop())
    code = transport.serve()
    if transport.readers_alive():
        # A reader is still blocked on stdin (we stopped on SIGTERM): the interpreter cannot
        # shut down cleanly around it, so flush and leave now. All replies were written.
        if before_exit is not None:
            before_exit()
        if "logging" in sys.modules:
            sys.modules["logging"].shutdown()
        sys.stderr.flush()
        os._exit(code)
    return code
