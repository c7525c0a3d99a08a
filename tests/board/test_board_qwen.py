"""A real agent on the board: Qwen Code (pinned, tests/acp/real_qwen.py) runs a board task offline.

A temporary repository with one committed file; a real Board whose one agent is `qwen --acp
--approval-mode default` (the kit's `qwen-code` command line) with a throwaway HOME whose
~/.qwen/settings.json is the quiet offline one and OPENAI_* pointing at tests/acp/fake_openai.py on
loopback. The fake model is scripted for this task's prompt: it reads the committed file, edits one
line of it (Qwen's `edit` tool), creates a second file (`write_file`), then says it is done, each step
once the agent has handed back the previous tool's result. Qwen asks permission for both writes
(approve "ask"): each question reaches the task (needs_input) and is answered through
Board.answer_task with the question's allow-once option. Then the task is in review, `task_diff`
shows both files line by line, the files are in the task's worktree, and the base checkout is
untouched. A follow-up (Board.prompt_task) starts a new Qwen process that loads the task's session:
the model gets the first turn as context, and the transcript gets only the new turn (not what Qwen
replays while loading). Every wait is bounded (the board's wait_task, the tests' polling), no timing is asserted,
and no process of the agent is left once the board is closed. Qwen cannot be installed: the test
FAILS (a pinned peer is never a silent skip), as the ACP tests do.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config
from tests.acp.fake_openai import FakeOpenAI, Reply, last_user_text
from tests.acp.real_qwen import AGENT_ARGS, QUIET_SETTINGS, agent_processes, install_qwen
from tests.board.conftest import run_git
from tests.net import wait_until

WAIT_S = 120.0  # the bound of each wait for the agent (Qwen starts three node processes; CI machines are slow)
PROMPT = "BOARD-QWEN: make the second line of notes.txt loud and add hello.txt"
BEFORE = "one\ntwo\nthree\n"
AFTER = "one\nTWO\nthree\n"
HELLO = "hello from qwen\n"
FINAL = "Done: notes.txt edited, hello.txt written."
FOLLOW_UP = "FOLLOW-UP: what did you change?"
RECALLED = "I made the second line loud."


@pytest.fixture(scope="session")
def qwen_bin() -> Path:
    return install_qwen()


def steps(workspace: Callable[[], Path]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the fake model makes for PROMPT, in order: read, edit, write (paths in the task's worktree)."""
    notes, hello = str(workspace() / "notes.txt"), str(workspace() / "hello.txt")
    return [("read_file", {"file_path": notes}),  # Qwen edits only a file it has read in the session
            ("edit", {"file_path": notes, "old_string": "two\n", "new_string": "TWO\n"}),
            ("write_file", {"file_path": hello, "content": HELLO})]


