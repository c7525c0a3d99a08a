"""Streamable HTTP, modern era: status codes, header checks, SSE, listen (digest §6)."""

from __future__ import annotations

import base64
import http.client
import json
from typing import Any

from mcp_agent_kit import Context, Server
from tests.http.conftest import MODERN, parse_body


def make_server() -> Server:
    server = Server("http-test", "1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
        },
    })
    def routed(region: str | None = None, n: int | None = None) -> str:
        """Echo header-mirrored arguments."""
        return f"{region}:{n}"

    @server.tool
    def slow_progress(ctx: Context) -> str:
        """Report progress twice."""
        ctx.progress(1, 2)
        ctx.progress(2, 2)
        return "done"

    @server.resource("test://r", mime_type="text/plain")
    def r() -> str:
        """A resource."""
        return "hello"

    return server


def test_discover_and_call_are_json(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    status, body = running.modern("server/discover")
    assert status == 200 and body["result"]["supportedVersions"] == [MODERN]
    status, body = running.modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert status == 200
    assert body["result"]["content"][0]["text"] == "5"


def test_status_codes(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    assert running.modern("unknown/method")[0] == 404
    assert running.modern("ping")[0] == 404
    status, body = running.modern("tools/list", meta={"io.modelcontextprotocol/protocolVersion": "1900-01-01"},
                                  headers={"MCP-Protocol-Version": "1900-01-01"})
    assert status == 400 and body["error"]["code"] == -32022
    # missing _meta is an envelope error: 400, not 200
    status, _, payload = running.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                                      {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    assert status == 400 and json.loads(payload)["error"]["code"] == -32602
    # unknown tool is a handler -32602: in-band, 200
    assert running.modern("tools/call", {"name": "nope"})[0] == 200
    assert running.post(None, raw=b"{not json", headers={"MCP-Protocol-Version": MODERN})[0] == 400
    assert running.post(None, raw=b"[]", headers={"MCP-Protocol-Version": MODERN})[0] == 400
    assert running.post({"jsonrpc": "2.0", "method": "notifications/x"}, {"MCP-Protocol-Version": MODERN})[0] == 202
    assert running.post({}, {"Content-Type": "text/plain", "MCP-Protocol-Version": MODERN})[0] == 415
    assert running.post({}, {"Accept": "text/html", "MCP-Protocol-Version": MODERN})[0] == 406
    assert running.request("GET", {"MCP-Protocol-Version": MODERN})[0] == 405
    assert running.request("DELETE", {"MCP-Protocol-Version": MODERN})[0] == 405
    assert running.post({}, path="/other")[0] == 404


def test_header_mismatches_are_32020(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    for headers in ({"Mcp-Method": "tools/list"}, {"Mcp-Name": "other"}, {"MCP-Protocol-Version": "2099-01-01"}):
        status, body = running.modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}, headers=headers)
        assert (status, body["error"]["code"]) == (400, -32020), headers
    status, body = running.modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}},
                                  headers={"Mcp-Name": "  add  "})
    assert status == 200 and "result" in body


def test_custom_param_headers(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    call = {"name": "routed", "arguments": {"region": "Zürich", "n": 42}}
    encoded = "=?base64?" + base64.b64encode("Zürich".encode()).decode() + "?="
    status, body = running.modern("tools/call", call, headers={"Mcp-Param-Region": encoded, "Mcp-Param-N": "42.0"})
    assert status == 200 and body["result"]["content"][0]["text"] == "Zürich:42"
    for bad in ({"Mcp-Param-N": "42"}, {"Mcp-Param-Region": encoded, "Mcp-Param-N": "41"},
                {"Mcp-Param-Region": "=?base64?WnVyaWNo?=", "Mcp-Param-N": "42"}):
        status, body = running.modern("tools/call", call, headers=bad)
        assert (status, body["error"]["code"]) == (400, -32020), bad
    # an absent argument must have no header
    status, body = running.modern("tools/call", {"name": "routed", "arguments": {}}, headers={"Mcp-Param-N": "1"})
    assert status == 400


def test_progress_switches_to_sse(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    status, body = running.modern("tools/call", {"name": "slow_progress"}, meta={"progressToken": "p"})
    assert status == 200
    assert [m.get("method") for m in body] == ["notifications/progress", "notifications/progress", None]
    assert body[-1]["result"]["content"][0]["text"] == "done"


def _listen(running: Any, notifications: dict[str, Any]) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
    conn = http.client.HTTPConnection(running.host, running.port, timeout=10)
    params = {"notifications": notifications, "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}}
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
                                             "params": params}),
                 {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                  "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"})
    return conn.getresponse(), conn


def _next_event(response: http.client.HTTPResponse) -> dict[str, Any]:
    while True:
        line = response.readline().decode()
        if line.startswith("data:") and line[5:].strip():
            event: dict[str, Any] = json.loads(line[5:])
            return event


def test_listen_streams_list_changes(serve: Any) -> None:
    server = make_server()
    running = serve(server.dispatcher)
    response, conn = _listen(running, {"toolsListChanged": True, "resourceSubscriptions": ["test://r"]})
    assert response.getheader("Content-Type") == "text/event-stream"
    ack = _next_event(response)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True, "resourceSubscriptions": ["test://r"]}
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"
    server.add_prompt(lambda: "x", name="ignored")  # not subscribed: must not arrive
    server.add_tool(lambda: "x", name="new_tool")
    changed = _next_event(response)
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"
    server.notify_resource_updated("test://r")
    updated = _next_event(response)
    assert updated["method"] == "notifications/resources/updated" and updated["params"]["uri"] == "test://r"
    conn.close()


def test_listen_ends_with_result_on_shutdown(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    response, conn = _listen(running, {"toolsListChanged": True})
    _next_event(response)
    running.server.dispatcher.close()  # the final event waits in the stream until read
    final = _next_event(response)
    assert final["id"] == "sub-1" and final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"
    conn.close()


def test_parse_body_helper() -> None:
    assert parse_body({"content-type": "application/json"}, b'{"a":1}') == {"a": 1}
