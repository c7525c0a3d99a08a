"""The seed's agentctl routes on the agent host: its curl examples (docs/agent-host.md holds them verbatim, as the
seed prints them) replayed with urllib against a host on a free port, then the rest of the API — the ACP stream
and the output stream (WebSockets, with the kit's own client), a call answered with the agent's reply and the
caller's id, a message sent without waiting, the output buffer, stop, and 409 once the agent is stopped."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from mcp_agent_kit.httpd import ws_connect
from tests.hosts.hostkit import DOC, echo_config, get_json, gone, http, running_host
from tests.net import until

SEED_URL = "localhost:9999"


def curl_lines() -> list[str]:
    """The curl commands of the doc's agentctl block, continuation lines joined."""
    block = re.search(r"```sh\n(# Check health.*?)```", DOC.read_text(), re.S)
    assert block, "docs/agent-host.md has the seed's curl examples"
    text = block.group(1).replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip().startswith("curl ")]


def replay(line: str, where: str) -> tuple[int, Any]:
    """Run one curl line with urllib: -X, -H and -d as curl reads them; (status, the JSON answer)."""
    words = shlex.split(line.replace(SEED_URL, where))[1:]
    method, headers, data, url = "GET", {}, None, ""
    while words:
        word = words.pop(0)
        if word == "-X":
            method = words.pop(0)
        elif word == "-H":
            name, _, value = words.pop(0).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            data = words.pop(0).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
            method = "POST" if method == "GET" else method
        else:
            url = word
    status, _, body = http(url, method, data, headers)
    return status, json.loads(body)


def test_the_seed_curl_examples_and_the_streams(tmp_path: Path) -> None:
    lines = curl_lines()
    assert [line.split("http://")[1].split()[0] for line in lines] == [
        "localhost:9999/health", "localhost:9999/api/v1/start", "localhost:9999/api/v1/acp/call"]
    with running_host(echo_config(tmp_path)) as (_, where):
        status, health = replay(lines[0], where)
        assert status == 200 and health["status"] == "ok" and health["agentctl"] == "stopped"
        status, started = replay(lines[1], where)
        assert status == 200 and started["success"] is True and started["status"] == "running"
        pid = started["pid"]
        acp_stream = ws_connect(f"ws://{where}/api/v1/acp/stream")
        output_stream = ws_connect(f"ws://{where}/api/v1/output/stream")
        status, reply = replay(lines[2], where)  # the agent's own reply: ACP v1 wants protocolVersion 1
        assert status == 200 and reply["jsonrpc"] == "2.0"
        assert reply["error"]["code"] == -32602 and "protocolVersion" in reply["error"]["message"]
        assert json.loads(acp_stream.recv(timeout=20))["error"] == reply["error"]
        assert "protocolVersion" in json.loads(output_stream.recv(timeout=20))["line"]

        call = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1}}
        status, _, body = http(f"http://{where}/api/v1/acp/call", "POST", json.dumps(call).encode())
        assert status == 200 and json.loads(body)["id"] == 7
        assert json.loads(body)["result"]["agentInfo"]["name"] == "acp-echo-agent"
        assert "agentInfo" in json.loads(acp_stream.recv(timeout=20))["result"]
        new = {"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}}
        status, _, body = http(f"http://{where}/api/v1/acp/send", "POST", json.dumps(new).encode())
        assert status == 200 and json.loads(body) == {"success": True}
        assert json.loads(acp_stream.recv(timeout=20))["id"] == 8  # the answer comes on the stream only
        output = get_json(f"http://{where}/api/v1/output")
        assert [line["stream"] for line in output["lines"]] == ["stdout"] * 3 and output["next"] == 3
        assert get_json(f"http://{where}/api/v1/output?after=2")["lines"][0]["seq"] == 3
        status_now = get_json(f"http://{where}/api/v1/status")
        assert status_now["status"] == "running" and status_now["pid"] == pid and status_now["rss_bytes"] > 0
        acp_stream.close()
        output_stream.close()

        assert http(f"http://{where}/api/v1/stop", "POST")[0] == 200
        assert gone(pid) and get_json(f"http://{where}/api/v1/status")["status"] == "stopped"
        status, _, body = http(f"http://{where}/api/v1/acp/call", "POST", json.dumps(call).encode())
        assert status == 409 and "POST /api/v1/start" in json.loads(body)["error"]
        assert http(f"http://{where}/api/v1/start")[0] == 405


def test_the_listings(tmp_path: Path) -> None:
    with running_host(echo_config(tmp_path)) as (host, where):
        host._found = (float("inf"), [{"id": "qwen-code", "found": False}])  # no PATH lookup in this test
        listed = get_json(f"http://{where}/api/v1/agents")
        assert listed["default"] == "echo" and listed["found"] == [{"id": "qwen-code", "found": False}]
        assert [(agent["id"], agent["path"], agent["connections"]) for agent in listed["agents"]] == [
            ("echo", "/agents/echo/acp", 0)]
        assert listed["agents"][0]["env"] == ["ACP_ECHO_AGENT_DIR"]  # names only, never values
        with ws_connect(f"ws://{where}/acp"):
            until(lambda: host.registry.listing() and host.registry.listing()[0]["pid"], "the agent to start")
            sessions = get_json(f"http://{where}/api/v1/sessions")["connections"]
            assert [(s["agent"], s["profile"], s["running"]) for s in sessions] == [("echo", "websocket", True)]
            assert sessions[0]["rss_bytes"] > 0 and sessions[0]["cpu_seconds"] >= 0 and sessions[0]["pids"]
