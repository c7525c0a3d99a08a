"""rest: the A2A HTTP+JSON binding (spec §11), sans-IO — a route table onto the same engine operations.

Paths are relative to the binding's base path (no `/v1`). Success bodies are the bare response
messages; errors are AIP-193 `google.rpc.Status` bodies with the error table's HTTP status; streams
carry bare StreamResponse objects. Pre-1.0 routes (`/a2a/tasks/send`, ...) get a 404 naming their
v1.0 replacement and run nothing. Rules: no sockets; the transport owns headers and SSE framing.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

from mcp_agent_kit.a2a.protocol import A2AError, check_version
from mcp_agent_kit.a2a.service import A2AService

log = logging.getLogger("mcp_agent_kit.a2a")
Handler = Callable[[A2AService, str, dict[str, Any]], Any]


def _send(e: A2AService, o: str, p: dict[str, Any]) -> Any:
    return e.send(o, p, stream=False)


def _stream(e: A2AService, o: str, p: dict[str, Any]) -> Any:
    return e.send(o, p, stream=True)


def _push(method: str) -> Handler:
    def handler(e: A2AService, o: str, p: dict[str, Any]) -> Any:
        params = dict(p)
        if "id" in params:  # the path's {id} is the task; a config id travels as `configId`
            params["taskId"] = params.pop("id")
        if "configId" in params:
            params["id"] = params.pop("configId")
        return e.push_config(method, o, params)
    return handler


def _get(e: A2AService, o: str, p: dict[str, Any]) -> Any:
    return e.get(o, p)


def _list(e: A2AService, o: str, p: dict[str, Any]) -> Any:
    return e.list_tasks(o, p)


def _cancel(e: A2AService, o: str, p: dict[str, Any]) -> Any:
    return e.cancel(o, p)


def _subscribe(e: A2AService, o: str, p: dict[str, Any]) -> Any:
    return e.subscribe(o, p)


def _extended(e: A2AService, o: str, p: dict[str, Any]) -> Any:
    raise A2AError("UnsupportedOperation", "This agent has no extended agent card")


_ID = r"(?P<id>[^/:]+)"
# (HTTP method, path pattern, handler, takes a JSON body, streams)
ROUTES: list[tuple[str, re.Pattern[str], Handler, bool, bool]] = [
    ("POST", re.compile(r"/message:send"), _send, True, False),
    ("POST", re.compile(r"/message:stream"), _stream, True, True),
    ("GET", re.compile(r"/tasks"), _list, False, False),
    ("GET", re.compile(rf"/tasks/{_ID}"), _get, False, False),
    ("POST", re.compile(rf"/tasks/{_ID}:cancel"), _cancel, True, False),
    ("POST", re.compile(rf"/tasks/{_ID}:subscribe"), _subscribe, False, True),
    ("GET", re.compile(rf"/tasks/{_ID}:subscribe"), _subscribe, False, True),
    ("POST", re.compile(rf"/tasks/{_ID}/pushNotificationConfigs"), _push("CreateTaskPushNotificationConfig"),
     True, False),
    ("GET", re.compile(rf"/tasks/{_ID}/pushNotificationConfigs"), _push("ListTaskPushNotificationConfigs"),
     False, False),
    ("GET", re.compile(rf"/tasks/{_ID}/pushNotificationConfigs/(?P<configId>[^/]+)"),
     _push("GetTaskPushNotificationConfig"), False, False),
    ("DELETE", re.compile(rf"/tasks/{_ID}/pushNotificationConfigs/(?P<configId>[^/]+)"),
     _push("DeleteTaskPushNotificationConfig"), False, False),
    ("GET", re.compile(r"/extendedAgentCard"), _extended, False, False),
]
_INT_PARAMS = frozenset({"historyLength", "pageSize"})

_BODY = '{{"message": {{"messageId": "...", "role": "ROLE_USER", "parts": [{{"text": "..."}}]}}}}'
# Pre-1.0 A2A routes (served under /a2a by older kits) -> their v1.0 replacement; {rpc} and {rest} are our URLs.
LEGACY_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    (
        "POST",
        re.compile(r"/a2a/tasks/send"),
        "SendMessage at POST {rpc}, or REST POST {rest}/message:send, body " + _BODY,
    ),
    (
        "POST",
        re.compile(r"/a2a/tasks/sendSubscribe"),
        "SendStreamingMessage at POST {rpc}, or REST POST {rest}/message:stream, body " + _BODY,
    ),
    (
        "POST",
        re.compile(rf"/a2a/tasks/{_ID}/cancel"),
        "CancelTask at POST {rpc}, or REST POST {rest}/tasks/{id}:cancel",
    ),
    ("GET", re.compile(rf"/a2a/tasks/{_ID}"), "GetTask at POST {rpc}, or REST GET {rest}/tasks/{id}"),
]


class RestReply:
    __slots__ = ("body", "status", "stream")

    def __init__(self, status: int, body: dict[str, Any] | None = None, stream: Iterator[Any] | None = None) -> None:
        self.status = status
        self.body = body
        self.stream = stream


def failure(exc: A2AError) -> RestReply:
    return RestReply(exc.status, exc.rest_error())


def legacy_pointer(method: str, path: str, rpc_url: str, rest_url: str) -> RestReply | None:
    """A 404 naming the v1.0 replacement of a pre-1.0 route (a full request path), or None."""
    for verb, pattern, replacement in LEGACY_ROUTES:
        found = pattern.fullmatch(path)
        if verb == method and found is not None:
            text = replacement.format(rpc=rpc_url, rest=rest_url, **found.groupdict())
            text = f"{method} {path} is a pre-1.0 A2A route; A2A v1.0 uses JSON-RPC method {text}"
            return failure(A2AError("MethodNotFound", text))
    return None


def _query(pairs: dict[str, list[str]]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for key, values in pairs.items():
        value = ",".join(values)
        if key in _INT_PARAMS:
            if not value.isdigit():
                raise A2AError(
                    "InvalidParams",
                    detail=f"{key} must be a non-negative integer",
                    violations=[(key, "must be a non-negative integer")],
                )
            params[key] = int(value)
        else:
            params[key] = value
    return params


def route(
    engine: A2AService,
    method: str,
    path: str,
    query: dict[str, list[str]],
    body: bytes,
    version: str | None,
    owner: str,
) -> RestReply:
    allowed = False
    for verb, pattern, handler, takes_body, streams in ROUTES:
        found = pattern.fullmatch(path)
        if found is None:
            continue
        allowed = True
        if verb != method:
            continue
        try:
            check_version(version)
            params = _query(query)
            if takes_body and body.strip():
                try:
                    payload = json.loads(body)
                except ValueError as exc:
                    raise A2AError("ParseError", detail=f"{exc}") from None
                if not isinstance(payload, dict):
                    raise A2AError("InvalidRequest", detail="the body must be a JSON object")
                params.update(payload)
            params.update(found.groupdict())
            result = handler(engine, owner, params)
        except A2AError as exc:
            return failure(exc)
        except Exception as exc:
            log.exception("A2A REST %s %s failed", method, path)
            return failure(A2AError("Internal", detail=type(exc).__name__))
        return RestReply(200, stream=result) if streams else RestReply(200, result)
    if allowed:
        refused = A2AError("MethodNotFound", f"{method} is not allowed on {path}").rest_error()
        refused["error"]["code"] = 405  # AIP-193: the body's code is the HTTP status
        return RestReply(405, refused)
    return failure(A2AError("MethodNotFound", f"No such resource: {path}"))
