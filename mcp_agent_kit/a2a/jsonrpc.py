"""jsonrpc: the A2A JSON-RPC 2.0 binding, sans-IO — one request body in, one reply (or a stream) out.

Order of checks: parse (-32700) → envelope (-32600) → A2A-Version (-32009) → method (-32601) → params
(-32602 and the A2A errors). Errors are JSON-RPC error objects carrying ErrorInfo details; the transport
always sends them with HTTP 200. Rules: no sockets, no threads; the engine does the work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from mcp_agent_kit.a2a.protocol import A2AError, check_version
from mcp_agent_kit.a2a.service import PUSH_METHODS, A2AService
from mcp_agent_kit.wire import jsonrpc

log = logging.getLogger("mcp_agent_kit.a2a")
Operation = Callable[[A2AService, str, dict[str, Any]], Any]


def _push(method: str) -> Operation:
    return lambda e, o, p: e.push_config(method, o, p)


def _extended_card(engine: A2AService, owner: str, params: dict[str, Any]) -> Any:
    raise A2AError("UnsupportedOperation", "This agent has no extended agent card")


# method -> (operation, answers with a stream)
METHODS: dict[str, tuple[Operation, bool]] = {
    "SendMessage": (lambda e, o, p: e.send(o, p, stream=False), False),
    "SendStreamingMessage": (lambda e, o, p: e.send(o, p, stream=True), True),
    "GetTask": (lambda e, o, p: e.get(o, p), False),
    "ListTasks": (lambda e, o, p: e.list_tasks(o, p), False),
    "CancelTask": (lambda e, o, p: e.cancel(o, p), False),
    "SubscribeToTask": (lambda e, o, p: e.subscribe(o, p), True),
    **{method: (_push(method), False) for method in PUSH_METHODS},
    "GetExtendedAgentCard": (_extended_card, False),
}


class Reply:
    """One answer: `body` (a JSON-RPC message) or `stream` (StreamResponse dicts for request `id`)."""

    __slots__ = ("body", "id", "stream")

    def __init__(
        self, body: dict[str, Any] | None = None, stream: Iterator[dict[str, Any]] | None = None, id_: Any = None
    ) -> None:
        self.body = body
        self.stream = stream
        self.id = id_


def error(id_: Any, exc: A2AError) -> Reply:
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "error": exc.rpc_error()}
    return Reply(reply)


def handle(engine: A2AService, body: bytes, version: str | None, owner: str) -> Reply:
    incoming = jsonrpc.decode(body)
    if incoming.kind == "invalid":
        reply = dict(incoming.reply or {})
        reply.setdefault("id", None)
        return Reply(reply)
    id_ = incoming.id
    if incoming.kind != "request":
        return error(id_, A2AError("InvalidRequest", "Invalid Request: A2A calls are requests with an id"))
    try:
        check_version(version)
        method = str(incoming.message["method"])
        entry = METHODS.get(method)
        if entry is None:
            raise A2AError("MethodNotFound", detail=method)
        operation, streams = entry
        result = operation(engine, owner, incoming.message.get("params") or {})
    except A2AError as exc:
        return error(id_, exc)
    except Exception as exc:
        log.exception("A2A %s failed", incoming.message.get("method"))
        return error(id_, A2AError("Internal", detail=type(exc).__name__))
    if streams:
        return Reply(stream=result, id_=id_)
    return Reply({"jsonrpc": "2.0", "id": id_, "result": result})


def stream_event(id_: Any, event: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": event}


def stream_error(id_: Any, exc: A2AError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": exc.rpc_error()}
