"""What the surfaces' tests share: a board, served on a free port in this process.

`open_board` is the one line that picks the board behind the surfaces: the in-memory FakeBoard now,
board.board.Board on a temporary repository once it is merged (tests/board/conftest.py's `repo`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.board.fake_board import FakeBoard


def open_board(tmp_path: Path) -> FakeBoard:
    return FakeBoard(None, tmp_path)


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
