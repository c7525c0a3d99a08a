"""Principals on the command line: `--token` repeated and `--tokens-file` on serve, a2a and gateway.

Each command runs as a real process on a free port; every configured token is accepted, any
other is refused with 401, and a tokens file maps tokens to principals (two tokens of one
principal share its legacy sessions, two plain tokens do not).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.net import free_port, wait_listening

SERVER = textwrap.dedent(
    """
    from mcp_agent_kit import Server

    server = Server("tokens", "1.0.0")

    @server.tool
    def hello() -> str:
        "Say hello."
        return "hello"

    if __name__ == "__main__":
        server.run()
    """
)
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "pytest", "version": "0"},
}
LEGACY = "2025-11-25"


def post(port: int, path: str, body: Any, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    conn.request("POST", path, json.dumps(body).encode(), {**base, **headers})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}


def mcp_status(port: int, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": MODERN_META}}
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2026-07-28",
               "Mcp-Method": "server/discover"}
    return post(port, "/mcp", body, headers)[0]


def a2a_status(port: int, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    return post(port, "/a2a", body, {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"})[0]


def legacy_session(port: int, token: str) -> str:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    status, headers = post(port, "/mcp", init, {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": LEGACY})
    assert status == 200
    return headers["mcp-session-id"]


def in_session(port: int, token: str, session: str) -> int:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": session}
    return post(port, "/mcp", ping, headers)[0]


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Any]:
    procs: list[subprocess.Popen[bytes]] = []
    server_file = tmp_path / "server.py"
    server_file.write_text(SERVER)

    def run(command: str, *flags: str) -> int:
        port = free_port()
        target = {"serve": [str(server_file)], "a2a": [str(server_file)]}.get(command)
        if target is None:  # the gateway: one stdio backend
            config = tmp_path / "gateway.json"
            config.write_text(json.dumps({"mcpServers": {"one": {"command": sys.executable,
                                                                  "args": [str(server_file)]}}}))
            target = [str(config)]
        proc = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", command, *target,
                                 "--http", f"127.0.0.1:{port}", *flags],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
        procs.append(proc)
        wait_listening(port, proc)
        return port

    yield run
    for proc in procs:
        proc.terminate()
        proc.wait(10)


CHECKS = {"serve": mcp_status, "gateway": mcp_status, "a2a": a2a_status}


@pytest.mark.parametrize("command", sorted(CHECKS))
def test_every_repeated_token_is_accepted(launch: Any, command: str) -> None:
    port = launch(command, "--token", "first-secret", "--token", "second-secret")
    status = CHECKS[command]
    assert status(port, "first-secret") != 401
    assert status(port, "second-secret") != 401
    assert status(port, "third-secret") == 401


@pytest.mark.parametrize("command", sorted(CHECKS))
def test_a_tokens_file_maps_tokens_to_principals(launch: Any, command: str, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice-laptop": "alice", "alice-phone": "alice", "bob-key": "bob"}))
    port = launch(command, "--tokens-file", str(tokens), "--token", "plain-secret")
    status = CHECKS[command]
    for token in ("alice-laptop", "alice-phone", "bob-key", "plain-secret"):
        assert status(port, token) != 401, token
    assert status(port, "mallory") == 401
    if command == "serve":  # principals, not just tokens: alice's two tokens share her session
        session = legacy_session(port, "alice-laptop")
        assert in_session(port, "alice-phone", session) == 200
        assert in_session(port, "bob-key", session) == 404


def test_two_plain_tokens_are_two_principals(launch: Any) -> None:
    port = launch("serve", "--token", "first-secret", "--token", "second-secret")
    session = legacy_session(port, "first-secret")
    assert in_session(port, "first-secret", session) == 200
    assert in_session(port, "second-secret", session) == 404


@pytest.mark.parametrize("command", sorted(CHECKS))
def test_a_bad_tokens_file_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(SERVER)
    backend = {"command": sys.executable, "args": [str(tmp_path / "server.py")]}
    (tmp_path / "gateway.json").write_text(json.dumps({"mcpServers": {"one": backend}}))
    bad = tmp_path / "tokens.json"
    bad.write_text('["not", "an", "object"]')
    target = "gateway.json" if command == "gateway" else "server.py"
    done = subprocess.run([sys.executable, "-m", "mcp_agent_kit", command, target, "--http", "127.0.0.1:0",
                           "--tokens-file", str(bad)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "--tokens-file" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
