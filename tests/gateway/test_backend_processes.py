"""A gateway's MCP backends are spawned by the kit's one child-process manager (mcp_agent_kit.process):
stopping the gateway ends every process a backend started, grandchildren included, and a backend
sees the minimal environment plus its config's `env`, never an unrelated secret of ours."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.gateway import Gateway, parse_config
from tests.net import gateway_args, until
from tests.stdio_peer import modern

PY = sys.executable

# A backend that starts a long-lived grandchild (not holding its pipes: only the group kill can end
# it) and says both pids in the file its config's env names; its one tool reports the environment it was given.
FORKING_BACKEND = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from mcp_agent_kit import Server

    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.environ["PIDS_FILE"] + ".tmp", "w") as handle:
        json.dump({"server": os.getpid(), "grandchild": grandchild.pid}, handle)
    os.replace(os.environ["PIDS_FILE"] + ".tmp", os.environ["PIDS_FILE"])

    server = Server("forking")


    @server.tool
    def environment() -> str:
        \"\"\"The names and values of this process's environment, as JSON.\"\"\"
        return json.dumps(dict(os.environ))


    if __name__ == "__main__":
        server.run()
    """
)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by whoever adopted it, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def backend_spec(tmp_path: Path, **env: str) -> tuple[dict[str, Any], Path]:
    script = tmp_path / "forking.py"
    script.write_text(FORKING_BACKEND)
    pids = tmp_path / "pids.json"
    entry: dict[str, Any] = {"command": PY, "args": [str(script)], "env": {"PIDS_FILE": str(pids), **env}}
    return {"mcpServers": {"forking": entry}}, pids


def kill_leftovers(pids: Path) -> None:
    """After a failed check: end what the backend started, so that no test leaves a sleeper behind."""
    if pids.exists():
        for pid in json.loads(pids.read_text()).values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def started_pids(pids: Path) -> dict[str, int]:
    found: dict[str, int] = until(lambda: pids.exists() and json.loads(pids.read_text()), "the backend's pids")
    assert alive(found["server"]) and alive(found["grandchild"]), found
    return found


@pytest.fixture
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Gateway, Path]]:
    monkeypatch.setenv("SECRET_TOKEN_XYZ", "not-for-backends")
    config, pids = backend_spec(tmp_path, NAMED_TOKEN="given-on-purpose")
    gateway = Gateway(parse_config(config), timeout=60)
    gateway.start(follow=False)
    try:
        yield gateway, pids
    finally:
        gateway.close()
        kill_leftovers(pids)


def test_closing_the_gateway_ends_its_backends_processes_and_theirs(gateway: tuple[Gateway, Path]) -> None:
    gw, pids = gateway
    assert not gw.backends["forking"].broken, gw.backends["forking"].error
    found = started_pids(pids)
    gw.close()
    until(lambda: not alive(found["server"]), "the backend's server process to end")
    until(lambda: not alive(found["grandchild"]), "the process the backend started to end")


def test_a_backend_sees_the_minimal_environment_and_its_configs_env(gateway: tuple[Gateway, Path]) -> None:
    gw, _ = gateway
    listed = gw.server.handle(modern(1, "tools/list"))
    assert listed is not None and "result" in listed, listed
    name = next(tool["name"] for tool in listed["result"]["tools"] if tool["name"].endswith("environment"))
    reply = gw.server.handle(modern(2, "tools/call", name=name, arguments={}))
    assert reply is not None and "result" in reply and not reply["result"].get("isError"), reply
    seen = json.loads(reply["result"]["content"][0]["text"])
    assert "SECRET_TOKEN_XYZ" not in seen  # an unrelated secret of ours stays ours
    assert seen["NAMED_TOKEN"] == "given-on-purpose"  # what the config's env names is passed
    assert seen.get("PATH") == os.environ.get("PATH")  # and what every program needs


def test_a_gateway_stopped_by_sigterm_ends_its_backends_processes_and_theirs(tmp_path: Path) -> None:
    config, pids = backend_spec(tmp_path)
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config))
    gateway = subprocess.Popen([PY, *gateway_args(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        assert gateway.stdin is not None and gateway.stdout is not None
        gateway.stdin.write(json.dumps(modern(1, "tools/list")).encode() + b"\n")
        gateway.stdin.flush()
        assert b'"result"' in gateway.stdout.readline()  # serving: its SIGTERM handler is in place
        found = started_pids(pids)
        gateway.send_signal(signal.SIGTERM)  # stdin still open: the stdio transport stops on the signal
        gateway.wait(60)
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait(10)
        for stream in (gateway.stdin, gateway.stdout, gateway.stderr):
            if stream is not None:
                stream.close()
    try:
        until(lambda: not alive(found["server"]), "the backend's server process to end")
        until(lambda: not alive(found["grandchild"]), "the process the backend started to end")
    finally:
        kill_leftovers(pids)
