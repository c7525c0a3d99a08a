"""stdio: newline-delimited JSON-RPC over a byte stream pair, serving one Dispatcher.

The kit's one line peer (line_peer.LinePeer, strict MCP line policy) reads with Leaders: one leader
thread reads a line and handles it inline, so a fast call pays no thread hand-off, and a fresh
leader takes over reading when one message takes more than a couple of milliseconds (a slow tool,
or a tool waiting for the client), so a slow tool never blocks the next request. Rules: stdout carries nothing but
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
from typing import Any, BinaryIO

from mcp_agent_kit.core.context import CancelFlag
from mcp_agent_kit.core.dispatcher import Connection, Dispatcher
from mcp_agent_kit.line_peer import Leaders, LinePeer, Pending, RequestTimeout
from mcp_agent_kit.logs import log_to_stderr, logger
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import RpcError
from mcp_agent_kit.wire.peer import STRICT_MCP, JsonRpcPeer
from mcp_agent_kit.wire.reply import encode_reply

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


def _outcome(message: dict[str, Any]) -> tuple[Any, BaseException | None]:
    """The client's answer to a server→client request: its result object, or its error as RpcError."""
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        return None, RpcError(int(error.get("code", -32603)), str(error.get("message", "client error")))
    result = message["result"]
    return (result if isinstance(result, dict) else {}), None


def _log(text: str) -> None:
    logger("mcp_agent_kit.stdio").warning(text, exc_info=sys.exc_info()[1] is not None)


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
        self._stop_requested = False
        self._outbox = StdioOutbox(self)
        peer: JsonRpcPeer[Pending] = JsonRpcPeer(STRICT_MCP, _outcome, max_line=max_line_bytes,
                                                 ids=map("srv-{}".format, itertools.count(1)))
        self.lines = LinePeer(reader or sys.stdin.buffer, writer or sys.stdout.buffer, peer, handle=self._handle,
                              notify=self._notify, encode=encode_reply, concurrency=Leaders(max_threads),
                              on_end=self._finish_input, log=_log, name="client", thread_name="mcp-stdio")
        self._unsubscribe = dispatcher.registry.on_change(self._registry_changed)

    def write(self, message: dict[str, Any]) -> None:
        self.lines.send(message)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a server→client request and wait for the client's reply (legacy era)."""
        id_ = self.lines.peer.new_id()
        pending = Pending(id_, method)
        if not self.lines.expect(id_, pending):
            raise RpcError(jsonrpc.INTERNAL_ERROR, "the client has closed the connection")
        try:
            self.write(jsonrpc.request(id_, method, params))
            result: dict[str, Any] = pending.wait(self.request_timeout)
            return result
        except RequestTimeout as exc:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"the client did not answer {method} in time") from exc
        finally:
            self.lines.forget(id_)

    def _registry_changed(self, kind: str, uri: str | None) -> None:
        if self.conn.era != mcp.LEGACY or not self.conn.initialized:
            return
        if uri is None and kind in mcp.LIST_CHANGED:
            self.write(jsonrpc.notification(mcp.LIST_CHANGED[kind]))
        elif uri is not None and uri in self.conn.subscriptions:
            self.write(jsonrpc.notification("notifications/resources/updated", {"uri": uri}))

    # ---- input -------------------------------------------------------------------------------
    def _handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        id_ = message["id"]
        cancel = CancelFlag()
        self.conn.inflight[id_] = cancel
        try:
            return self.dispatcher.handle(message, self.conn, self._outbox, cancel)
        finally:
            if self.conn.inflight.get(id_) is cancel:
                del self.conn.inflight[id_]

    def _notify(self, message: dict[str, Any]) -> None:
        self.dispatcher.notification(message, self.conn)

    def _finish_input(self) -> None:
        """EOF: the stream's 2025-11-25 tasks are cancelled and dropped, pending client requests fail,
        open subscriptions/listen requests (which never finish by themselves) end."""
        self.dispatcher.end_connection(self.conn)
        for pending in self.lines.take_all():
            pending.settle(error=RpcError(jsonrpc.INTERNAL_ERROR, "the client closed the connection"))
        self.dispatcher.close()

    # ---- lifecycle ---------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Ask serve() to stop reading and drain (safe from a signal handler: it only sets a flag)."""
        self._stop_requested = True

    def serve(self) -> int:
        """Serve until EOF or request_stop() (SIGTERM); in-flight requests finish first."""
        self.lines.start()
        try:
            if not self.lines.drain(lambda: self._stop_requested, STOP_POLL_S):
                self.lines.stop_reading()
                self.dispatcher.close()
                self.lines.drain(poll=STOP_POLL_S)
        finally:
            self._unsubscribe()
        return 0

    def readers_alive(self) -> bool:
        return self.lines.reading()


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
