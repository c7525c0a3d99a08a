"""The probe and Client over stdio against real peers: the official SDK (2.x modern, 1.x legacy),
our own metrics example, and small misbehaving fakes."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_agent_kit.client import Client, PeerError, Unavailable
from mcp_agent_kit.wire.jsonrpc import RpcError

PY = sys.executable
FAST = 1.5  # probe timeout for the peers that never answer


def test_official_v2_server_is_modern_and_calls_work(peer_scripts: dict[str, str]) -> None:
    with Client.stdio(PY, [peer_scripts["modern"]]) as client:
        assert client.verdict is not None
        assert (client.era, client.verdict.version) == ("modern", "2026-07-28")
        assert {tool["name"] for tool in client.list_tools()} == {"add", "whoami"}
        result = client.call_tool("add", {"a": 2, "b": 5})
        assert result["isError"] is False
        assert result["content"][0]["text"] == "7"


def test_official_v1_server_is_legacy_and_calls_work(peer_scripts: dict[str, str], legacy_python: str) -> None:
    with Client.stdio(legacy_python, [peer_scripts["legacy"]]) as client:
        assert client.verdict is not None
        assert client.era == "legacy"
        assert client.verdict.version == "2025-11-25"
        assert {tool["name"] for tool in client.list_tools()} == {"add", "whoami"}
        assert client.call_tool("add", {"a": 20, "b": 22})["content"][0]["text"] == "42"
        templates = client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["memo://{name}"]
        contents = client.read_resource("memo://x")["contents"]
        assert contents[0]["text"] == "memo x"


def test_our_metrics_example_is_modern_with_resources_and_prompts(peer_scripts: dict[str, str]) -> None:
    with Client.stdio(PY, [peer_scripts["metrics"]]) as client:
        assert client.era == "modern"
        result = client.call_tool("calculate_metrics", {"values": [1, 2, 3], "metric_type": "sum"})
        assert result["isError"] is False
        assert result["structuredContent"]["value"] == 6
        assert [r["uri"] for r in client.list_resources()] == ["metrics://catalog"]
        assert client.read_resource("metrics://catalog")["contents"]
        assert [p["name"] for p in client.list_prompts()] == ["summarize_numbers"]


def test_unknown_tool_is_a_json_rpc_error_from_our_server(peer_scripts: dict[str, str]) -> None:
    with Client.stdio(PY, [peer_scripts["metrics"]]) as client, pytest.raises(RpcError) as info:
        client.call_tool("no_such_tool", {})
    assert info.value.code == -32602


def test_silent_peer_is_unavailable(peer_scripts: dict[str, str]) -> None:
    client = Client.stdio(PY, [peer_scripts["fake"], "silent"], timeout=FAST)
    try:
        verdict = client.probe()
    finally:
        client.close()
    assert verdict.era == "unavailable"
    assert verdict.reason is not None and "timeout" in verdict.reason


def test_silent_peer_stays_unavailable_even_when_allowlisted(peer_scripts: dict[str, str]) -> None:
    client = Client.stdio(PY, [peer_scripts["fake"], "silent"], timeout=FAST, allow_legacy=True)
    try:
        verdict = client.probe()
    finally:
        client.close()
    assert verdict.era == "unavailable"
    assert verdict.reason is not None and verdict.reason.startswith("initialize: timeout")


def test_peer_that_exits_on_first_request_is_unavailable(peer_scripts: dict[str, str]) -> None:
    client = Client.stdio(PY, [peer_scripts["fake"], "exit-first"])
    with pytest.raises(Unavailable) as info:
        client.connect()
    client.close()
    assert "exited" in str(info.value.verdict.reason)
    assert "code 3" in str(info.value.verdict.reason)


def test_peer_that_exits_on_first_request_is_legacy_when_allowlisted(peer_scripts: dict[str, str]) -> None:
    with Client.stdio(PY, [peer_scripts["fake"], "exit-first"], allow_legacy=True) as client:
        assert client.era == "legacy"
        assert client.verdict is not None and client.verdict.version == "2025-06-18"
        assert client.call_tool("echo", {"text": "hi"})["content"][0]["text"] == "hi"


def test_garbage_printing_peer_is_unavailable(peer_scripts: dict[str, str]) -> None:
    client = Client.stdio(PY, [peer_scripts["fake"], "garbage"], timeout=FAST)
    try:
        verdict = client.probe()
    finally:
        client.close()
    assert verdict.era == "unavailable"
    assert verdict.reason is not None and "garbage" in verdict.reason
    assert "write logs to stderr (print(..., file=sys.stderr))" in verdict.reason


NOISY_SERVER = """\
print("Loading the model... done", flush=True)  # a print at import that reaches stdout, before any JSON-RPC
from mcp_agent_kit import Server

