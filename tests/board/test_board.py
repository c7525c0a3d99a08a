"""The Board facade end to end on a temporary git repository, with examples/acp_echo_agent.py as every task's
agent: the queue's order and limits, blockers, questions answered, worktrees kept apart, diff, accept (and
merge), discard, cancel, follow-up prompts and a restart after kill -9, each checked with git itself."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.board import Board, default_data_dir
from mcp_agent_kit.board.errors import BoardError, TaskInvalid, TransitionRefused
from mcp_agent_kit.board.queue import RANK
from tests.board.boards import Transcript, running_board, settled, task_when
from tests.board.conftest import run_git


def test_a_task_runs_in_its_own_worktree_and_ends_in_review(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo) as board:
        task = board.create_task("hello there", title="Say hello")
        done = settled(board, task["id"], "review")
    assert done["result"] and "Echo: hello there" in done["result"]
    workspace = Path(done["workspace"])
    assert (workspace / "echo.txt").read_text() == "hello there\n"
    assert done["branch"].startswith(f"task/{task['id']}-say-hello") and done["base"] == "main"
    assert not (repo / "echo.txt").exists()
    assert run_git(workspace, "rev-parse", "--abbrev-ref", "HEAD") == done["branch"]


def test_mixed_priorities_start_in_priority_order_never_more_than_two_at_once(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo, start=False, max_concurrent=2) as board:
        priorities = ["low", "normal", "urgent", "high", "normal", "urgent"]
        ids = [board.create_task(f"task {i}", priority=p)["id"] for i, p in enumerate(priorities)]
        started: list[str] = []
        most = [0]

        def heard(change: dict[str, Any]) -> None:
            task = change["task"]
            if task["state"] == "running" and task["id"] not in started:
                started.append(task["id"])
            active = [t for t in board.list_tasks() if t["state"] in ("running", "needs_input")]
            most[0] = max(most[0], len(active))

        board.add_listener("task", heard)
        board.start()
        for task_id in ids:
            settled(board, task_id, "review")
    expected = sorted(ids, key=lambda i: (RANK[priorities[ids.index(i)]], ids.index(i)))
    assert started == expected
    assert most[0] == 2


def test_a_blocked_task_starts_only_after_its_blocker_is_accepted(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo) as board:
        first = board.create_task("first part")
        second = board.create_task("second part", blocked_by=[first["id"]])
        settled(board, first["id"], "review")
        waiting = task_when(board, second["id"], lambda t: "(review)" in (t["waiting"] or ""))
        assert waiting["state"] == "queued" and waiting["startedAt"] is None
        assert waiting["waiting"] == f"blocked by task {first['id']} (review): starts when it is done"
        board.accept_task(first["id"])
        done = settled(board, second["id"], "review")
    assert done["startedAt"] is not None and done["waiting"] is None


def test_a_permission_question_is_answered_through_the_board(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo, approve="ask") as board:
        told: list[tuple[str, str]] = []
        board.add_listener("event", lambda event: told.append((event["type"], event["task"]["state"])))
        task = board.create_task("ask me first")
        asking = settled(board, task["id"], "needs_input")
        question = asking["question"]
        assert question["kind"] == "permission" and "Write echo.txt" in question["message"]
        assert [o["id"] for o in question["options"]] == ["allow-once", "reject-once", "allow-always"]
        with pytest.raises(TaskInvalid, match="not one of the question's options: use one of allow-once"):
            board.answer_task(task["id"], "maybe")
        answered = board.answer_task(task["id"], "allow-once")
        assert answered["state"] in ("running", "review") and answered["question"] is None
        done = settled(board, task["id"], "review")
        with pytest.raises(TransitionRefused, match="is review: cannot answer it"):
            board.answer_task(task["id"], "allow-once")
    assert (Path(done["workspace"]) / "echo.txt").read_text() == "ask me first\n"
    assert told == [("task.needs_input", "needs_input"), ("task.review", "review")]


def test_each_echo_exists_only_in_its_own_worktree_until_accepted_then_merged(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo) as board:
        one, two = board.create_task("alpha", title="Alpha"), board.create_task("beta", title="Beta")
        one, two = settled(board, one["id"], "review"), settled(board, two["id"], "review")
        for task, text in ((one, "alpha"), (two, "beta")):
            workspace = Path(task["workspace"])
            assert (workspace / "echo.txt").read_text() == f"{text}\n"
            assert run_git(workspace, "status", "--porcelain") == "?? echo.txt"
        assert "echo.txt" not in run_git(repo, "ls-tree", "-r", "--name-only", "main").split()
        assert not (repo / "echo.txt").exists()

        diff = board.task_diff(one["id"])
        assert [(f["path"], f["status"], f["added"], f["removed"]) for f in diff["files"]] == [
            ("echo.txt", "added", 1, 0)]
        assert "+alpha" in diff["patch"]

        accepted = board.accept_task(one["id"], merge=True)
        assert accepted["state"] == "done"
        assert run_git(repo, "log", "-1", "--format=%s", one["branch"]) == f"Alpha (task {one['id']})"
        assert run_git(repo, "show", "main:echo.txt") == "alpha"
        assert f"Alpha (task {one['id']})" in run_git(repo, "log", "--format=%s", "main")
        assert run_git(Path(two["workspace"]), "status", "--porcelain") == "?? echo.txt"  # untouched

        discarded = board.discard_task(two["id"])
        assert discarded["state"] == "discarded"
    assert two["workspace"] not in run_git(repo, "worktree", "list")
    assert not Path(two["workspace"]).exists()
    assert two["branch"] not in run_git(repo, "branch", "--list", "task/*")
    assert one["branch"] in run_git(repo, "branch", "--list", "task/*")


def test_cancel_of_a_running_turn_sends_session_cancel(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo) as board:
        told: list[str] = []
        board.add_listener("event", lambda event: told.append(event["type"]))
        task = board.create_task("/wait for me")
        Transcript(board, task["id"], lambda e: e["kind"] == "message" and "Waiting" in e["text"]).wait()
        ended = Transcript(board, task["id"], lambda e: e["kind"] == "turn_end")
        cancelled = board.cancel_task(task["id"])
        assert cancelled["state"] == "cancelled"
        ended.wait()
        events = board.task_events(task["id"])["events"]
        assert board.get_task(task["id"])["state"] == "cancelled"
    assert [e["stopReason"] for e in events if e["kind"] == "turn_end"] == ["cancelled"]
    assert told == ["task.cancelled"]


def test_a_follow_up_prompt_continues_the_same_session_and_workspace(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo) as board:
        task = board.create_task("remember the tide")
        first = settled(board, task["id"], "review")
        board.prompt_task(task["id"], "what did I say before?")
        again = settled(board, task["id"], "review")
        board.accept_task(task["id"])
        with pytest.raises(TransitionRefused, match="is done: cannot prompt it"):
            board.prompt_task(task["id"], "more")
    assert again["result"] == "Before, you said: remember the tide"
    assert (again["sessionId"], again["workspace"], again["branch"]) == (
        first["sessionId"], first["workspace"], first["branch"])


def test_a_raising_listener_is_logged_and_the_others_still_hear(tmp_path: Path, repo: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    with running_board(tmp_path, repo) as board:
        heard = threading.Event()

        def broken(event: dict[str, Any]) -> None:
            raise RuntimeError("listener bug")

        board.add_listener("event", broken)
        board.add_listener("event", lambda event: heard.set())
        task = board.create_task("listen")
        settled(board, task["id"], "review")
        assert heard.wait(5)
    assert "listener bug" in caplog.text


def test_in_place_tasks_take_the_checkout_one_at_a_time(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo, workspace={"mode": "in-place"}) as board:
        first, second = board.create_task("in place"), board.create_task("after it")
        done = settled(board, first["id"], "review")
        assert done["workspace"] == str(repo) and done["branch"] is None
        assert (repo / "echo.txt").read_text() == "in place\n"
        waiting = task_when(board, second["id"], lambda t: (t["waiting"] or "").startswith("in-place"))
        assert waiting["state"] == "queued"
        board.accept_task(first["id"])
        assert run_git(repo, "log", "-1", "--format=%s", "main") == f"in place (task {first['id']})"
        settled(board, second["id"], "review")
    assert (repo / "echo.txt").read_text() == "after it\n"


def test_one_board_per_data_directory_and_the_default_one_is_outside_the_repository(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    found = default_data_dir(repo)
    assert found.parent == tmp_path / "xdg" / "mcp-agent-kit" / "boards" and found.name.startswith("repo-")
    with running_board(tmp_path, repo, start=False) as board:
        with pytest.raises(BoardError, match="another board runs on the data directory"):
            Board(board.config, repo, data_dir=board.data_dir)
        assert board.list_tasks() == []
        with pytest.raises(TaskInvalid, match="unknown listener kind"):
            board.add_listener("tasks", lambda change: None)
