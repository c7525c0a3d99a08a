"""`python -m mcp_agent_kit serve` on stdio and HTTP, with a real child process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "metrics_server.py"
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}


def test_serve_stdio() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_agent_kit", "serve", f"{EXAMPLE}:server", "--stdio"],
        input=json.dumps(DISCOVER) + "\n", capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout.splitlines()[0])
    assert reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "metrics"


def test_serve_http_with_token() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "mcp_agent_kit", "serve", str(EXAMPLE), "--http", "127.0.0.1:0", "--token", "tok"],
        stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        assert child.stderr is not None
        line = child.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        assert match, line
        url = f"http://127.0.0.1:{match.group(1)}/mcp"
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
        request = urllib.request.Request(url, json.dumps(DISCOVER).encode(), headers)
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("served without a token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 401
        request = urllib.request.Request(url, json.dumps(DISCOVER).encode(), {**headers, "Authorization": "Bearer tok"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["result"]["supportedVersions"] == ["2026-07-28"]
    finally:
        child.terminate()
        child.wait(timeout=10)


def test_bad_targets_exit_2() -> None:
    for argv in (["no_such_module_xyz:server"], [f"{EXAMPLE}:nope"], [f"{EXAMPLE}", "--http", "nonsense"]):
        done = subprocess.run([sys.executable, "-m", "mcp_agent_kit", "serve", *argv],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert done.returncode == 2, (argv, done.stderr)
        assert "Traceback" not in done.stderr


def test_example_over_http_exits_zero_on_sigterm() -> None:
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    from tests.net import free_port, wait_listening

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(root / "examples" / "metrics_server.py"), "--http",
                             f"127.0.0.1:{port}", "--max-message-bytes", "65536"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
