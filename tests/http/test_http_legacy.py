"""Streamable HTTP, handshake era: sessions, GET stream, DELETE, server→client requests."""

from __future__ import annotations

import http.client
import json
from typing import Any

from mcp_agent_kit import Context, Server
from tests.http.conftest import parse_body

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
                   "clientInfo": {"name": "t", "version": "0"}}}


def make_server() -> Server:
    server = Server("legacy-test", "1.0.0")

    @server.tool
    def ask_model(ctx: Context) -> str:
        """Ask the client's model."""
        answer = ctx.sample("hi", 10)
        return f"model said {answer['content']['text']}"

    return server


def _open(running: Any) -> str:
    status, headers, payload = running.post(INIT)
    assert status == 200
    assert json.loads(payload)["result"]["protocolVersion"] == "2025-11-25"
    session = headers["mcp-session-id"]
    assert len(session) >= 32
    h = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    assert running.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)[0] == 202
    return session


def test_session_lifecycle(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    session = _open(running)
    h = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    status, _, payload = running.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, h)
    assert status == 200 and json.loads(payload)["result"]["tools"][0]["name"] == "ask_model"
    assert "resultType" not in json.loads(payload)["result"]
    no_session = {"MCP-Protocol-Version": "2025-11-25"}
    assert running.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, no_session)[0] == 400
    assert running.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, {"Mcp-Session-Id": "nope"})[0] == 404
    assert running.request("DELETE", {"Mcp-Session-Id": session})[0] == 200
    assert running.post({"jsonrpc": "2.0", "id": 4, "method": "ping"}, h)[0] == 404


def test_sessions_belong_to_their_principal(serve: Any) -> None:
    running = serve(make_server().dispatcher, tokens={"alice-token": "alice", "bob-token": "bob"})
    status, headers, _ = running.post(INIT, {"Authorization": "Bearer alice-token"})
    assert status == 200
    session = headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert running.post(ping, {"Mcp-Session-Id": session, "Authorization": "Bearer bob-token"})[0] == 404
    assert running.post(ping, {"Mcp-Session-Id": session, "Authorization": "Bearer alice-token"})[0] == 200


def test_sampling_request_travels_on_the_post_stream(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    session = _open(running)
    h = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25",
         "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    conn = http.client.HTTPConnection(running.host, running.port, timeout=10)
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                             "params": {"name": "ask_model", "arguments": {}}}), h)
    response = conn.getresponse()
    assert response.getheader("Content-Type") == "text/event-stream"
    request = None
    while request is None:
        line = response.readline().decode()
        if line.startswith("data:") and line[5:].strip():
            request = json.loads(line[5:])
    assert request["method"] == "sampling/createMessage"
    answer = {"jsonrpc": "2.0", "id": request["id"],
              "result": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}}
    assert running.post(answer, {"Mcp-Session-Id": session})[0] == 202
    rest = parse_body({"content-type": "text/event-stream"}, response.read())
    assert rest[-1]["id"] == 7 and rest[-1]["result"]["content"][0]["text"] == "model said hello"
    conn.close()


def test_get_stream_carries_list_changed(serve: Any) -> None:
    server = make_server()
    running = serve(server.dispatcher)
    session = _open(running)
    conn = http.client.HTTPConnection(running.host, running.port, timeout=10)
    conn.request("GET", "/mcp", headers={"Mcp-Session-Id": session, "Accept": "text/event-stream"})
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
    assert running.request("GET", {"Mcp-Session-Id": session, "Accept": "text/event-stream"})[0] == 409
    server.add_tool(lambda: "x", name="late")  # the stream was registered before its headers were sent
    event = None
    while event is None:
        line = response.readline().decode()
        if line.startswith("data:") and line[5:].strip():
            event = json.loads(line[5:])
    assert event["method"] == "notifications/tools/list_changed"
    conn.close()
    assert running.request("GET", {"Accept": "text/event-stream"})[0] == 400
