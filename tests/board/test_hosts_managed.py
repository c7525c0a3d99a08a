"""The board on an agent host that manages the workspaces (issue #28 item 3, `mounted` false, the default): one
`mcp-agent-kit agent-host --workspaces DIR` process serving examples/acp_echo_agent.py, a board with that host and
`board.repoUrl` its repository's file:// URL. A task runs in the host's worktree (the board keeps none), its
permission question is answered on the board, the echo agent writes echo.txt through the host's fs handler, the
board's diff is the host's, accept fetches the host's bundle into the board's repository and the host's workspace
goes; discard removes another task's host workspace; a host killed mid-turn sends an unchanged task back to the
queue and, restarted on the same port and directory, runs it again."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config
from tests.board.boards import WAIT_S, Transcript, echo_config, settled
from tests.board.conftest import run_git
from tests.board.test_hosts import Host, host_config
from tests.net import free_port, until


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    one = Host(host_config(tmp_path), free_port(), "--workspaces", str(tmp_path / "host-workspaces"))
    try:
        yield one.start()
    finally:
        one.kill()


def _board(tmp_path: Path, repo: Path, host: Host) -> Board:
    document = echo_config(tmp_path / "sessions", approve="ask", repoUrl=repo.resolve().as_uri())
    document["hosts"] = {"h1": {"url": host.url, "capacity": 2, "poll": 0.1}}
    return Board(parse_config(document), repo, data_dir=tmp_path / "board-data")


def _host_workspaces(host: Host) -> dict[str, dict[str, Any]]:
    with urllib.request.urlopen(f"{host.url}/api/v1/workspaces", timeout=WAIT_S) as answer:
        return {w["id"]: w for w in json.load(answer)["workspaces"]}


def _asking(board: Board, task_id: str) -> dict[str, Any]:
    task = settled(board, task_id, "needs_input")
    assert task["question"]["kind"] == "permission" and "Write echo.txt" in task["question"]["message"]
    return task


def test_a_task_runs_in_the_hosts_worktree_and_its_bundle_is_accepted_into_the_boards_repository(
        tmp_path: Path, repo: Path, host: Host) -> None:
    with _board(tmp_path, repo, host) as board:
        board.start()
        until(lambda: board.status()["hosts"][0]["live"], "the host live", WAIT_S)
        kept, gone = board.create_task("hello from a host", title="Echo"), board.create_task("thrown away")
        for task in (kept, gone):
            asking = _asking(board, task["id"])
            assert asking["host"] == "h1" and board.workspaces.find(task["id"]) is None
            there = _host_workspaces(host)[task["id"]]
            assert asking["workspace"] == there["path"] and Path(there["path"]).is_relative_to(tmp_path /
                                                                                               "host-workspaces")
            assert there["branch"] == asking["branch"] and there["base"] == run_git(repo, "rev-parse", "main")
            board.answer_task(task["id"], "allow-once")
            settled(board, task["id"], "review")
        assert not (tmp_path / "board-data" / "worktrees").exists() or not any(
            (tmp_path / "board-data" / "worktrees").iterdir())

        (repo / "later.txt").write_text("main moves on\n")  # a follow-up keeps the task's base and workspace
        run_git(repo, "add", "later.txt")
        run_git(repo, "commit", "-q", "-m", "later")
        first = board.get_task(kept["id"])
        board.prompt_task(kept["id"], "turns?")
        review = settled(board, kept["id"], "review")
        assert (review["workspace"], review["branch"]) == (first["workspace"], first["branch"])
        assert any(e.get("kind") == "message" and "Turns so far: 1" in e.get("text", "")
                   for e in board.task_events(kept["id"])["events"])
        written = Path(review["workspace"], "echo.txt")
        assert written.read_text() == "hello from a host\n"
        diff = board.task_diff(kept["id"])
        assert [(f["path"], f["status"], f["added"], f["removed"]) for f in diff["files"]] == [
            ("echo.txt", "added", 1, 0)]
        assert "+hello from a host" in diff["patch"]
        assert _host_workspaces(host)[kept["id"]]["changed"] is True

        accepted = board.accept_task(kept["id"], merge=True)
        assert accepted["state"] == "done"
        assert run_git(repo, "show", f"{review['branch']}:echo.txt") == "hello from a host"
        assert run_git(repo, "log", "-1", "--format=%s", review["branch"]) == f"Echo (task {kept['id']})"
        assert run_git(repo, "show", "main:echo.txt") == "hello from a host"  # merged, main's later commit kept
        assert (repo / "echo.txt").read_text() == "hello from a host\n" and (repo / "later.txt").is_file()
        assert kept["id"] not in _host_workspaces(host) and not written.exists()

        discarded = board.discard_task(gone["id"])
        assert discarded["state"] == "discarded" and _host_workspaces(host) == {}


def test_a_host_killed_mid_turn_requeues_the_unchanged_task_which_runs_there_again_once_it_is_back(
        tmp_path: Path, repo: Path, host: Host) -> None:
    with _board(tmp_path, repo, host) as board:
        board.start()
        until(lambda: board.status()["hosts"][0]["live"], "the host live", WAIT_S)
        task_id = board.create_task("/wait for me")["id"]
        Transcript(board, task_id, lambda e: e.get("kind") == "message" and "Waiting" in e.get("text", "")).wait()
        assert board.get_task(task_id)["host"] == "h1" and task_id in _host_workspaces(host)

        host.kill()  # mid-turn, nothing written: back to the queue, waiting for the host
        queued = until(lambda: (t := board.get_task(task_id))["state"] == "queued" and "no host of agent echo is live"
                       in (t["waiting"] or "") and t, "the task back in the queue", WAIT_S)
        assert queued["error"] is None and [e["text"] for e in board.task_events(task_id)["events"] if e["kind"] ==
                                            "error"] == ["host h1 running this task vanished: the task is back in the "
                                                         "queue (its workspace had no changes)"]
        seen = board.task_events(task_id)["next"]

        host.start()  # the same port and workspaces directory: the task runs there again, in the same worktree
        Transcript(board, task_id, lambda e: e["seq"] > seen and e.get("kind") == "message"
                   and "Waiting" in e.get("text", "")).wait()
        again = board.get_task(task_id)
        assert (again["state"], again["host"]) == ("running", "h1")
        assert again["workspace"] == queued["workspace"] == _host_workspaces(host)[task_id]["path"]
        board.cancel_task(task_id)

        done = board.create_task("back again")
        board.answer_task(_asking(board, done["id"])["id"], "allow-always")
        review = settled(board, done["id"], "review")
        assert Path(review["workspace"], "echo.txt").read_text() == "back again\n"