server = Server("noisy")


@server.tool
def ping() -> str:
    \"\"\"Answer pong.\"\"\"
    print("ping called")  # and one more in a handler, between replies
    return "pong"


if __name__ == "__main__":
    server.run()
"""


def test_a_server_that_prints_at_import_is_served_with_a_hint(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """As the official SDKs do, a stdout line that is not JSON-RPC is skipped with a warning, and
    the warning names the fix: log to stderr."""
    script = tmp_path / "noisy.py"
    script.write_text(NOISY_SERVER)
    with caplog.at_level(logging.WARNING, logger="mcp_agent_kit.client"), Client.stdio(PY, [str(script)]) as client:
        assert client.era == "modern"
        assert client.call_tool("ping", {})["content"][0]["text"] == "pong"
    warned = [r.getMessage() for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert any("Loading the model" in text and "file=sys.stderr" in text for text in warned), warned


def test_probe_cli_accepts_a_printing_server_and_says_to_log_to_stderr(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(NOISY_SERVER)
    done = subprocess.run([PY, "-m", "mcp_agent_kit", "probe", "--", PY, str(script)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tools"] == ["ping"]
    assert "write logs to stderr" in done.stderr and "print(..., file=sys.stderr)" in done.stderr


def test_a_json_rpc_error_to_discover_is_a_clear_legacy_signal(peer_scripts: dict[str, str]) -> None:
    with Client.stdio(PY, [peer_scripts["fake"], "legacy-error"]) as client:
        assert client.era == "legacy"


def test_missing_command_is_unavailable() -> None:
    client = Client.stdio("/nonexistent/mcp-server-binary")
    verdict = client.probe()
    client.close()
    assert verdict.era == "unavailable"
    assert "could not start" in str(verdict.reason)


def test_dead_peer_after_connect_raises_peer_error(peer_scripts: dict[str, str]) -> None:
    client = Client.stdio(PY, [peer_scripts["modern"]])
    client.connect()
    channel = client.channel
    assert channel.pid is not None  # type: ignore[attr-defined]
    subprocess.run(["kill", "-9", str(channel.pid)], check=True)  # type: ignore[attr-defined]
    with pytest.raises(PeerError) as info:
        client.list_tools()
    assert info.value.kind == "exited"
    client.close()


def test_close_reaps_the_child(peer_scripts: dict[str, str]) -> None:
    client = Client.stdio(PY, [peer_scripts["fake"], "silent"], timeout=FAST)
    client.channel.exchange({"jsonrpc": "2.0", "id": 1, "method": "x"}, 0.01)
    proc = client.channel._proc  # type: ignore[attr-defined]
    client.close()
    assert proc.returncode() is not None and not proc.group_alive()


def test_probe_cli_prints_json_and_exit_status(peer_scripts: dict[str, str]) -> None:
    ok = subprocess.run(
        [PY, "-m", "mcp_agent_kit", "probe", "--", PY, peer_scripts["metrics"]], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["era"] == "modern" and report["tools"] == ["calculate_metrics"]
    bad = subprocess.run(
        [PY, "-m", "mcp_agent_kit", "probe", "--timeout", "1", "--", PY, peer_scripts["fake"], "garbage"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["era"] == "unavailable"
