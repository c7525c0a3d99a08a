"""acp.agent_connection: the agent's end of the stdio pipe — a Connection that answers bad input instead of skipping it.

A client is expected to speak JSON-RPC, so on the agent side a line that is not a message is the
client's mistake and gets the error JSON-RPC prescribes, with `id: null` when the id cannot be
read: -32700 for a line that is not JSON, -32600 for JSON that is not a valid message (not an
object, `jsonrpc` not "2.0", `params` not an object, a bad id) and for a line over the size
limit. The agent never gives up on such lines (no junk cap); it keeps serving the next line. An
`on_request` hook sees each request on the reader thread, in order with the notifications
(so a `session/cancel` right behind a `session/prompt` finds the prompt), and `in_flight` counts
the requests not yet answered, so the agent can finish them after the client closed its end.
Rules: only the classification differs from acp.connection (routing, handlers, writes are its);
imports `wire` and acp.connection only.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.acp.connection import Connection
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire import jsonrpc


class AgentConnection(Connection):
    """Connection with client-side input treated strictly: every unusable line is answered, none is fatal."""

    def __init__(self, *args: Any, on_request: Callable[[str, Any], None] | None = None, **options: Any) -> None:
        """on_request(method, params) runs on the reader thread as each request arrives, before its
        handler thread starts — so it is ordered with the notifications around it."""
        options.setdefault("max_junk", sys.maxsize)
        super().__init__(*args, **options)
        self._on_request = on_request
        self._count_lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        """Requests read whose handler has not yet written its answer (one refused as "too many
        requests at once" stays counted: waits on this count must be bounded)."""
        return self._in_flight

    def _count(self, step: int) -> None:
        with self._count_lock:
            self._in_flight += step

    def _incoming_request(self, request_id: Any, method: str, params: Any) -> None:
        if self._on_request is not None:
            self._on_request(method, params)
        if method in self.handlers:
            self._count(1)  # on the reader thread, before the handler thread exists
        super()._incoming_request(request_id, method, params)

    def _run_handler(self, *args: Any) -> None:
        try:
            super()._run_handler(*args)  # runs the handler and writes its answer
        finally:
            self._count(-1)

    def _junk_over_cap(self, line: bytes) -> bool:
        text = line.strip()
        if not text:
            return False
        incoming = jsonrpc.decode(text)
        if incoming.kind != "invalid":
            self._route(incoming.message)
            return False
        self.junk_lines += 1
        if incoming.reply is not None and "result" not in incoming.message and "error" not in incoming.message:
            self._reply(incoming.reply)  # never answer something that claims to be a response
        return False

    def _drop_long_line(self, size: int) -> None:
        super()._drop_long_line(size)
        self._reply(jsonrpc.error_reply(None, wire.INVALID_REQUEST,
                                        f"Invalid Request: a line over the {self.max_line}-byte limit was dropped"))

    def _reply(self, reply: dict[str, Any]) -> None:
        reply = {"jsonrpc": "2.0", "id": reply.get("id"), "error": reply["error"]}  # JSON-RPC: id null when unread
        self._log(f"{self.name}: answered bad input with error {reply['error']['code']}: {reply['error']['message']}")
        try:
            self._write(reply)
        except Exception as exc:  # the client is gone: nothing to answer
            self._log(f"{self.name}: could not answer bad input: {exc}")
