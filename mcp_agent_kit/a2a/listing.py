"""listing: ListTasks — filter checks, opaque cursor pagination and the response shape.

Rules: reads the store through `TaskStore.query` only (a2a.store); the caller holds the engine lock. The cursor is
base64url JSON of the last (status timestamp, id) returned, so pages stay stable while tasks change.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp_agent_kit.a2a.lifecycle import STATES
from mcp_agent_kit.a2a.messages import camel
from mcp_agent_kit.a2a.protocol import STATE_NUMBERS, A2AError, now_iso, parse_iso
from mcp_agent_kit.a2a.store import Query, TaskStore, view

DEFAULT_PAGE = 50
MAX_PAGE = 100


def _bad(field: str, why: str) -> A2AError:
    return A2AError("InvalidParams", detail=f"{field} {why}", violations=[(field, why)])


def encode_cursor(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def decode_cursor(token: str) -> tuple[str, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _bad("pageToken", "is not a token this server issued") from None
    if not (isinstance(raw, list) and len(raw) == 2 and all(isinstance(item, str) for item in raw)):
        raise _bad("pageToken", "is not a token this server issued")
    return raw[0], raw[1]


def _int(params: dict[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.isdigit():  # HTTP+JSON query strings
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(name, "must be a non-negative integer")
    return value


def _bool(params: dict[str, Any], name: str) -> bool:
    value = params.get(name)
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _bad(name, "must be a boolean")
    return value


def parse_query(owner: str, raw: dict[str, Any]) -> tuple[Query, int | None, bool]:
    params = camel(raw)
    size = _int(params, "pageSize") or DEFAULT_PAGE
    if size > MAX_PAGE:
        raise _bad("pageSize", f"must be at most {MAX_PAGE}")
    state = params.get("status")
    if isinstance(state, int) and not isinstance(state, bool):
        state = STATE_NUMBERS.get(state, state)
    if state in (None, "", "TASK_STATE_UNSPECIFIED", 0):
        state = None
    elif not isinstance(state, str) or state not in STATES:  # a dict or list is unhashable: never a lookup key
        raise _bad("status", f"must be a TASK_STATE_* name, got {state!r}")
    context = params.get("contextId")
    if context is not None and not isinstance(context, str):
        raise _bad("contextId", "must be a string")
    after = params.get("statusTimestampAfter")
    if after is not None:
        if not isinstance(after, str):
            raise _bad("statusTimestampAfter", "must be an RFC 3339 timestamp")
        try:
            after = now_iso(parse_iso(after))
        except ValueError as exc:
            raise _bad("statusTimestampAfter", f"must be an RFC 3339 timestamp with a zone ({exc})") from None
    token = params.get("pageToken")
    if token is not None and not isinstance(token, str):
        raise _bad("pageToken", "must be a string")
    cursor = decode_cursor(token) if token else None
    query = Query(owner, context or None, state, after, cursor, size + 1)
    return query, _int(params, "historyLength"), _bool(params, "includeArtifacts")


def list_tasks(store: TaskStore, owner: str, params: dict[str, Any]) -> dict[str, Any]:
    query, history_length, artifacts = parse_query(owner, params)
    found, total = store.query(query)
    size = query.limit - 1
    page = found[:size]
    more = len(found) > size
    return {
        "tasks": [view(task, history_length, artifacts) for task in page],
        "nextPageToken": encode_cursor((str(page[-1]["status"]["timestamp"]), page[-1]["id"])) if more else "",
        "pageSize": size,
        "totalSize": total,
    }
