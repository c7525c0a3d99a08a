"""One rule for public binds: `serve`, `a2a`, `gateway` and the Python API refuse a non-loopback bind
without authentication (unless told --insecure), name the flags that fix it, log which Host names
a public bind accepts, and answer a refused Host or Origin with the flag that admits it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit import Server
from mcp_agent_kit.addresses import exposed, is_loopback, machine_names
from mcp_agent_kit.httpd.gate import Policy
from tests.http.conftest import MODERN

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "metrics_server.py")
FLAGS = ("--token", "--oauth-issuer", "--insecure")


def kit(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", *argv], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)


def test_the_rule() -> None:
    for host in ("127.0.0.1", "127.9.9.9", "localhost", "::1", "[::1]"):
        assert is_loopback(host) and not exposed(host, authenticated=False, insecure=False), host
    for host in ("0.0.0.0", "::", "10.0.0.5", "mcp.example.com"):
        assert exposed(host, authenticated=False, insecure=False), host
        assert not exposed(host, authenticated=True, insecure=False)
        assert not exposed(host, authenticated=False, insecure=True)
    assert machine_names("127.0.0.1") == [] and machine_names("10.0.0.5") == []
    assert machine_names("0.0.0.0")  # this machine's name at least


@pytest.mark.parametrize("argv", [
    ["serve", EXAMPLE, "--http", "0.0.0.0:0"],
    ["a2a", f"{EXAMPLE}:server", "--http", "0.0.0.0:0"],
    ["gateway", "CONFIG", "--http", "0.0.0.0:0"],
], ids=["serve", "a2a", "gateway"])
def test_a_public_bind_without_authentication_is_refused_at_start(argv: list[str], tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"metrics": {"command": sys.executable, "args": [EXAMPLE]}}}))
    done = kit(*[str(config) if word == "CONFIG" else word for word in argv])
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "binding 0.0.0.0 exposes" in done.stderr and all(flag in done.stderr for flag in FLAGS), done.stderr


def test_a2a_acp_names_token_and_insecure() -> None:
    done = kit("a2a", "--acp", "--http", "0.0.0.0:0", "--", sys.executable, "-c", "pass")
    assert done.returncode == 2 and "--token" in done.stderr and "--insecure" in done.stderr, done.stderr
    assert "--oauth-issuer" not in done.stderr  # a2a --acp has no OAuth options


def test_a_script_using_server_run_follows_the_rule() -> None:
    done = subprocess.run([sys.executable, EXAMPLE, "--http", "0.0.0.0:0"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 2 and all(flag in done.stderr for flag in FLAGS), done.stderr


def test_the_python_api_follows_the_rule_before_anything_starts() -> None:
    server = Server("api")
    started: list[str] = []

    @server.lifespan
    def lifespan(_: Server) -> Iterator[None]:
        started.append("yes")
        yield

    for call in (lambda: server.run(transport="http", host="0.0.0.0", port=0),
                 lambda: server.serve_http("10.0.0.5", 0)):
        with pytest.raises(ValueError, match=r"token=, tokens= or oauth= \(or insecure=True"):
            call()
    assert started == []


@pytest.fixture
def insecure_public_serve() -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    child = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", "serve", EXAMPLE, "--http", "0.0.0.0:0",
                              "--insecure", "--allow-host", "mcp.example.com"],
                             stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert child.stderr is not None
        yield child, [child.stderr.readline(), child.stderr.readline()]
    finally:
        child.terminate()
        child.wait(timeout=10)


def test_a_public_start_is_info_and_names_the_accepted_hosts(
        insecure_public_serve: tuple[subprocess.Popen[str], list[str]]) -> None:
    import http.client

    _, (serving, accepting) = insecure_public_serve
    assert serving.startswith("INFO ") and "serving MCP over Streamable HTTP at http://0.0.0.0:" in serving, serving
    assert accepting.startswith("INFO ") and "--allow-host" in accepting, accepting
    for name in ("localhost", "127.0.0.1", "mcp.example.com", *machine_names("0.0.0.0")[:1]):
        assert name in accepting, (name, accepting)
    match = re.search(r":(\d+)/mcp", serving)
    assert match
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    for headers, expected in (({"Host": "evil.example.com"}, "--allow-host evil.example.com"),
                              ({"Origin": "https://app.example.com"}, "--allow-origin https://app.example.com")):
        conn = http.client.HTTPConnection("127.0.0.1", int(match.group(1)), timeout=10)
        conn.request("POST", "/mcp", body, {"Content-Type": "application/json", "MCP-Protocol-Version": MODERN,
                                            "Mcp-Method": "tools/list", **headers})
        response = conn.getresponse()
        message = json.loads(response.read())["error"]["message"]
        conn.close()
        assert response.status == 403 and expected in message, message


def test_a_loopback_start_is_info_too() -> None:
    child = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", "serve", EXAMPLE, "--http", "127.0.0.1:0"],
                             stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert child.stderr is not None
        line = child.stderr.readline()
        assert line.startswith("INFO mcp_agent_kit.http: serving MCP"), line
    finally:
        child.terminate()
        child.wait(timeout=10)


def test_refusals_name_the_flag() -> None:
    policy = Policy(bind_host="127.0.0.1", allowed_hosts=["ok.example"])
    assert policy.refusal("ok.example:80", None) is None
    assert policy.refusal("127.0.0.1:8000", "http://localhost:3000") is None
    host = policy.refusal("Other.Example:8080", None)
    assert host == "Host 'other.example' not allowed: start the server with --allow-host other.example"
    origin = policy.refusal("localhost", "https://app.example")
    assert origin == "Origin 'https://app.example' not allowed: start the server with --allow-origin https://app.example"
    assert "Host header missing" in str(policy.refusal(None, None))
    assert "--allow-host NAME" in policy.accepted_hosts()
    assert Policy(allowed_hosts=["*"]).accepted_hosts().startswith("any Host")


def test_wildcard_binds_accept_this_machines_names() -> None:
    from mcp_agent_kit.transports.http import make_server

    server: Any = make_server(Server("w").dispatcher, "0.0.0.0", 0)
    try:
        for name in machine_names("0.0.0.0"):
            assert server.policy.host_ok(name), name
        assert not server.policy.host_ok("evil.example.com")
    finally:
        server.server_close()
