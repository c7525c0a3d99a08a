"""`mcp-agent-kit call` and `list` as a user runs them: against examples/metrics_server.py (a kit server
file, spawned as `serve FILE`), an arbitrary stdio command (the official SDK's server, a legacy peer),
and a Streamable HTTP URL; elicitation declined without a terminal and asked on one (a pty)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.devloop.helpers import ASKING_SERVER, FAKE_PEER, METRICS, ROOT, kit, write
from tests.net import serving
from tests.pinned import require


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert lines[0].startswith("mcp-agent-kit: "), lines[0]
    return lines[0]


# ---- call ---------------------------------------------------------------------------------------------
def test_call_prints_the_structured_result_as_json() -> None:
    done = kit("call", METRICS, "calculate_metrics", "values=[1,2,3,4]", "metric_type=sum")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert json.loads(done.stdout) == {"metric": "sum", "value": 10, "count": 4}


def test_call_takes_the_whole_object_from_args_and_lays_pairs_over_it() -> None:
    done = kit("call", METRICS, "calculate_metrics", "--args", '{"values": [2, 4], "metric_type": "max"}',
               "metric_type=min")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"metric": "min", "value": 2, "count": 2}


def test_an_is_error_result_is_its_text_on_stderr_and_exit_1(tmp_path: Path) -> None:
    server = write(tmp_path, "asking.py", ASKING_SERVER)
    done = kit("call", server, "fail", "reason=out of coffee")
    assert (done.returncode, done.stdout) == (1, ""), done
    assert "out of coffee" in done.stderr and not done.stderr.startswith("mcp-agent-kit:")
    invalid = kit("call", METRICS, "calculate_metrics", "values=3")  # the kit's argument check: an isError result
    assert invalid.returncode == 1 and "values" in invalid.stderr and invalid.stdout == ""


def test_a_string_parameter_keeps_the_text_as_typed_and_others_get_json() -> None:
    done = kit("call", "echo", "text=0042", "--", sys.executable, FAKE_PEER, "legacy-error")
    assert (done.returncode, done.stdout) == (0, "0042\n"), done.stderr


def test_call_against_an_arbitrary_stdio_command() -> None:
    """The official Python SDK's server, started by its own command after `--`."""
    require("mcp", "mcp==2.3.0")
    done = kit("call", "add", "a=2", "b=3", "--", sys.executable, "-c", ORACLE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"result": 5}


ORACLE = (
    "from mcp.server.mcpserver import MCPServer\n"
    "app = MCPServer('oracle')\n"
    "@app.tool()\n"
    "def add(a: int, b: int) -> int:\n"
    "    '''Add two numbers.'''\n"
    "    return a + b\n"
    "app.run()\n"
)


@pytest.mark.parametrize(("argv", "code", "text"), [
    (["call", METRICS, "calculate_metric", "values=[1]"], 2, "did you mean 'calculate_metrics'?"),
    (["call", METRICS], 2, "no tool named"),
    (["call", METRICS, "calculate_metrics", "values"], 2, "expected NAME=VALUE"),
    (["call", METRICS, "calculate_metrics", "--args", "[1]"], 2, "--args must be a JSON object"),
    (["call", METRICS, "calculate_metrics", "--args", "{nope"], 2, "--args is not JSON"),
    (["call", "missing_server_file.py", "t"], 2, "no such file: missing_server_file.py"),
    (["call"], 2, "no server named"),
    (["list", "--"], 2, "nothing after --"),
    (["list", METRICS, "--", "python"], 2, "not both"),
    (["call", "t", "--", "no-such-program-for-call-xyz"], 1, "did not answer as an MCP server"),
    (["list", "--frob", METRICS], 2, "--help"),
])
def test_a_mistake_is_one_stderr_line(argv: list[str], code: int, text: str) -> None:
    done = kit(*argv)
    assert done.returncode == code, done.stderr
    assert text in one_line(done.stderr)


def test_a_broken_server_file_is_its_own_one_line_error(tmp_path: Path) -> None:
    syntax = write(tmp_path, "syntax.py", "from mcp_agent_kit import Server\nserver = Server(\n")
    done = kit("list", syntax)
    assert done.returncode == 2 and "syntax.py:2: syntax error" in one_line(done.stderr)
    two = write(tmp_path, "two.py", "from mcp_agent_kit import Server\na = Server('a', '1')\nb = Server('b', '1')\n")
    done = kit("call", two, "anything")
    assert done.returncode == 2 and "2 Server objects (a, b)" in one_line(done.stderr)


