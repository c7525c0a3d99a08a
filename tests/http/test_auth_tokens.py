"""Bearer tokens on every route of the MCP HTTP transport: only the exact token passes.

Routes: POST in both eras (a modern request, a handshake-era initialize and a call in a session),
GET (the standalone and the resumed stream) and DELETE of a session. Near misses: the token with a
byte appended or prepended, a prefix or suffix of it, another scheme, a wrong token, none.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_agent_kit import Server
from tests.auth_cases import NEAR_MISSES, OTHER, TOKEN
from tests.http.conftest import MODERN, Running

LEGACY = "2025-11-25"


def make_server() -> Server:
    server = Server("auth-test", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        """Echo text."""
        return text

    return server


def auth(value: str) -> dict[str, str]:
    return {"Authorization": value} if value else {}


def open_session(running: Running, token: str) -> str:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    status, headers, payload = running.post(init, {"MCP-Protocol-Version": LEGACY, **auth(f"Bearer {token}")})
    assert status == 200, payload
    return headers["mcp-session-id"]


def routes(session: str) -> list[tuple[str, str, dict[str, Any] | None, dict[str, str]]]:
    """(name, verb, JSON body or None, headers) for each route the gate guards."""
    legacy = {"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": session}
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    return [
        ("POST modern", "POST", None, {}),
        ("POST initialize", "POST", init, {"MCP-Protocol-Version": LEGACY}),
        ("POST in a session", "POST", call, legacy),
        ("GET stream", "GET", None, {**legacy, "Accept": "text/event-stream"}),
        ("GET resume", "GET", None, {**legacy, "Accept": "text/event-stream", "Last-Event-ID": "1-0"}),
        ("DELETE session", "DELETE", None, legacy),
    ]


Reply = tuple[int, dict[str, str], bytes]


def send(running: Running, verb: str, body: dict[str, Any] | None, headers: dict[str, str]) -> Reply:
    if verb == "POST" and body is None:  # a modern request
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                     "io.modelcontextprotocol/clientCapabilities": {},
                                     "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}}
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list", **headers}
    if verb == "POST":
        return running.post(body, headers)
    return running.request(verb, headers)


@pytest.mark.parametrize("miss", sorted(NEAR_MISSES))
def test_every_route_refuses_a_near_miss(serve: Any, miss: str) -> None:
    running = serve(make_server().dispatcher, tokens={TOKEN: "alice", OTHER: "bob"})
    session = open_session(running, TOKEN)
    for name, verb, body, headers in routes(session):
        status, got, payload = send(running, verb, body, {**headers, **auth(NEAR_MISSES[miss])})
        assert status == 401, (name, miss, status, payload[:200])
        assert got["www-authenticate"].startswith('Bearer realm="mcp"'), (name, got)
        assert "result" not in json.loads(payload)
    # the session the near misses aimed at is still there for its owner
    _, _, body, headers = routes(session)[2]
    status, _, payload = send(running, "POST", body, {**headers, **auth(f"Bearer {TOKEN}")})
    assert status == 200 and b'"x"' in payload, payload


def test_the_single_token_option_is_as_strict(serve: Any) -> None:
    running = serve(make_server().dispatcher, token=TOKEN)
    for miss, value in NEAR_MISSES.items():
        status, _, payload = send(running, "POST", None, auth(value))
        assert status == 401, (miss, payload[:200])
    assert send(running, "POST", None, auth(f"Bearer {TOKEN}"))[0] == 200
    assert send(running, "POST", None, auth(f"bearer  {TOKEN} "))[0] == 200  # scheme is case-insensitive


def test_the_exact_token_passes_every_route_and_sessions_belong_to_their_principal(serve: Any) -> None:
    running = serve(make_server().dispatcher, tokens={TOKEN: "alice", OTHER: "bob"})
    session = open_session(running, TOKEN)
    for name, verb, body, headers in routes(session)[:3]:
        status, _, payload = send(running, verb, body, {**headers, **auth(f"Bearer {TOKEN}")})
        assert status == 200, (name, payload[:200])
    _, _, body, headers = routes(session)[2]
    status, _, _ = send(running, "POST", body, {**headers, **auth(f"Bearer {OTHER}")})
    assert status == 404  # bob cannot use alice's session
    status, _, _ = send(running, "DELETE", None, {**routes(session)[5][3], **auth(f"Bearer {OTHER}")})
    assert status == 404
    status, _, _ = send(running, "DELETE", None, {**routes(session)[5][3], **auth(f"Bearer {TOKEN}")})
    assert status == 200
