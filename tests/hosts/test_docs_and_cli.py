"""docs/agent-host.md stays true and the command's front door works: the config sample parses (ids, paths, the
default), the command line sample parses, the /health sample has the host's keys, the public-bind refusal is
the line the doc shows, the SDK client sample runs against a host, and the environment sample (the seed's
AGENTCTL_* variables, no config) serves its agent until SIGTERM, which ends the agent too. Config mistakes are
one line each."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit import __main__ as front
from mcp_agent_kit import sandbox
from mcp_agent_kit.hosts.cli import parser
from mcp_agent_kit.hosts.config import ConfigError, from_environment, parse
from mcp_agent_kit.httpd import WsClientError, ws_connect
from tests.hosts.hostkit import DOC, ROOT, echo_config, get_json, gone, http, running_host
from tests.net import free_port, until, wait_listening

FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)


def samples(lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(DOC.read_text()) if kind == lang]


def command(prefix: str) -> str:
    return next(body.strip() for body in samples("sh") if prefix in body.splitlines()[0])


def test_the_config_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: "/usr/bin/bwrap")  # the sample's sandbox, on any machine
    config = parse(json.loads(samples("json")[0]), {})
    assert [(agent.id, agent.path) for agent in config.agents.values()] == [
        ("echo", "/agents/echo/acp"), ("tools/claude", "/agents/tools/claude/acp")]
    assert config.default == "echo" and config.agents["echo"].spec.max_concurrent == 4
    assert config.agents["tools/claude"].spec.sandbox is not None


def test_the_command_line_and_the_public_bind_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    args = parser().parse_args(shlex.split(command("mcp-agent-kit agent-host agents.json"))[2:])
    assert (args.config, args.http, args.token) == ("agents.json", ("0.0.0.0", 8123), ["$AGENT_HOST_TOKEN"])
    assert front.main(["agent-host", "--http", "0.0.0.0:0"]) == 2
    assert capsys.readouterr().err.strip() == samples("text")[0].strip()


@pytest.mark.parametrize(("data", "says"), [
    ({"agents": {"a": {"a2a": "http://x.example"}}}, 'serves ACP agents: give "acp"'),
    ({"agents": {}}, "names no agent"),
    ({"agents": {"a": {"acp": {"command": "x"}}}, "default": "b"}, "default 'b' is not one of the agents ['a']"),
    ({"agents": {"a": {"acp": {"command": "x"}}}, "mcpServers": {}}, "unknown keys ['mcpServers']"),
])
def test_config_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: Any,
                                      says: str) -> None:
    path = tmp_path / "host.json"
    path.write_text(json.dumps(data))
    assert front.main(["agent-host", str(path)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


def test_the_environment_and_its_mistakes() -> None:
    config = from_environment({"AGENTCTL_AGENT_COMMAND": "agent --acp 'a b'", "AGENTCTL_PORT": "9000",
                               "AGENTCTL_AUTO_START": "yes", "AGENTCTL_LOG_LEVEL": "debug"})
    assert (config.default, config.agents["default"].argv, config.port, config.auto_start, config.log_level) == (
        "default", ["agent", "--acp", "a b"], 9000, True, "DEBUG")
    assert from_environment({}).agents["default"].argv == ["auggie", "--acp"]
    for environ, says in [({"AGENTCTL_PORT": "http"}, "AGENTCTL_PORT"), ({"AGENTCTL_AUTO_START": "maybe"}, "boolean"),
                          ({"AGENTCTL_AGENT_COMMAND": " "}, "empty"), ({"AGENTCTL_LOG_LEVEL": "loud"}, "level")]:
        with pytest.raises(ConfigError, match=says):
            from_environment(environ)


def test_without_a_default_acp_names_the_agents(tmp_path: Path) -> None:
    data = echo_config(tmp_path)
    data["agents"]["other"] = data["agents"]["echo"]
    with running_host(data) as (_, where):
        init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
        status, _, body = http(f"http://{where}/acp", "POST", init.encode(), {"Content-Type": "application/json"})
        assert status == 404 and "/agents/echo/acp, /agents/other/acp" in json.loads(body)["error"]


def test_the_sdk_sample_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = samples("python")[0]
    with running_host(echo_config(tmp_path), tokens={"s3cret": "alice"}) as (_, where):
        ran = source.replace("agents.example:8123", where).replace("/srv/work", str(tmp_path))
        exec(compile(ran, "docs/agent-host.md", "exec"), {"__name__": "sample"})
    out = capsys.readouterr().out.split()
    assert out[-1] == "end_turn" and "write" in out and "agent_message_chunk" in out, out


def test_the_environment_sample_serves_until_sigterm(tmp_path: Path) -> None:
    line = command("AGENTCTL_AGENT_COMMAND=")
    words = shlex.split(line)
    environ = dict(word.split("=", 1) for word in words if "=" in word and not word.startswith("-"))
    environ["AGENTCTL_AGENT_COMMAND"] = environ["AGENTCTL_AGENT_COMMAND"].replace("python", sys.executable, 1)
    (tmp_path / "bin").mkdir()
    port = free_port()
    env = {**os.environ, **environ, "AGENTCTL_PORT": str(port), "PATH": str(tmp_path / "bin"),
           "HOME": str(tmp_path)}
    assert words[-2:] == ["mcp-agent-kit", "agent-host"]
    proc = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", "agent-host"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        where = f"127.0.0.1:{port}"
        status = get_json(f"http://{where}/api/v1/status")
        assert status["status"] == "running" and status["agent"] == "default"
        health = get_json(f"http://{where}/health")
        assert set(health) == set(json.loads(samples("json")[-1]))
        found = get_json(f"http://{where}/api/v1/agents")["found"]
        assert found and not any(agent["found"] for agent in found)  # nothing on this PATH
        with ws_connect(f"ws://{where}/acp") as ws:  # a connection open when the host stops: its agent ends too
            until(lambda: get_json(f"http://{where}/api/v1/sessions")["connections"][0]["pid"], "the agent to start")
            connected = get_json(f"http://{where}/api/v1/sessions")["connections"][0]["pid"]
            proc.send_signal(signal.SIGTERM)
            with pytest.raises(WsClientError) as closed:
                ws.recv(timeout=20)
            assert closed.value.code == 1001
        assert proc.wait(timeout=20) == 0
        until(lambda: gone(status["pid"]) and gone(connected), "the agents to end with the host")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        assert proc.stderr is not None
        proc.stderr.close()
