"""Streamable HTTP: kagent-style stateless requests (no version header, no session, no envelope)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_agent_kit import Context, Server
from mcp_agent_kit.transports import http_routes
from tests.http.conftest import parse_body

CAPS = "io.modelcontextprotocol/clientCapabilities"


def make_server() -> Server:
    server = Server("stateless-test", "1.0.0")

    @server.tool
    def declared(ctx: Context) -> str:
        """What the client declared."""
        return json.dumps(ctx.client_capabilities, sort_keys=True)

    return server


def _call(running: Any, params: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, Any]:
    status, got, payload = running.post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, headers or {})
    return status, parse_body(got, payload)


def test_a_bare_request_is_served_without_initialize_or_session(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    status, reply = _call(running, {"name": "declared", "arguments": {}})
    assert status == 200
    assert reply["result"]["content"][0]["text"] == "{}"
    assert "mcp-session-id" not in running.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})[1]


def test_the_meta_capabilities_of_a_stateless_request_are_honoured(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    status, reply = _call(running, {"name": "declared", "arguments": {}, "_meta": {CAPS: caps}})
    assert status == 200
    assert json.loads(reply["result"]["content"][0]["text"]) == caps


def test_a_handshake_era_header_still_needs_its_session(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    status, reply = _call(running, {"name": "declared", "arguments": {}}, {"MCP-Protocol-Version": "2025-11-25"})
    assert status == 400
    assert "Mcp-Session-Id header is required" in reply["error"]["message"]


def test_malformed_meta_capabilities_are_refused_not_guessed(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    status, reply = _call(running, {"name": "declared", "arguments": {}, "_meta": {CAPS: "tasks"}})
    assert reply["error"]["code"] == -32602 and status == 400


@pytest.mark.parametrize(("header", "session", "kind", "method", "expected"), [
    (None, False, "request", "tools/call", http_routes.STATELESS),
    (None, True, "request", "tools/call", http_routes.LEGACY),
    (None, False, "request", "initialize", http_routes.LEGACY),
    ("2025-11-25", False, "request", "tools/call", http_routes.LEGACY),
    ("2026-07-28", False, "request", "tools/call", http_routes.MODERN),
    (None, False, "notification", "notifications/initialized", http_routes.STATELESS),
])
def test_route_table(header: str | None, session: bool, kind: str, method: str, expected: str) -> None:
    assert http_routes.route(header, session, kind, {"method": method, "params": {}}) == expected