def scripted(workspace: Callable[[], Path]) -> Callable[[FakeOpenAI, dict[str, Any]], Reply]:
    """The fake model's script: for PROMPT, the next step once the previous tool's result is back; else a word."""

    def reply(fake: FakeOpenAI, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        if FOLLOW_UP in last_user_text(messages):
            return Reply(text=(RECALLED,))
        if "BOARD-QWEN" not in last_user_text(messages):  # the agent's background calls (titles, ...)
            return Reply(text=("ok",))
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        done = sum(1 for m in messages[last_user:] if m.get("role") == "tool")
        planned = steps(workspace)
        if done < len(planned):
            return Reply(text=(f"Step {done + 1}.",), tool=planned[done])
        return Reply(text=(FINAL,))

    return reply


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository on `main` with one committed file."""
    root = tmp_path / "project"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    (root / "notes.txt").write_text(BEFORE)
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "notes")
    return root


@pytest.fixture
def marker() -> Iterator[str]:
    """ACP_TEST_MARKER of the agent's processes; at the end none of them may be left."""
    mark = uuid.uuid4().hex
    yield mark
    wait_until(lambda: not agent_processes(mark), 30)
    left = agent_processes(mark)
    for pid in left:  # clean up before failing, so one broken run does not leak into the next test
        os.kill(pid, signal.SIGKILL)
    assert not left, f"agent processes left behind: {left}"


def qwen_config(qwen: Path, home: Path, fake: FakeOpenAI, marker: str) -> dict[str, Any]:
    env = {"HOME": str(home), "OPENAI_API_KEY": "x", "OPENAI_BASE_URL": fake.base_url, "OPENAI_MODEL": "fake-model",
           "NO_COLOR": "1", "ACP_TEST_MARKER": marker}
    return {"agents": {"qwen": {"acp": {"command": str(qwen), "args": AGENT_ARGS, "approve": "ask", "env": env}}},
            "board": {"agent": "qwen"}}


def answer_questions(board: Board, task_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Answer each permission question with its allow-once option until the turn ends: (the task, the questions)."""
    questions: list[dict[str, Any]] = []
    while True:
        task = board.wait_task(task_id, {"needs_input", "review", "failed", "done", "cancelled"}, WAIT_S)
        if task["state"] != "needs_input":
            return task, questions
        assert len(questions) < 5, f"the agent keeps asking: {questions}"
        question = task["question"]
        questions.append(question)
        allow = [o["id"] for o in question["options"] if o["kind"] == "allow_once"]
        assert allow, f"no allow-once option in {question}"
        board.answer_task(task_id, allow[0])


def test_qwen_edits_a_file_in_its_worktree_and_the_base_checkout_stays_untouched(
        qwen_bin: Path, project: Path, tmp_path: Path, marker: str) -> None:
    home = tmp_path / "qwen-home"
    (home / ".qwen").mkdir(parents=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(QUIET_SETTINGS))
    boards: list[Board] = []

    def workspace() -> Path:  # the one task's worktree, recorded before its agent starts
        [task] = boards[0].list_tasks()
        return Path(task["workspace"])

    fake = FakeOpenAI(cwd=project, script=scripted(workspace)).start()
    try:
        board = Board(parse_config(qwen_config(qwen_bin, home, fake, marker)), project, data_dir=tmp_path / "data")
        boards.append(board)
        try:
            board.start()
            task = board.create_task(PROMPT, title="notes")
            ended, questions = answer_questions(board, task["id"])
            assert ended["state"] == "review", f"{ended['state']}: {ended.get('error')}"
            page = board.task_events(task["id"])
            events = page["events"]
            diff = board.task_diff(task["id"])
            board.prompt_task(task["id"], FOLLOW_UP)  # a new agent process loads the task's session
            again = board.wait_task(task["id"], {"review", "failed", "done", "cancelled"}, WAIT_S)
            assert again["state"] == "review", f"{again['state']}: {again.get('error')}"
            later = board.task_events(task["id"], after=page["next"])["events"]
            diff_again = board.task_diff(task["id"])
        finally:
            board.close()
    finally:
        fake.stop()

    # the turn: two questions (the edit, the write), both allowed; Qwen's reply after the last tool is the result
    assert len(questions) == 2, questions
    assert FINAL in str(ended["result"])
    answers = [e["optionKind"] for e in events if e["kind"] == "answer"]
    assert answers == ["allow_once", "allow_once"], events
    finished = {e["toolCallId"]: e for e in events if e["kind"] == "tool_call" and e.get("status") == "completed"}
    assert set(fake.tool_call_ids) <= set(finished), f"not every tool call completed: {events}"
    told = [body["messages"] for body in fake.completions() if (body.get("messages") or [{}])[-1].get("role") == "tool"]
    assert len(told) == 3 and "hello.txt" in str(told[-1][-1]["content"]), told  # the model saw each tool's result

    # the follow-up: the same session (session/load, no note of a fallback), the first turn in the model's context,
    # and only the new turn in the transcript (what Qwen replays while it loads is not told again)
    assert again["sessionId"] == ended["sessionId"] and again["result"] == RECALLED
    [start] = [e for e in later if e["kind"] == "turn_start"]
    assert start["sessionId"] == ended["sessionId"] and "note" not in start, start
    assert [e["text"] for e in later if e["kind"] == "message"] == [RECALLED]
    assert not [e for e in later if e["kind"] in ("tool_call", "question", "answer")], later
    [recalled] = [body["messages"] for body in fake.completions() if FOLLOW_UP in last_user_text(body["messages"])]
    assert any(PROMPT in str(m.get("content")) for m in recalled if m.get("role") == "user"), recalled
    assert diff_again == diff

    # the diff: the edited line and the new file, each with its lines
    files = {f["path"]: (f["status"], f["added"], f["removed"]) for f in diff["files"]}
    assert files == {"notes.txt": ("modified", 1, 1), "hello.txt": ("added", 1, 0)}, diff
    assert "-two\n+TWO\n" in diff["patch"] and "+hello from qwen\n" in diff["patch"], diff["patch"]

    # the worktree holds the work
    worktree = Path(ended["workspace"])
    assert worktree != project and worktree.is_dir()
    assert (worktree / "notes.txt").read_text() == AFTER and (worktree / "hello.txt").read_text() == HELLO

    # the base checkout is untouched
    assert run_git(project, "status", "--porcelain", "--untracked-files=all") == ""
    assert (project / "notes.txt").read_text() == BEFORE and not (project / "hello.txt").exists()
    assert run_git(project, "rev-parse", "--abbrev-ref", "HEAD") == "main"
