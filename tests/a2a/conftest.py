"""Fixtures: a live A2A server over the metrics example (and helpers to call it over raw HTTP)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.a2a.cli import build_agent
from mcp_agent_kit.a2a.engine import TaskEngine
from mcp_agent_kit.a2a.http import A2AServer
from mcp_agent_kit.a2a.store import TaskStore
from mcp_agent_kit.loader import load_target

ROOT = Path(__file__).resolve().parents[2]
METRICS = f"{ROOT / 'examples' / 'metrics_server.py'}:server"


class Live:
    """A running server plus raw-HTTP helpers."""

    def __init__(self, server: A2AServer) -> None:
        self.server = server
        self.port = server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
        self._ids = 0

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers if headers is not None else self.headers)
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            conn.close()

    def rpc(self, method: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Any:
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params or {}}
        status, _, body = self.request("POST", "/a2a", json.dumps(message).encode(), headers)
        assert status == 200, body
        return json.loads(body)

    def stream(self, method: str, params: dict[str, Any], path: str = "/a2a") -> list[dict[str, Any]]:
        message = {"jsonrpc": "2.0", "id": "s", "method": method, "params": params}
        status, headers, body = self.request("POST", path, json.dumps(message).encode())
        assert status == 200
        assert headers["content-type"].startswith("text/event-stream"), body
        return [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: ")]


def start(agent_target: Any, store: TaskStore | None = None, **options: Any) -> A2AServer:
    engine = TaskEngine(build_agent(agent_target), store)
    server = A2AServer(engine, "127.0.0.1", 0, **options)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def metrics() -> Iterator[Live]:
    server = start(load_target(METRICS))
    yield Live(server)
    server.shutdown()
    server.server_close()


def user_message(*parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    import uuid

    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": list(parts), **extra}


def call(values: list[float], metric: str | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"values": values}
    if metric:
        arguments["metric_type"] = metric
    return {"data": {"skill": "calculate_metrics", "arguments": arguments}}
