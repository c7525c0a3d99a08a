"""Helpers for the board's runtime tests: a board config whose agent is examples/acp_echo_agent.py, a Board on a
temporary repository, and listeners that collect what a board tells (each bounded, none sleeps)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config

ECHO_AGENT = Path(__file__).resolve().parents[2] / "examples" / "acp_echo_agent.py"
WAIT_S = 30.0  # the bound of every wait (a test fails, never hangs)


def echo_config(sessions: Path, *, approve: str = "all", max_concurrent: int = 4, **board: Any) -> dict[str, Any]:
    """A config document with one agent, `echo` (the echo agent, its sessions under `sessions`)."""
    return {"agents": {"echo": {"acp": {"command": sys.executable, "args": [str(ECHO_AGENT)], "approve": approve,
                                        "env": {"ACP_ECHO_AGENT_DIR": str(sessions)}}}},
            "board": {"max_concurrent": max_concurrent, **board}}


@contextmanager
def running_board(tmp_path: Path, repo: Path, *, start: bool = True, **config: Any) -> Iterator[Board]:
    board = Board(parse_config(echo_config(tmp_path / "sessions", **config)), repo, data_dir=tmp_path / "board-data")
    try:
        if start:
            board.start()
        yield board
    finally:
        board.close()


def settled(board: Board, task_id: str, *states: str) -> dict[str, Any]:
    """wait_task with the tests' bound; the task must reach one of `states`."""
    task = board.wait_task(task_id, states, WAIT_S)
    assert task["state"] in states, f"task {task_id} is {task['state']} ({task.get('error')}), not {states}"
    return task


class Transcript:
    """Sets an Event when a task's transcript holds an event `match` accepts (a "task" listener)."""

    def __init__(self, board: Board, task_id: str, match: Callable[[dict[str, Any]], bool]) -> None:
        self.board, self.task_id, self.match = board, task_id, match
        self.found = threading.Event()
        self.remove = board.add_listener("task", self._heard)
        self._heard({"task": {"id": task_id}})

    def _heard(self, change: dict[str, Any]) -> None:
        if change["task"]["id"] == self.task_id and not self.found.is_set():
            events = self.board.task_events(self.task_id)["events"]
            if any(self.match(event) for event in events):
                self.found.set()

    def wait(self) -> None:
        assert self.found.wait(WAIT_S), f"task {self.task_id}: the transcript never showed it"
        self.remove()


def task_when(board: Board, task_id: str, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The task once `check` accepts it, woken by the board's "task" listener (bounded)."""
    found = threading.Event()

    def heard(change: dict[str, Any]) -> None:
        if change["task"]["id"] == task_id and check(board.get_task(task_id)):
            found.set()

    remove = board.add_listener("task", heard)
    try:
        if not check(board.get_task(task_id)):
            assert found.wait(WAIT_S), f"task {task_id} never became what the test waits for"
    finally:
        remove()
    return board.get_task(task_id)


class LiveServed:
    """A board as `mcp-agent-kit board` serves it to people: MCP, the web board (/, /login, /api/session,
    /static) and the live API (/ws, /events) on one loopback port of the OS's choosing."""

    def __init__(self, board: Any, **options: Any) -> None:
        from mcp_agent_kit.board.cli import make_board_http, mount_people
        from mcp_agent_kit.store.memory import MemoryStore

        self.board = board
        self._own_store = None if hasattr(board, "store") else MemoryStore()  # the FakeBoard has none
        self.http, self.tools = make_board_http(board, "127.0.0.1", 0, **options)
        self.live = mount_people(board, self.http, self._own_store or board.store)  # the page's keys live there
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.port = int(self.http.server_address[1])
        self.origin = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/ws"

    def close(self) -> None:
        self.live.close()
        self.tools.close()
        self.http.shutdown()
        self.http.server_close()
        self.thread.join(10)
        if self._own_store is not None:
            self._own_store.close()


@contextmanager
def live_served(board: Any, **options: Any) -> Iterator[LiveServed]:
    """`board` served with the page and the live API (LiveServed) until the block ends; `options` are
    make_board_http's (tokens, allowed_origins, ...)."""
    served = LiveServed(board, **options)
    try:
        yield served
    finally:
        served.close()
