"""A2A CSRF: a CORS "simple" POST (no Content-Type, or text/plain) must never run a skill.

A browser sends such a request cross-origin without a preflight, so the A2A server, like the MCP
one, requires a JSON media type on every POST that carries a body, and its Origin gate refuses a
foreign page's text/plain request before anything else. Raw HTTP, bounded timeouts.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from mcp_agent_kit.a2a.cli import build_agent
from mcp_agent_kit.a2a.engine import TaskEngine
from mcp_agent_kit.a2a.http import A2AServer
from mcp_agent_kit.loader import load_target
from tests.a2a.conftest import METRICS, call, start, user_message


@pytest.fixture(scope="module")
def agent() -> Iterator[A2AServer]:
    server = start(load_target(METRICS))
    yield server
    server.shutdown()
    server.server_close()


def post(server: A2AServer, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        conn.putrequest("POST", path, skip_host="Host" in headers, skip_accept_encoding=True)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        response = conn.getresponse()
        raw = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(raw)
    finally:
        conn.close()


def send_body() -> bytes:
    message = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message(call([1, 2]))}}
    return json.dumps(message).encode()


def tasks(server: A2AServer) -> int:
    status, _, reply = post(server, "/a2a", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ListTasks",
                                                       "params": {}}).encode(),
                            {"Content-Type": "application/json", "A2A-Version": "1.0"})
    assert status == 200
    return len(reply["result"].get("tasks", []))


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_jsonrpc_without_a_json_type_runs_nothing(agent: A2AServer, ctype: str | None) -> None:
    before = tasks(agent)
    headers = {"A2A-Version": "1.0"} | ({"Content-Type": ctype} if ctype else {})
    status, got, reply = post(agent, "/a2a", send_body(), headers)
    # JSON-RPC errors ride HTTP 200 (the A2A TCK pins -32005 for this case)
    assert status == 200 and got["content-type"].startswith("application/json")
    assert "result" not in reply and reply["error"]["code"] == -32005
    assert tasks(agent) == before


@pytest.mark.parametrize("ctype", [None, "text/plain"])
def test_rest_without_a_json_type_is_415(agent: A2AServer, ctype: str | None) -> None:
    before = tasks(agent)
    body = json.dumps({"message": user_message(call([1, 2]))}).encode()
    headers = {"A2A-Version": "1.0"} | ({"Content-Type": ctype} if ctype else {})
    status, got, reply = post(agent, "/a2a/rest/message:send", body, headers)
    assert status == 415 and got["content-type"].startswith("application/json")
    assert reply["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert tasks(agent) == before


@pytest.mark.parametrize("ctype", ["application/json", "application/a2a+json", "application/json; charset=utf-8"])
def test_json_types_are_accepted(agent: A2AServer, ctype: str) -> None:
    status, _, reply = post(agent, "/a2a", send_body(), {"A2A-Version": "1.0", "Content-Type": ctype})
    assert status == 200 and "result" in reply, reply


@pytest.mark.parametrize("path", ["/a2a", "/a2a/rest/message:send"])
def test_foreign_origin_text_plain_is_refused_first(agent: A2AServer, path: str) -> None:
    before = tasks(agent)
    headers = {"A2A-Version": "1.0", "Content-Type": "text/plain", "Origin": "https://evil.example"}
    status, _, reply = post(agent, path, send_body(), headers)
    assert status == 400 and "error" in reply  # InvalidRequest: Host or Origin not allowed
    assert tasks(agent) == before


def public_agent(**options: Any) -> A2AServer:
    engine = TaskEngine(build_agent(load_target(METRICS)), None)
    server = A2AServer(engine, "0.0.0.0", 0, tokens=["t0ken"], **options)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def get_card(server: A2AServer, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        conn.putrequest("GET", "/.well-known/agent-card.json", skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_public_bind_checks_host_and_origin_too() -> None:
    """Bound to every interface, the agent still refuses a Host that does not name it (DNS rebinding)
    and a foreign Origin (CSRF); before, a public bind checked neither."""
    server = public_agent(allowed_hosts=["agent.internal"], allowed_origins=["https://app.example"])
    port = server.server_address[1]
    own = urlsplit(server.base_url).hostname
    try:
        assert get_card(server, {"Host": f"evil.example:{port}"}) == 400
        assert get_card(server, {"Host": f"{own}:{port}"}) == 200  # the card's own host
        assert get_card(server, {"Host": f"127.0.0.1:{port}"}) == 200
        assert get_card(server, {"Host": "agent.internal"}) == 200  # --allow-host
        assert get_card(server, {"Host": f"{own}:{port}", "Origin": "https://evil.example"}) == 400
        assert get_card(server, {"Host": f"{own}:{port}", "Origin": "https://app.example"}) == 200  # --allow-origin
        assert get_card(server, {"Host": f"{own}:{port}", "Origin": f"http://{own}:{port}"}) == 200
        status, _, reply = post(server, "/a2a", send_body(), {"Host": "evil.example", "A2A-Version": "1.0",
                                                              "Content-Type": "application/json",
                                                              "Authorization": "Bearer t0ken"})
        assert status == 400 and "--allow-host" in reply["error"]["message"]
    finally:
        server.shutdown()
        server.server_close()


def test_a_public_bind_with_a_public_url_accepts_its_host() -> None:
    server = public_agent(public_url="https://agents.example.com/x")
    try:
        assert get_card(server, {"Host": "agents.example.com"}) == 200
        assert get_card(server, {"Host": "other.example.com"}) == 400
    finally:
        server.shutdown()
        server.server_close()
