"""Two `gateway` processes on one shared store (sqlite) behave as one: the gateway's own server is on
the store too, so a handshake-era session opened on one replica is accepted by the other, and its
calls relayed by either. Without the store the second replica refuses the session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.store.replicas import Replicas
from tests.store.test_mcp_replicas import legacy_post

ROOT = Path(__file__).resolve().parents[2]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "0"}}}


def gateways(tmp_path: Path, store: str) -> Replicas:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"metrics": {
        "command": sys.executable, "args": [str(ROOT / "examples" / "metrics_server.py")]}}}))
    return Replicas(["-m", "mcp_agent_kit", "gateway", str(config), "--http", "127.0.0.1:{port}",
                     "--store", "{store}"], n=2, store_url=store)


def session_on(port: int) -> str:
    status, headers, reply = legacy_post(port, INIT)
    assert status == 200 and reply["result"]["protocolVersion"] == "2025-11-25", reply
    return headers["mcp-session-id"]


def test_a_legacy_session_opened_on_one_gateway_replica_is_served_by_the_other(tmp_path: Path) -> None:
    with gateways(tmp_path, f"sqlite:///{tmp_path / 'store.db'}") as replicas:
        session = session_on(replicas.ports[0])
        assert legacy_post(replicas.ports[1], {"jsonrpc": "2.0", "method": "notifications/initialized"},
                           session)[0] == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "calculate_metrics", "arguments": {"values": [1, 2, 3], "metric_type": "sum"}}}
        status, _, reply = legacy_post(replicas.ports[1], call, session)
        assert status == 200 and reply["result"]["structuredContent"]["value"] == 6, reply


def test_without_a_shared_store_the_other_replica_does_not_know_the_session(tmp_path: Path) -> None:
    with gateways(tmp_path, "memory:") as replicas:
        session = session_on(replicas.ports[0])
        assert legacy_post(replicas.ports[1], {"jsonrpc": "2.0", "id": 2, "method": "ping"}, session)[0] == 404
