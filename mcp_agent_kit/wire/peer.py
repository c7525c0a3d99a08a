"""peer: the sans-IO half of a JSON-RPC 2.0 peer over lines, for either role (server or client, agent or editor).

It classifies one line by a declared LinePolicy (request, notification, response, or invalid with the
reply JSON-RPC prescribes: -32700 for a line that is not JSON, -32600 for JSON that is not a valid
message, the id left out (MCP) or null (JSON-RPC, ACP) when it cannot be read), keeps the table of our
requests awaiting answers (ids out, each response routed to its waiter through the declared
`outcome`), builds the replies, and holds the bounds (line bytes, pending requests, junk lines).

Two policies: strict, for a peer serving clients (every unusable line is answered, none is fatal), and
lenient, for a peer reading agents or servers (unusable lines are skipped, up to a junk cap; `loose`
also routes messages that break JSON-RPC's letter but not its sense, as agents write them).

Rules: no I/O, no threads, no locks: its owner (the line driver) serialises expect/take_all; imports
only wire.jsonrpc.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from mcp_agent_kit.wire.jsonrpc import INVALID_REQUEST, Id, Incoming, RpcError, classify, decode, error_reply

Outcome = Callable[[dict[str, Any]], tuple[Any, BaseException | None]]
"""A response message -> (result, error) for its waiter."""


class Waiter(Protocol):
    """Whoever waits for the answer to one of our requests."""

    def settle(self, result: Any = None, error: BaseException | None = None) -> None: ...


W = TypeVar("W", bound=Waiter)


def decode_loose(line: bytes) -> Incoming:
    """A line as agents' output is read: a valid message as `jsonrpc.decode` classifies it; besides,
    any object with a string method is a request (with an id of any kind) or a notification, and any
    other object with an id a response. A non-string method with an id is answered -32600; the rest is
    junk (kind "invalid" with no reply). NaN and Infinity are read, as Python's json writes them."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return Incoming("invalid", {})
    if type(value) is not dict:
        return Incoming("invalid", {})
    incoming = classify(value)
    if incoming.kind != "invalid":
        return incoming
    method = value.get("method")
    if isinstance(method, str):
        return Incoming("request" if "id" in value else "notification", value)
    if "id" not in value:
        return Incoming("invalid", value)
    if "method" in value:
        return Incoming("invalid", value, {"jsonrpc": "2.0", "id": value["id"],
                                           "error": {"code": INVALID_REQUEST, "message": "method must be a string"}})
    return Incoming("response", value)


@dataclass(frozen=True, slots=True)
class LinePolicy:
    """What a peer does with the lines it reads: a declared choice per role, never an override."""

    answer: bool  # answer an unusable line with its error (strict) or skip it (lenient)
    loose: bool = False  # route what agents write (decode_loose) rather than only valid JSON-RPC
    max_junk: int | None = None  # give up reading after this many skipped lines (None: never)
    null_id: bool = False  # an unreadable id is answered as "id": null (JSON-RPC) rather than left out (MCP)
    answer_responses: bool = True  # a bad line that claims to be a response is answered too
    oversize: Literal["answer", "skip", "end"] = "skip"  # a line over the limit: answered, skipped, or the end
    too_long: str = "Invalid Request: message exceeds {limit} bytes"

    @property
    def classify(self) -> Callable[[bytes], Incoming]:
        return decode_loose if self.loose else decode


STRICT_MCP = LinePolicy(answer=True, oversize="answer")
"""An MCP server reading its client: every bad line answered, the id left out when unreadable."""
STRICT_JSONRPC = LinePolicy(answer=True, null_id=True, answer_responses=False, oversize="answer",
                            too_long="Invalid Request: a line over the {limit}-byte limit was dropped")
"""A JSON-RPC peer serving a client (an ACP agent): every bad line but a response answered, id null."""
LENIENT_AGENT = LinePolicy(answer=True, loose=True, max_junk=1000)
"""Reading an agent: its junk skipped up to the cap; only a request with a bad method is answered."""
LENIENT_SERVER = LinePolicy(answer=False, oversize="end")
"""An MCP client reading its server: bad lines skipped, no cap; a line over the limit ends the reading."""


class JsonRpcPeer(Generic[W]):
    """One peer's protocol state: its line policy and limits, and our requests awaiting answers."""

    __slots__ = ("_ids", "_pending", "classify", "junk", "max_line", "max_pending", "outcome", "policy")

    def __init__(self, policy: LinePolicy, outcome: Outcome, *, max_line: int, max_pending: int | None = None,
                 ids: Iterator[Id] | None = None) -> None:
        self.policy, self.outcome, self.max_line, self.max_pending = policy, outcome, max_line, max_pending
        self.classify = policy.classify
        self.junk = 0  # unusable lines read so far
        self._ids: Iterator[Id] = ids if ids is not None else itertools.count(0)
        self._pending: dict[Id, W] = {}

    # -- our requests ------------------------------------------------------------------------
    def new_id(self) -> Id:
        return next(self._ids)

    def expect(self, id_: Id, waiter: W) -> None:
        """Await the answer to request `id_` (RpcError when max_pending requests already wait)."""
        if self.max_pending is not None and len(self._pending) >= self.max_pending:
            raise RpcError.internal_error(f"{self.max_pending} requests are already awaiting answers")
        self._pending[id_] = waiter

    def forget(self, id_: Id) -> None:
        self._pending.pop(id_, None)

    def take_all(self) -> list[W]:
        """Every waiter, the table emptied (the peer ended: the caller fails them)."""
        waiters, self._pending = list(self._pending.values()), {}
        return waiters

    def route(self, message: dict[str, Any]) -> bool:
        """Settle the waiter of a response through `outcome`; False when no request of ours has its id."""
        id_ = message.get("id")
        waiter = self._pending.pop(id_, None) if type(id_) in (int, str) else None  # type: ignore[arg-type]
        if waiter is None:
            return False
        result, error = self.outcome(message)
        waiter.settle(result, error)
        return True

    # -- bad input ---------------------------------------------------------------------------
    def bad_line(self, incoming: Incoming) -> tuple[dict[str, Any] | None, bool]:
        """(the reply to an unusable line, or None; whether reading must stop: past the junk cap)."""
        self.junk += 1
        reply, policy = incoming.reply, self.policy
        if reply is None or not policy.answer:
            return None, policy.max_junk is not None and self.junk > policy.max_junk
        if not policy.answer_responses and ("result" in incoming.message or "error" in incoming.message):
            return None, False
        return self._unread_id(reply), False

    def too_long(self) -> dict[str, Any] | None:
        """The reply to a line over max_line (None when the policy skips it)."""
        if self.policy.oversize != "answer":
            return None
        return self._unread_id(error_reply(None, INVALID_REQUEST, self.policy.too_long.format(limit=self.max_line)))

    def _unread_id(self, reply: dict[str, Any]) -> dict[str, Any]:
        if self.policy.null_id and "id" not in reply:
            return {"jsonrpc": "2.0", "id": None, "error": reply["error"]}
        return reply


def answer(id_: Any, result: Any = None, error: RpcError | None = None) -> dict[str, Any]:
    """A reply to request `id_` (kept as the request gave it, null included)."""
    if error is not None:
        return {"jsonrpc": "2.0", "id": id_, "error": error.to_error()}
    return {"jsonrpc": "2.0", "id": id_, "result": result}
