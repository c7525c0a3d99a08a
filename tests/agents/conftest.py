"""Fixtures: the a2a-sdk fixture agent in its own process, and a gateway serving it over HTTP."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.gateway.agent_service import AgentService
from mcp_agent_kit.gateway.agent_store import AgentSessions, open_sessions, sessions_url
from mcp_agent_kit.gateway.agents_config import parse_agents
from mcp_agent_kit.gateway.merged import Gateway
from mcp_agent_kit.transports.http import McpHTTPServer, make_server
from tests.http.conftest import Running
from tests.net import serving

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_AGENT = ROOT / "examples" / "a2a_fixture_agent.py"
METRICS = ROOT / "examples" / "metrics_server.py"
TASKS_META = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    """The official a2a-sdk 1.3.0 server running examples/a2a_fixture_agent.py."""
    with serving(lambda port: [sys.executable, str(FIXTURE_AGENT), "--port", str(port)],
                 "http://127.0.0.1:{port}") as url:
        yield url


def sessions_at(path: str) -> AgentSessions:
    """The sessions a gateway run keeps, as `gateway --sessions PATH` does (tests swap this for a shared store)."""
    return open_sessions(sessions_url(path), sole=True)


class GatewayRun:
    """A gateway on a free port with the given agents (and optionally one MCP backend)."""

    def __init__(self, config: dict[str, Any], store: str, agent_options: dict[str, Any] | None = None,
                 **options: Any) -> None:
        """agent_options: AgentService keywords (max_age, clock); options: make_server's (tokens, ...)."""
        self.store = sessions_at(store)
        servers = {"metrics": {"command": sys.executable, "args": [str(METRICS)], "env": {}, "cwd": None,
                               "allowLegacy": False, "timeout": 30.0, "maxInFlight": 4}} if config.get("mcp") else {}
        self.gateway = Gateway(servers, agents=AgentService(parse_agents(config), self.store, **(agent_options or {})))
        self.gateway.start(follow=False)
        self.server: McpHTTPServer = make_server(self.gateway.server.dispatcher, "127.0.0.1", 0, **options)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.http = Running(self.server)
        self.url = self.http.url

    def rpc(self, method: str, params: dict[str, Any], headers: dict[str, str] | None = None,
            id_: int = 1) -> dict[str, Any]:
        """One request shaped like kagent's curl examples: no version header, no session, no envelope."""
        _, _, payload = self.http.post({"jsonrpc": "2.0", "id": id_, "method": method, "params": params},
                                              headers)
        body: dict[str, Any] = json.loads(payload)
        return body

    def call(self, name: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
        reply = self.rpc("tools/call", {"name": name, "arguments": arguments, **kw})
        assert "result" in reply, reply
        result: dict[str, Any] = reply["result"]
        return result

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.gateway.close()
        self.store.close()


@pytest.fixture
def gateway_of(tmp_path: Path) -> Iterator[Callable[..., GatewayRun]]:
    runs: list[GatewayRun] = []

    def make(config: dict[str, Any], store: str | None = None, **options: Any) -> GatewayRun:
        run = GatewayRun(config, store or str(tmp_path / "sessions.sqlite"), **options)
        runs.append(run)
        return run

    yield make
    for run in runs:
        run.close()
