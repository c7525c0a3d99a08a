"""`mcp-agent-kit task ...` as a subprocess against a board served in this process: every subcommand, the
--json fields, exit codes (0 done, 1 the board refused or is not there, 2 usage), one-line mistakes,
the bearer token, and `watch` following a task live (answering its question on a terminal, a pty)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from tests.board.fake_board import FakeBoard
from tests.board.surfaces import DIFF, PERMISSION, served
from tests.net import free_port, until

ROOT = Path(__file__).resolve().parents[2]


def env(url: str, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("MCP_AGENT_KIT_BOARD", "MCP_AGENT_KIT_TOKEN")}
    return {**clean, "PYTHONPATH": str(ROOT), "MCP_AGENT_KIT_BOARD": url, **extra}


def task(url: str, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", "task", *argv], capture_output=True, text=True,
                          timeout=60, env=env(url, **extra), stdin=subprocess.DEVNULL)


def ok(url: str, *argv: str) -> str:
    done = task(url, *argv)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def as_json(url: str, *argv: str) -> Any:
    return json.loads(ok(url, *argv, "--json"))


def one_line(done: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    lines = done.stderr.splitlines()
    assert done.returncode == code, done.stderr
    assert len(lines) == 1 and lines[0].startswith("mcp-agent-kit: ") and text in lines[0], done.stderr


def test_new_list_show_and_their_json(any_url: str) -> None:
    url = any_url
    first = as_json(url, "new", "Write echo.txt\nsaying hello", "--priority", "urgent")
    assert (first["state"], first["priority"], first["title"], first["agent"]) == (
        "queued", "urgent", "Write echo.txt", "echo")
    second = as_json(url, "new", "Then this", "--agent", "other", "--after", first["id"], "--title", "Second one",
                     "--base", "main", "--hold")
    assert (second["state"], second["agent"], second["blockedBy"], second["title"], second["base"]) == (
        "held", "other", [first["id"]], "Second one", "main")
    line = ok(url, "new", "A third").strip()
    assert line.startswith("task ") and '"A third" is queued (agent echo, normal priority' in line

    table = ok(url, "list").splitlines()
    assert table[0].split() == ["ID", "STATE", "PRIORITY", "AGENT", "TITLE"]
    assert [row.split()[:4] for row in table[1:3]] == [[first["id"], "queued", "urgent", "echo"],
                                                       [second["id"], "held", "normal", "other"]]
    assert len(table) == 4
    listed = as_json(url, "list", "--state", "held")
    assert [t["id"] for t in listed["tasks"]] == [second["id"]]
    assert [t["id"] for t in as_json(url, "list", "--agent", "other")["tasks"]] == [second["id"]]
    assert ok(url, "list", "--state", "done").strip() == "no tasks"

    shown = ok(url, "show", second["id"]).splitlines()
    assert shown[:3] == [f"id: {second['id']}", "title: Second one", "state: held"]
    assert f"blockedBy: {first['id']}" in shown and "prompt: Then this" in shown
    assert as_json(url, "show", second["id"]) == second


def test_release_cancel_prompt_discard(any_url: str) -> None:
    url = any_url
    held = as_json(url, "new", "Held work", "--hold")
    assert as_json(url, "release", held["id"])["state"] == "queued"
    assert "is cancelled" in ok(url, "cancel", held["id"])
    again = as_json(url, "prompt", held["id"], "Do it differently")
    assert (again["state"], again["prompt"]) == ("queued", "Do it differently")
    ok(url, "cancel", held["id"])
    assert as_json(url, "discard", held["id"])["state"] == "discarded"


def test_answer_diff_and_accept(board: FakeBoard, url: str) -> None:
    work = board.create_task("Write echo.txt")
    board.start_task(work["id"])
    board.ask(work["id"], PERMISSION)
    one_line(task(url, "answer", work["id"], "maybe"), 1, "not one of the options: allow, deny")
    assert as_json(url, "answer", work["id"], "allow")["state"] == "running"
    board.finish(work["id"], "Wrote it", DIFF)

    assert ok(url, "diff", work["id"]) == DIFF["patch"]
    assert ok(url, "diff", work["id"], "--stat").splitlines() == ["1 file changed, +1 -0",
                                                                  "  added    echo.txt (+1 -0)"]
    assert as_json(url, "diff", work["id"])["files"][0]["path"] == "echo.txt"
    assert as_json(url, "accept", work["id"], "--merge")["state"] == "done"
    assert board.accepted[work["id"]] is True

    form = board.create_task("Ask for details")
    board.start_task(form["id"])
    board.ask(form["id"], {"kind": "question", "message": "Which name?",
                           "schema": {"type": "object", "properties": {"name": {"type": "string"}}}})
    one_line(task(url, "answer", form["id"], "{not json"), 2, "ANSWER looks like JSON")
    assert as_json(url, "answer", form["id"], '{"name": "ada"}')["state"] == "running"
    assert board.task_events(form["id"])["events"][-1]["answer"] == {"name": "ada"}


@pytest.mark.parametrize(("argv", "code", "text"), [
    (["show", "nope"], 1, "no task 'nope' on this board"),
    (["accept", "{queued}"], 1, "is queued: cannot accept it; allowed now: cancel"),
    (["new", "x", "--agent", "ghost"], 1, "unknown agent 'ghost'"),
    (["show"], 2, "the following arguments are required: ID"),
    (["new", "x", "--priority", "asap"], 2, "invalid choice: 'asap'"),
    (["frob"], 2, "invalid choice: 'frob'"),
    (["list", "--board", "ftp://x"], 2, "is not an http(s) URL"),
    (["list", "--timeout", "0"], 2, "--timeout must be positive"),
])
def test_mistakes_and_refusals_are_one_line(any_board: Any, any_url: str, argv: list[str], code: int,
                                            text: str) -> None:
    queued = any_board.create_task("Queued")
    one_line(task(any_url, *(arg.format(queued=queued["id"]) for arg in argv)), code, text)


def test_a_board_that_is_not_there() -> None:
    nobody = f"http://127.0.0.1:{free_port()}/mcp"
    one_line(task(nobody, "list"), 1, f"cannot reach the board at {nobody}")


def test_the_token(any_board: Any) -> None:
    with served(any_board, tokens={"s3cret-token": "ada"}) as address:
        one_line(task(address, "list"), 1, "wants a token; give --token or set $MCP_AGENT_KIT_TOKEN")
        assert task(address, "list", "--token", "s3cret-token").returncode == 0
        assert task(address, "list", MCP_AGENT_KIT_TOKEN="s3cret-token").returncode == 0


class Watching:
    """`task watch ID` running, its stdout collected line by line (or up to an unfinished prompt)."""

    def __init__(self, url: str, task_id: str, stdin: Any = subprocess.DEVNULL) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", "task", "watch", task_id],
                                     stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env(url))
        self.out: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        while chunk := stream.read(1):
            self.out.append(chunk)

    def text(self) -> str:
        return "".join(self.out)

    def saw(self, words: str) -> str:
        return str(until(lambda: words in self.text() and self.text(), f"{words!r} in the watch's output"))

    def finish(self) -> tuple[int, str, str]:
        code = self.proc.wait(timeout=60)
        self._reader.join(10)
        assert self.proc.stderr is not None
        return code, self.text(), self.proc.stderr.read()


def test_watch_follows_a_task_until_review(board: FakeBoard, url: str) -> None:
    work = board.create_task("Write echo.txt")
    watching = Watching(url, work["id"])
    watching.saw(f"task {work['id']}")
    until(lambda: board._listeners["task"], "the watch's long-poll")
    board.start_task(work["id"])
    board.say(work["id"], "Writing ")
    board.say(work["id"], "the file.")
    board.ask(work["id"], PERMISSION)
    watching.saw(f"waiting for an answer: 'mcp-agent-kit task answer {work['id']} ANSWER'")
    board.answer_task(work["id"], "allow")
    board.finish(work["id"], "Wrote echo.txt")
    code, out, err = watching.finish()
    assert (code, err) == (0, "")
    assert "Writing the file." in out and "? Write echo.txt?" in out and "[allow] Allow (allow_once)" in out
    assert "> answered: allow" in out and "== turn ended: end_turn" in out
    assert out.rstrip().splitlines()[-1].startswith(f"task {work['id']} \"Write echo.txt\" is review")


def test_watch_asks_the_question_on_a_terminal(board: FakeBoard, url: str) -> None:
    work = board.create_task("Write echo.txt")
    board.start_task(work["id"])
    controller, terminal = pty.openpty()
    try:
        watching = Watching(url, work["id"], stdin=terminal)
        until(lambda: board._listeners["task"], "the watch's long-poll")
        board.ask(work["id"], PERMISSION)
        watching.saw("answer (an option id or its number): ")
        os.write(controller, b"7\n")  # not an option: the board refuses, the question is asked again
        watching.saw("not taken: answer '7' is not one of the options")
        os.write(controller, b"1\n")  # the first option, by its number
        until(lambda: board.get_task(work["id"])["state"] == "running", "the answer to reach the board")
        board.finish(work["id"], "Done")
        code, out, err = watching.finish()
    finally:
        os.close(controller)
        os.close(terminal)
    assert (code, err) == (0, "")
    assert board.task_events(work["id"])["events"][-3]["answer"] == "allow"
    assert out.rstrip().splitlines()[-1].endswith(")") and " is review " in out.rstrip().splitlines()[-1]