# ---- elicitation ------------------------------------------------------------------------------------------
def test_elicitation_is_declined_when_stdin_is_not_a_terminal(tmp_path: Path) -> None:
    done = kit("call", write(tmp_path, "asking.py", ASKING_SERVER), "greet")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"action": "decline", "content": None}
    assert "declined: stdin is not a terminal" in one_line(done.stderr)


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="needs a POSIX pty")
def test_elicitation_is_asked_on_the_terminal(tmp_path: Path) -> None:
    import pty

    server = write(tmp_path, "asking.py", ASKING_SERVER)
    leader, follower = pty.openpty()
    try:
        # Yes; name Ada; age "x" is refused and asked again, then 36; color by number; ok: y.
        os.write(leader, b"y\nAda\nx\n36\n2\ny\n")
        done = kit("call", server, "greet", stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"action": "accept",
                                       "content": {"name": "Ada", "age": 36, "color": "green", "ok": True}}
    assert "The server asks: Who are you?" in done.stderr and "give a whole number" in done.stderr


# ---- list ------------------------------------------------------------------------------------------------
def test_list_shows_tools_resources_and_prompts() -> None:
    done = kit("list", METRICS)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "metrics 1.0.0 — MCP 2026-07-28 (modern era)"
    assert "tools (1):" in lines and "resources (1):" in lines and "prompts (1):" in lines
    assert any(line.startswith("  calculate_metrics [read-only] — Use when you need") for line in lines)
    assert "    values: array of number, required — The numbers to summarise." in lines
    assert '    metric_type: one of "mean", "sum", "max", "min", default "mean" — Which statistic to compute.' in lines
    assert "  metrics://catalog (catalog, application/json) — The metrics this server can compute." in lines
    assert "    numbers, required" in lines


def test_list_json_gives_the_raw_lists() -> None:
    done = kit("list", "--json", METRICS)
    found = json.loads(done.stdout)
    assert set(found) == {"tools", "resources", "resourceTemplates", "prompts"}
    assert [tool["name"] for tool in found["tools"]] == ["calculate_metrics"]
    assert found["tools"][0]["inputSchema"]["required"] == ["values"]
    assert [prompt["name"] for prompt in found["prompts"]] == ["summarize_numbers"]


def test_list_an_arbitrary_stdio_command_in_the_legacy_era() -> None:
    done = kit("list", "--", sys.executable, FAKE_PEER, "legacy-error")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["fake 0 — MCP 2025-06-18 (legacy era)", "tools (1):", "  echo",
                                        "    text: string"]


def test_call_and_list_over_streamable_http(tmp_path: Path) -> None:
    cache = str(tmp_path / "oauth.json")
    with serving(lambda port: [sys.executable, METRICS, "--http", f"127.0.0.1:{port}"],
                 "http://127.0.0.1:{port}/mcp") as url:
        called = kit("call", url, "calculate_metrics", "values=[2,4]", "--cache", cache)
        listed = kit("list", url, "--json", "--cache", cache)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == {"metric": "mean", "value": 3.0, "count": 2}
    assert [tool["name"] for tool in json.loads(listed.stdout)["tools"]] == ["calculate_metrics"]


def test_a_server_named_mcp_is_found_without_a_colon(tmp_path: Path) -> None:
    """`serve` (spawned by `call`) finds `mcp = Server(...)` as FastMCP users name it."""
    server = write(tmp_path, "named.py", ASKING_SERVER)
    done = kit("list", "--json", server)
    assert done.returncode == 0, done.stderr
    assert [tool["name"] for tool in json.loads(done.stdout)["tools"]] == ["fail", "greet"]


def test_a_command_after_the_dashes_runs_with_the_callers_environment(tmp_path: Path) -> None:
    """Unlike a host or the gateway (a minimal environment), `call -- CMD` runs CMD as the user's shell would."""
    server = write(tmp_path, "env_server.py", ENV_SERVER)
    done = kit("call", "read_env", "name=MY_API_KEY_FOR_CALL", "--", sys.executable, server,
               env={**os.environ, "MY_API_KEY_FOR_CALL": "s3cret", "PYTHONPATH": str(ROOT)})
    assert (done.returncode, json.loads(done.stdout)) == (0, {"result": "s3cret"}), done.stderr


ENV_SERVER = '''
import os
from mcp_agent_kit import Server

server = Server("env", "1.0.0")

@server.tool(read_only=True)
def read_env(name: str) -> str:
    """Use when a test needs one environment variable of the server. Do not use for anything else."""
    return os.environ.get(name, "<unset>")

server.run()
'''
