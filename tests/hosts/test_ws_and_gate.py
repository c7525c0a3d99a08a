"""The agent host's WebSocket profile and its gate, with the `websockets` library's client (a peer we did not write):
the 101 carries `Acp-Connection-Id`, binary messages are ignored, text that is no JSON-RPC message gets a JSON-RPC
error; a foreign Origin is refused (403) on both profiles, a host with a token refuses requests without it (401,
but /health), an agent at its `max_concurrent` refuses one more connection (503), and an idle connection is
closed (1001) with its agent process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.hosts.hostkit import ROOT, echo_config, gone, http, only_connection, running_host
from tests.net import until

INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
JSON = {"Content-Type": "application/json"}


def test_one_json_rpc_message_per_text_message(tmp_path: Path) -> None:
    with running_host(echo_config(tmp_path)) as (host, where), connect(f"ws://{where}/acp") as ws:
        assert len(ws.response.headers["Acp-Connection-Id"]) == 32
        ws.send(b"\x00binary is ignored")
        ws.send("not json")
        assert json.loads(ws.recv(timeout=20))["error"]["code"] == -32700
        ws.send("[" + INIT + "]")
        assert json.loads(ws.recv(timeout=20))["error"]["code"] == -32600
        ws.send(INIT)
        reply = json.loads(ws.recv(timeout=20))
        assert reply["id"] == 0 and reply["result"]["agentInfo"]["name"] == "acp-echo-agent"
        assert only_connection(host)["id"] == ws.response.headers["Acp-Connection-Id"]
        pid = only_connection(host)["pid"]
    until(lambda: gone(pid), "the agent to end with its WebSocket")


def test_a_foreign_origin_and_a_missing_token_are_refused(tmp_path: Path) -> None:
    with running_host(echo_config(tmp_path), tokens={"s3cret": "alice"}) as (host, where):
        evil = {"Origin": "http://evil.example", "Authorization": "Bearer s3cret"}
        status, _, body = http(f"http://{where}/acp", "POST", INIT.encode(), {**JSON, **evil})
        assert status == 403 and "--allow-origin http://evil.example" in json.loads(body)["error"]
        with pytest.raises(InvalidStatus) as refused:
            connect(f"ws://{where}/acp", origin="http://evil.example", additional_headers=evil)  # type: ignore[arg-type]
        assert refused.value.response.status_code == 403
        status, headers, _ = http(f"http://{where}/acp", "POST", INIT.encode(), JSON)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
        assert http(f"http://{where}/api/v1/status")[0] == 401
        assert http(f"http://{where}/health")[0] == 200
        signed = {**JSON, "Authorization": "Bearer s3cret"}
        status, headers, _ = http(f"http://{where}/acp", "POST", INIT.encode(), signed)
        assert status == 200 and headers["Acp-Connection-Id"]
        assert host.registry.count() == 1


def test_connections_are_bounded_per_agent_and_idle_ones_end(tmp_path: Path) -> None:
    with running_host(echo_config(tmp_path, {"max_concurrent": 1}, idle=1)) as (host, where):
        with connect(f"ws://{where}/agents/echo/acp") as ws:
            with pytest.raises(InvalidStatus) as refused:
                connect(f"ws://{where}/acp")
            assert refused.value.response.status_code == 503
            status, headers, _ = http(f"http://{where}/acp", "POST", INIT.encode(), JSON)
            assert status == 503 and headers["Retry-After"] == "5"
            until(lambda: only_connection(host)["pid"], "the agent to start")
            pid = only_connection(host)["pid"]
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=20)  # nothing is said: the host ends it after `idle` seconds
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
            assert "idle" in closed.value.rcvd.reason
        until(lambda: gone(pid), "the idle connection's agent to end")
        assert host.registry.count() == 0


def test_a_sandboxed_agent_runs_in_its_workspace(tmp_path: Path) -> None:
    """`"sandbox": "bwrap"`: the agent starts under bubblewrap (its cwd the writable workspace); the host counts its
    whole process tree and ends it with the connection."""
    from mcp_agent_kit import sandbox

    try:
        sandbox.find_bwrap()
    except sandbox.SandboxUnavailable as exc:
        pytest.fail(f"{exc} (.ci/run installs it)")
    kit = [str(ROOT), sys.prefix, sys.base_prefix]  # the agent's Python and the kit, wherever they live
    with running_host(echo_config(tmp_path, sandbox="bwrap", network=False, binds=kit)) as (host, where):
        with connect(f"ws://{where}/acp") as ws:
            ws.send(INIT)
            assert json.loads(ws.recv(timeout=20))["result"]["agentInfo"]["name"] == "acp-echo-agent"
            new = {"jsonrpc": "2.0", "id": 1, "method": "session/new",
                   "params": {"cwd": str(tmp_path), "mcpServers": []}}
            ws.send(json.dumps(new))
            assert json.loads(ws.recv(timeout=20))["result"]["sessionId"]
            assert any((tmp_path / "sessions").iterdir())  # the workspace is writable inside
            listed = only_connection(host)
            assert len(listed["pids"]) >= 2, listed  # bwrap and the agent it runs
            pids = listed["pids"]
        until(lambda: all(gone(pid) for pid in pids), "the sandboxed tree to end with its connection")
