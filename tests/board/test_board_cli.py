"""`mcp-agent-kit board`: its mistakes are one stderr line (exit 2 for usage and config, 1 for a port in use),
and a served board (the real board.board.Board on a temporary repository) is started, answers MCP at /mcp
and the A2A card on the same port, and is closed on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board import cli
from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config
from tests.board.boards import echo_config
from tests.net import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[2]


def kit(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", "board", *argv], capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdin=subprocess.DEVNULL)


def one_line(err: str, text: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcp-agent-kit: ") and text in lines[0], err


@pytest.mark.parametrize(("argv", "text"), [
    (["--http", "127.0.0.1:70000"], "65535"),
    (["--http", "nonsense"], "expected HOST:PORT"),
    (["--repo", "{d}/missing"], "no such directory: --repo"),
    (["--http", "0.0.0.0:0"], "exposes the board to the network without authentication"),
    (["{d}/missing.json"], "no such config file"),
    (["--frob"], "unrecognized arguments: --frob"),
    (["--oauth-scopes", "x"], "--oauth-* options need --oauth-issuer"),
    (["--a2a-port", "-1"], "port must be a number from 0 to 65535"),
    (["--a2a-port", "0", "--no-a2a"], "not allowed with argument"),
])
def test_usage_mistakes_are_one_line_exit_2(tmp_path: Path, argv: list[str], text: str) -> None:
    done = kit(*(arg.format(d=tmp_path) for arg in argv), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    one_line(done.stderr, text)


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def run_main(argv: list[str]) -> int:
    from mcp_agent_kit.cli_common import guarded

    return guarded(lambda: cli.main(argv))


@pytest.mark.parametrize(("document", "problem"), [
    ({"board": {"max_concurrent": "many"}}, '"board": max_concurrent must be a whole number'),
    ({"agents": {}, "board": {"webhooks": [{"url": "http://127.0.0.1:9/hook", "secretEnv": "NO_SUCH_SECRET"}]}},
     "environment variable NO_SUCH_SECRET is not set: export NO_SUCH_SECRET"),
])
def test_a_config_error_is_one_line(tmp_path: Path, repo: Path, document: dict[str, Any], problem: str,
                                    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("NO_SUCH_SECRET", raising=False)
    config = tmp_path / "board.json"
    config.write_text(json.dumps(document))
    data = tmp_path / "data"
    assert run_main([str(config), "--repo", str(repo), "--http", "127.0.0.1:0", "--data-dir", str(data)]) == 2
    err = capsys.readouterr().err
    one_line(err, f"{config}: ")
    assert problem in err
    assert not data.exists()  # refused before a board was opened


def test_more_mistakes_in_process(tmp_path: Path, repo: Path, busy_port: int,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--repo", str(repo), "--data-dir", str(tmp_path / "data")]
    assert run_main([*base, "--http", f"127.0.0.1:{busy_port}"]) == 1
    one_line(capsys.readouterr().err, f"cannot listen on 127.0.0.1:{busy_port}")
    assert run_main([*base, "--http", "127.0.0.1:0", "--a2a-port", str(busy_port)]) == 1
    one_line(capsys.readouterr().err, f"cannot listen on 127.0.0.1:{busy_port} (--a2a-port)")
    assert run_main([*base, "--http", "127.0.0.1:0", "--store", "ftp://nowhere"]) == 2
    one_line(capsys.readouterr().err, "cannot open --store")
    assert run_main(["--repo", str(tmp_path), "--http", "127.0.0.1:0", "--data-dir", str(tmp_path / "d")]) == 2
    one_line(capsys.readouterr().err, "cannot open the board of")  # tmp_path is no git checkout
    with Board(parse_config(echo_config(tmp_path / "sessions")), repo, data_dir=tmp_path / "data"):
        assert run_main([*base, "--http", "127.0.0.1:0"]) == 2
        one_line(capsys.readouterr().err, "another board runs on the data directory")


def test_the_board_serves_mcp_and_closes_on_sigterm(tmp_path: Path, repo: Path) -> None:
    from mcp_agent_kit.client.client import Client

    port = free_port()
    seen: dict[str, Any] = {}
    config, data = tmp_path / "board.json", tmp_path / "data"
    config.write_text(json.dumps(echo_config(tmp_path / "sessions")))

    def visit() -> None:  # a client, then SIGTERM, as an orchestrator stopping the board would
        try:
            wait_listening(port)
            with Client.http(f"http://127.0.0.1:{port}/mcp", timeout=30) as client:
                seen["tools"] = sorted(tool["name"] for tool in client.list_tools())
                seen["created"] = client.call_tool("create_task", {"prompt": "Hello", "hold": True})[
                    "structuredContent"]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/.well-known/agent-card.json", timeout=30) as got:
                seen["card"] = json.load(got)  # the A2A agent, on the same port
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # a SIGTERM after the board stopped is harmless
    try:
        visitor = threading.Thread(target=visit)
        visitor.start()
        code = run_main([str(config), "--repo", str(repo), "--http", f"127.0.0.1:{port}", "--data-dir", str(data)])
        visitor.join(30)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 0
    assert "create_task" in seen["tools"] and len(seen["tools"]) == 11
    assert seen["created"]["state"] == "held"
    assert seen["card"]["supportedInterfaces"][0]["url"] == f"http://127.0.0.1:{port}/a2a"
    # closed: the data directory is free again, and the task outlived the board
    with Board(parse_config(echo_config(tmp_path / "sessions")), repo, data_dir=data) as again:
        assert again.get_task(seen["created"]["id"])["state"] == "held"
