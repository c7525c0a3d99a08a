"""The kit's ACP client against Qwen Code's own network server, `qwen serve` (0.24.4, pinned), in both profiles.

The daemon listens on a loopback port (trusted, no token), bound to a throwaway workspace, its model the offline
fake (tests/acp/fake_openai.py); its `/acp` endpoint takes the WebSocket and the Streamable HTTP profile.
One daemon serves both tests: each connects, opens a session in the workspace, switches it to Qwen's
`default` mode (a daemon session starts in `auto`, which asks no questions) and sends a prompt that makes
the model write a file; the permission question comes to our client over the network, our policy answers
it, and the file lands (written by the daemon's own agent: Qwen's daemon is the fs client of its child).
Qwen quirk: the daemon listens before its WebSocket upgrade handler is installed (an upgrade that early is
answered 406), so the fixture waits for its "WebSocket transport enabled" line.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_agent_kit.acp.client.client import AcpAgent
from mcp_agent_kit.acp.client.permissions import AllowAll
from tests.net import free_port

from .fake_openai import FakeOpenAI
from .real_qwen import QUIET_SETTINGS, install_qwen

READY = "WebSocket transport enabled"


@dataclass
class Daemon:
    port: int
    workspace: Path
    fake: FakeOpenAI
    output: list[str]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    qwen = install_qwen()
    root = tmp_path_factory.mktemp("qwen-serve")
    home, workspace = root / "home", root / "work"
    (home / ".qwen").mkdir(parents=True)
    workspace.mkdir()
    (home / ".qwen" / "settings.json").write_text(json.dumps(QUIET_SETTINGS))
    fake = FakeOpenAI(cwd=workspace).start()
    port = free_port()
    env = {**os.environ, "HOME": str(home), "OPENAI_API_KEY": "x", "OPENAI_BASE_URL": fake.base_url,
           "OPENAI_MODEL": "fake-model", "NO_COLOR": "1"}
    proc = subprocess.Popen([str(qwen), "serve", "--hostname", "127.0.0.1", "--port", str(port), "--workspace",
                             str(workspace), "--no-web"], env=env, cwd=workspace, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)
            if READY in line:
                ready.set()
        ready.set()  # it ended: the check below says so

    threading.Thread(target=drain, daemon=True).start()
    try:
        assert ready.wait(60) and proc.poll() is None, f"qwen serve did not start: {''.join(output)[-2000:]}"
        yield Daemon(port, workspace, fake, output)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(5)
        fake.stop()


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_qwen_serve_writes_a_file_after_our_permission_answer(daemon: Daemon, profile: str) -> None:
    url = f"{profile}://127.0.0.1:{daemon.port}/acp"
    name = f"{profile}-notes.txt"
    with AcpAgent.connect(url, cwd=str(daemon.workspace), policy=AllowAll()) as agent:
        info = agent.initialize()
        assert info.protocol_version == 1 and "connectionId" in info.agent_capabilities["_meta"]["qwen"]
        session = agent.new_session(str(daemon.workspace))
        session.set_mode("default")  # file edits ask permission
        result = session.run(f"WRITE {name} written through {profile}")
    assert result.stop_reason == "end_turn", result
    assert [(p["outcome"], p["optionId"]) for p in result.permissions] == [("selected", "proceed_once")]
    assert (daemon.workspace / name).read_text() == f"written through {profile}"
    assert "The tool said: " in result.text and name in result.text
