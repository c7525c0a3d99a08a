"""Bearer tokens on every A2A route: only the exact token passes; near misses are 401.

A near miss is the token with a byte appended or prepended, a prefix of it, the right token under
another scheme, a wrong token, or none. The public agent card needs no token (A2A §8.2: discovery is
public; the extended card is the protected one). The routes are read from the server's own tables, so
a new route is covered without touching this file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from mcp_agent_kit.a2a import jsonrpc, rest
from mcp_agent_kit.a2a.http import CARD_PATHS, REST_PATH, RPC_PATH
from mcp_agent_kit.loader import load_target
from tests.a2a.conftest import METRICS, Live, call, start, user_message
from tests.auth_cases import NEAR_MISSES, OTHER, TOKEN


def concrete(pattern: re.Pattern[str]) -> str:
    """A request path matching one REST route's pattern (a task id and a config id filled in)."""
    path = pattern.pattern.replace(rest._ID, "task-1").replace("[^/]+", "config-1")
    assert pattern.fullmatch(path), path
    return REST_PATH + path


REST_ROUTES = [(verb, concrete(pattern)) for verb, pattern, *_ in rest.ROUTES]
RPC_METHODS = sorted(jsonrpc.METHODS)


@pytest.fixture(scope="module")
def guarded() -> Iterator[Live]:
    server = start(load_target(METRICS), tokens=[TOKEN, OTHER])
    yield Live(server)
    server.shutdown()
    server.server_close()


def headers(authorization: str) -> dict[str, str]:
    base = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    return {**base, "Authorization": authorization} if authorization else base


def test_the_route_tables_are_what_this_file_expects() -> None:
    assert len(REST_ROUTES) >= 12 and {verb for verb, _ in REST_ROUTES} == {"GET", "POST", "DELETE"}
    assert {"SendMessage", "GetTask", "ListTasks", "CancelTask", "GetExtendedAgentCard"} <= set(RPC_METHODS)


@pytest.mark.parametrize("miss", sorted(NEAR_MISSES))
@pytest.mark.parametrize(("verb", "path"), REST_ROUTES)
def test_every_rest_route_refuses_a_near_miss(guarded: Live, verb: str, path: str, miss: str) -> None:
    body = json.dumps({"message": user_message(call([1, 2]))}).encode() if verb == "POST" else None
    status, got, raw = guarded.request(verb, path, body, headers(NEAR_MISSES[miss]))
    assert status == 401, (verb, path, miss, raw[:200])
    assert got["www-authenticate"].startswith("Bearer")
    assert json.loads(raw)["error"]["code"] == 401


@pytest.mark.parametrize("miss", sorted(NEAR_MISSES))
@pytest.mark.parametrize("method", RPC_METHODS)
def test_every_json_rpc_method_refuses_a_near_miss(guarded: Live, method: str, miss: str) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": "task-1"}}
    for path in (RPC_PATH, RPC_PATH + "/", "/"):
        status, got, raw = guarded.request("POST", path, json.dumps(message).encode(), headers(NEAR_MISSES[miss]))
        assert status == 401, (path, method, miss, raw[:200])
        assert got["www-authenticate"].startswith("Bearer")
        reply = json.loads(raw)
        assert reply["id"] is None and "result" not in reply


@pytest.mark.parametrize(("verb", "path"), REST_ROUTES)
def test_the_exact_token_passes_every_rest_route(guarded: Live, verb: str, path: str) -> None:
    body = json.dumps({"message": user_message(call([1, 2]))}).encode() if verb == "POST" else None
    for token in (TOKEN, OTHER):
        status, _, raw = guarded.request(verb, path, body, headers(f"Bearer {token}"))
        assert status != 401, (verb, path, raw[:200])  # 404 for the made-up task id is fine


def test_the_exact_token_is_served_and_tokens_are_separate_principals(guarded: Live) -> None:
    sent = guarded.rpc("SendMessage", {"message": user_message(call([1, 2]))}, headers(f"Bearer {TOKEN}"))
    task = sent["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert guarded.rpc("GetTask", {"id": task["id"]}, headers(f"Bearer {TOKEN}"))["result"]["id"] == task["id"]
    assert guarded.rpc("GetTask", {"id": task["id"]}, headers(f"Bearer {OTHER}"))["error"]["code"] == -32001
    mine = guarded.rpc("ListTasks", {}, headers(f"Bearer {TOKEN}"))["result"]["tasks"]
    theirs = guarded.rpc("ListTasks", {}, headers(f"Bearer {OTHER}"))["result"]["tasks"]
    assert task["id"] in [t["id"] for t in mine] and task["id"] not in [t["id"] for t in theirs]


@pytest.mark.parametrize("path", sorted(CARD_PATHS))
def test_the_public_card_needs_no_token_and_announces_bearer(guarded: Live, path: str) -> None:
    status, _, raw = guarded.request("GET", path, None, {})
    assert status == 200, raw[:200]
    if path == "/.well-known/agent-card.json":
        card = json.loads(raw)
        assert "bearer" in json.dumps(card.get("securitySchemes", {})).lower(), card
