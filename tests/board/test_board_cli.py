"""`mcp-agent-kit board`: its mistakes are one stderr line (exit 2 for usage and config, 1 for a port in use),
and a served board is started, answers MCP at /mcp, and is closed on SIGTERM. The Board and its config
loader are board.board's and board.config's; until those are merged, `facade` stands in for them."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board import cli
from tests.board.fake_board import FakeBoard
from tests.net import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[2]
REAL = importlib.util.find_spec("mcp_agent_kit.board.config") is not None


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
])
def test_usage_mistakes_are_one_line_exit_2(tmp_path: Path, argv: list[str], text: str) -> None:
    done = kit(*(arg.format(d=tmp_path) for arg in argv), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    one_line(done.stderr, text)


class StandIn:
    """board.config.load_config and board.board.Board before they are merged: a config is any JSON object
    without a "bad" key (a ConfigError-like ValueError otherwise); the Board is the FakeBoard."""

    def __init__(self) -> None:
        self.boards: list[FakeBoard] = []

    def load_config(self, path: str | None) -> dict[str, Any]:
        data = json.loads(Path(path).read_text()) if path else {}
        if "bad" in data or not isinstance(data.get("board", {}), dict):
            raise ValueError("board.max_concurrent must be a positive integer; fix the config")
        return dict(data)

    def board(self, config: Any, repo: Any, **options: Any) -> FakeBoard:
        if options.get("data_dir") == "refuse":
            raise ValueError("the data directory is inside the repository")
        made = FakeBoard(config, repo, **options)
        self.boards.append(made)
        return made


@pytest.fixture
def facade(monkeypatch: pytest.MonkeyPatch) -> StandIn:
    stand_in = StandIn()
    names: dict[tuple[str, str], Any] = {("board", "Board"): stand_in.board}
    if not REAL:
        names["config", "load_config"] = stand_in.load_config
    real = cli._facade
    monkeypatch.setattr(cli, "_facade", lambda module, name: names.get((module, name)) or real(module, name))
    return stand_in


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def run_main(argv: list[str]) -> int:
    from mcp_agent_kit.cli_common import guarded

    return guarded(lambda: cli.main(argv))


def test_a_config_error_is_one_line(tmp_path: Path, facade: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "board.json"
    config.write_text(json.dumps({"board": {"max_concurrent": "many"}, "bad": True}))
    assert run_main([str(config), "--repo", str(tmp_path), "--http", "127.0.0.1:0"]) == 2
    one_line(capsys.readouterr().err, str(config))
    assert facade.boards == []


def test_more_mistakes_in_process(tmp_path: Path, facade: StandIn, busy_port: int,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--repo", str(tmp_path)]
    assert run_main([*base, "--http", f"127.0.0.1:{busy_port}"]) == 1
    one_line(capsys.readouterr().err, f"cannot listen on 127.0.0.1:{busy_port}")
    assert run_main([*base, "--http", "127.0.0.1:0", "--store", "ftp://nowhere"]) == 2
    one_line(capsys.readouterr().err, "cannot open --store")
    assert run_main([*base, "--http", "127.0.0.1:0", "--data-dir", "refuse"]) == 2
    one_line(capsys.readouterr().err, "cannot open the board of")
    assert facade.boards == []


def test_the_board_serves_mcp_and_closes_on_sigterm(tmp_path: Path, facade: StandIn) -> None:
    from mcp_agent_kit.client.client import Client

    port = free_port()
    seen: dict[str, Any] = {}

    def visit() -> None:  # a client, then SIGTERM, as an orchestrator stopping the board would
        try:
            wait_listening(port)
            with Client.http(f"http://127.0.0.1:{port}/mcp", timeout=30) as client:
                seen["tools"] = sorted(tool["name"] for tool in client.list_tools())
                seen["created"] = client.call_tool("create_task", {"prompt": "Hello"})["structuredContent"]
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # a SIGTERM after the board stopped is harmless
    try:
        visitor = threading.Thread(target=visit)
        visitor.start()
        code = run_main(["--repo", str(tmp_path), "--http", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d")])
        visitor.join(30)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 0
    assert "create_task" in seen["tools"] and len(seen["tools"]) == 11
    assert seen["created"]["state"] == "queued"
    [board] = facade.boards
    assert board.started and board.closed
