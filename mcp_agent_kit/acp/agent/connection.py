"""acp.agent.connection: the agent's end of the stdio pipe — a Connection declared strict.

A client is expected to speak JSON-RPC, so on the agent side a line that is not a message is the
client's mistake and gets the error JSON-RPC prescribes, with `id: null` when the id cannot be
read: -32700 for a line that is not JSON, -32600 for JSON that is not a valid message (not an
object, `jsonrpc` not "2.0", `params` not an object, a bad id) and for a line over the size
limit; a line that claims to be a response is never answered. The agent never gives up on such
lines (no junk cap); it keeps serving the next line. `on_request` (see acp.connection) sees each
request on the reader thread, in order with the notifications (so a `session/cancel` right behind
a `session/prompt` finds the prompt), and `in_flight` lets the agent finish the requests still
being answered after the client closed its end.
Rules: a named configuration only (the strict line policy of wire.peer); imports acp.connection and wire.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

from mcp_agent_kit.acp.connection import Connection
from mcp_agent_kit.wire.peer import STRICT_JSONRPC


class AgentConnection(Connection):
    """Connection with client-side input treated strictly: every unusable line is answered, none is fatal."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes], *,
                 on_request: Callable[[str, Any], None] | None = None, **options: Any) -> None:
        """on_request(method, params) runs on the reader thread as each request arrives, before its
        handler thread starts — so it is ordered with the notifications around it."""
        super().__init__(reader, writer, policy=STRICT_JSONRPC, on_request=on_request, **options)
