"""What the surfaces' tests share: a board, served on a free port in this process.

Two boards stand behind the surfaces. `open_board` is the FakeBoard (real BoardTasks; the test plays the
scheduler and the runner with its step helpers: start_task, say, ask, finish, fail) for the tests that
need a task in a given state at a given moment. `open_real_board` is board.board.Board itself on a fresh
temporary repository, NOT started (its tasks stay where the test puts them; nothing runs), with two
agents, `echo` and `other`, both examples/acp_echo_agent.py: the tests that use only the contract (the
facade's methods, through the surfaces) run against both (`BOARDS`, for a parametrized fixture).
tests/board/test_board_e2e.py drives a started real Board end to end.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.board.fake_board import FakeBoard


def open_board(tmp_path: Path) -> FakeBoard:
    return FakeBoard(None, tmp_path)


def open_real_board(tmp_path: Path) -> Any:
    """board.board.Board, not started, on a new one-commit repository under `tmp_path` (git's identity and
    config are conftest.py's `git_identity`), agents `echo` (the default) and `other`."""
    from mcp_agent_kit.board.board import Board
    from mcp_agent_kit.board.config import parse_config
    from tests.board.boards import ECHO_AGENT

    repo = tmp_path / "real-repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    agent = {"acp": {"command": sys.executable, "args": [str(ECHO_AGENT)],
                     "env": {"ACP_ECHO_AGENT_DIR": str(tmp_path / "sessions")}}}
    config = parse_config({"agents": {"echo": agent, "other": agent}, "board": {"agent": "echo"}})
    return Board(config, repo, data_dir=tmp_path / "real-board-data")


# the boards the contract-only tests run against: name -> opener (a fixture parametrized over them)
BOARDS: dict[str, Callable[[Path], Any]] = {"fake": open_board, "real": open_real_board}


@contextmanager
def served(board: Any, **options: Any) -> Iterator[str]:
    """The board's MCP endpoint (board.cli.make_board_http) on a free loopback port; yields its URL."""
    from mcp_agent_kit.board.cli import make_board_http

    http, tools = make_board_http(board, "127.0.0.1", 0, **options)
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield str(http.url)
    finally:
        tools.close()
        http.shutdown()
        http.server_close()
        thread.join(10)


PERMISSION = {"kind": "permission", "message": "Write echo.txt?",
              "options": [{"id": "allow", "name": "Allow", "kind": "allow_once"},
                          {"id": "deny", "name": "Deny", "kind": "reject_once"}]}
DIFF = {"files": [{"path": "echo.txt", "status": "added", "added": 1, "removed": 0, "binary": False}],
        "patch": "diff --git a/echo.txt b/echo.txt\nnew file mode 100644\n--- /dev/null\n+++ b/echo.txt\n"
                 "@@ -0,0 +1 @@\n+hello\n"}
