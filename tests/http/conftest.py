"""Fixtures: a real HTTP server on a free port, in a background thread."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit.core.dispatcher import Dispatcher
from mcp_agent_kit.transports.http import McpHTTPServer, make_server

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "pytest", "version": "0"},
}


class Running:
    def __init__(self, server: McpHTTPServer) -> None:
        self.server = server
        self.host, self.port = server.server_address[:2]
        self.url = f"http://{self.host}:{self.port}/mcp"

    def post(
        self,
        body: Any,
        headers: dict[str, str] | None = None,
        *,
        raw: bytes | None = None,
        path: str = "/mcp",
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        data = raw if raw is not None else json.dumps(body).encode()
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        conn.request("POST", path, data, {**base, **(headers or {})})
        response = conn.getresponse()
        payload = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, payload

    def modern(self, method: str, params: dict[str, Any] | None = None, id_: Any = 1,
               headers: dict[str, str] | None = None, meta: dict[str, Any] | None = None) -> tuple[int, Any]:
        body_params = {**(params or {}), "_meta": {**META, **(meta or {})}}
        hdrs = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        name = body_params.get("name", body_params.get("uri", body_params.get("taskId")))
        if name is not None:
            hdrs["Mcp-Name"] = str(name)
        hdrs.update(headers or {})
        status, got, payload = self.post({"jsonrpc": "2.0", "id": id_, "method": method, "params": body_params}, hdrs)
        return status, parse_body(got, payload)

    def request(self, method: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        conn.request(method, "/mcp", headers=headers or {})
        response = conn.getresponse()
        payload = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, payload


def parse_body(headers: dict[str, str], payload: bytes) -> Any:
    """The JSON body, or for SSE the list of event messages."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        lines = payload.decode().splitlines()
        return [json.loads(line[5:]) for line in lines if line.startswith("data:") and line[5:].strip()]
    return json.loads(payload) if payload else None


def start(dispatcher: Dispatcher, **options: Any) -> Running:
    server = make_server(dispatcher, "127.0.0.1", 0, **options)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return Running(server)


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[Running] = []

    def run(dispatcher: Dispatcher, **options: Any) -> Running:
        running = start(dispatcher, **options)
        started.append(running)
        return running

    yield run
    for running in started:
        running.server.shutdown()
        running.server.server_close()
