"""The tools each board task's agent session gets (issue #26, item 6): the stdio MCP server that forwards ask_user,
create_subtask and report_progress to the board, the per-task token checks, and an end-to-end run with a scripted
ACP agent (tests/board/scoped_agent.py) that uses the server it was handed in session/new."""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config
from mcp_agent_kit.board.errors import TaskInvalid, TransitionRefused
from mcp_agent_kit.board.runner import BoardRun
from mcp_agent_kit.board.task_scope import AskedQuestion
from mcp_agent_kit.board.task_server import ENDPOINT_ENV, TOKEN_ENV, Forwarder, TaskToolError, main, task_server
from tests.board import scoped_agent  # the scripted agent's constants: what it asks, reports and creates
from tests.board.boards import WAIT_S, running_board, settled, task_when

SCOPED_AGENT = Path(scoped_agent.__file__).resolve()


def env_of(server: dict[str, Any]) -> dict[str, str]:
    return {pair["name"]: pair["value"] for pair in server["env"]}


class Granted:
    """A task moved to running on a board that is not started, with a run registered in its runner and the
    McpServer entry its session would get (no agent process: the tools are called from the test)."""

    def __init__(self, board: Board, task_id: str | None = None) -> None:
        """A new task started, or (task_id) a new run of a running task: a follow-up's run, say."""
        if task_id is None:
            task_id = board.create_task("work")["id"]
            board.tasks.move(task_id, "start")
        self.run = BoardRun(board.get_task(task_id), board.config.agents["echo"])
        board.runner._runs[self.run.task_id] = self.run
        self.server = board.runner.scope.grant(self.run, set())
        self.env = env_of(self.server)
        self.task_id = self.run.task_id

    def forwarder(self, token: str | None = None, endpoint: str | None = None) -> Forwarder:
        return Forwarder(endpoint or self.env[ENDPOINT_ENV], self.env[TOKEN_ENV] if token is None else token)


@pytest.fixture
def board(tmp_path: Path, repo: Path) -> Iterator[Board]:
    with running_board(tmp_path, repo, start=False) as made:
        yield made


def asking(forwarder: Forwarder, arguments: dict[str, Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """ask_user on a thread of its own (it waits for the answer); the dict gets "result" or "error"."""
    out: dict[str, Any] = {}

    def call() -> None:
        try:
            out["result"] = forwarder.call("ask_user", arguments)
        except TaskToolError as exc:
            out["error"] = str(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, out


# ---- the McpServer entry and the forwarding -------------------------------------------------------------------
def test_each_grant_is_a_stdio_mcp_server_with_its_own_token(board: Board) -> None:
    first, second = Granted(board), Granted(board)
    assert first.server["name"] == "board" and first.server["command"] == sys.executable
    assert first.server["args"] == ["-P", "-m", "mcp_agent_kit.board.task_server"]
    assert first.env[ENDPOINT_ENV].startswith("http://127.0.0.1:")
    assert first.env[ENDPOINT_ENV].endswith(f"/task/{first.task_id}")
    assert len(first.env[TOKEN_ENV]) >= 43 and first.env[TOKEN_ENV] != second.env[TOKEN_ENV]
    renamed = board.runner.scope.grant(first.run, {"board"})
    assert renamed["name"] != "board"


def test_the_task_server_forwards_progress_and_subtasks_to_the_board(board: Board) -> None:
    granted = Granted(board)
    client = task_server(granted.forwarder()).test_client()
    with client:
        assert sorted(tool["name"] for tool in client.list_tools()) == ["ask_user", "create_subtask",
                                                                        "report_progress"]
        said = client.call_tool("report_progress", {"message": "reading   the code"})
        assert said["structuredContent"] == {"progress": "reading the code"} and not said.get("isError")
        made = client.call_tool("create_subtask", {"prompt": "write the docs", "blocked_by_this": True,
                                                   "priority": "high"})
    subtask = board.get_task(made["structuredContent"]["id"])
    assert subtask["blockedBy"] == [granted.task_id] and subtask["priority"] == "high"
    assert subtask["agent"] == "echo" and subtask["state"] == "queued"
    assert board.get_task(granted.task_id)["progress"] == "reading the code"
    events = board.task_events(granted.task_id)["events"]
    assert [e["text"] for e in events if e["kind"] == "progress"] == [
        "reading the code", f"created subtask {subtask['id']}: write the docs (blocked by this task)"]


def test_a_refusal_is_an_error_result_naming_the_problem(board: Board) -> None:
    granted = Granted(board)
    with task_server(granted.forwarder()).test_client() as client:
        refused = client.call_tool("create_subtask", {"prompt": "x", "agent": "nobody"})
        both = client.call_tool("ask_user", {"message": "?", "options": ["a"], "schema": {"type": "string"}})
    assert refused["isError"] and "unknown agent 'nobody'" in refused["content"][0]["text"]
    assert both["isError"] and "options or a schema, not both" in both["content"][0]["text"]
    assert board.get_task(granted.task_id)["state"] == "running"


# ---- tokens ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("token", ["wrong", "empty", "truncated", "longer", "another task's"])
def test_a_token_that_is_not_the_tasks_own_is_refused(board: Board, token: str) -> None:
    granted, other = Granted(board), Granted(board)
    own = granted.env[TOKEN_ENV]
    given = {"wrong": "x" * len(own), "empty": "", "truncated": own[:-1], "longer": own + "A",
             "another task's": other.env[TOKEN_ENV]}[token]
    with task_server(granted.forwarder(given)).test_client() as client:
        said = client.call_tool("report_progress", {"message": "sneaking in"})
    assert said["isError"] and said["content"][0]["text"].startswith(f"refused: no valid token for task "
                                                                     f"{granted.task_id}")
    assert own not in json.dumps(said)
    assert board.get_task(granted.task_id)["progress"] is None
    assert not [e for e in board.task_events(granted.task_id)["events"] if e["kind"] == "progress"]


def test_a_token_opens_nothing_once_its_run_has_ended(board: Board) -> None:
    granted = Granted(board)
    forwarder = granted.forwarder()
    assert forwarder.call("report_progress", {"message": "still here"}) == {"progress": "still here"}
    board.runner._retire(granted.run)  # the run ends (its turn ended, the agent stopped)
    with pytest.raises(TaskToolError, match="refused: no valid token"):
        forwarder.call("report_progress", {"message": "too late"})
    again = Granted(board, granted.task_id)  # the task's next run gets a new token; the old one stays refused
    assert again.env[TOKEN_ENV] != granted.env[TOKEN_ENV]
    with pytest.raises(TaskToolError, match="refused"):
        forwarder.call("report_progress", {"message": "old token"})
    assert again.forwarder().call("report_progress", {"message": "new"}) == {"progress": "new"}
    board.runner._retire(granted.run)  # an old run retiring late leaves the new run's token alone
    assert again.forwarder().call("report_progress", {"message": "newer"}) == {"progress": "newer"}


def test_the_endpoint_refuses_a_browser_and_a_foreign_host(board: Board) -> None:
    granted = Granted(board)
    for headers in ({"Origin": "http://evil.example"}, {"Host": "evil.example"}):
        request = urllib.request.Request(f"{granted.env[ENDPOINT_ENV]}/report_progress", method="POST",
                                         data=b'{"message": "x"}', headers={
                                             "Authorization": f"Bearer {granted.env[TOKEN_ENV]}", **headers})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(request, timeout=WAIT_S)
        assert refused.value.code == 403
    assert board.get_task(granted.task_id)["progress"] is None


# ---- questions ---------------------------------------------------------------------------------------------------
def test_ask_user_with_options_waits_for_the_answer_and_the_task_runs_again(board: Board) -> None:
    granted = Granted(board)
    thread, out = asking(granted.forwarder(), {"message": "Red or green?", "options": ["red", {"id": "green",
                                                                                             "name": "Green"}]})
    task = task_when(board, granted.task_id, lambda t: t["state"] == "needs_input")
    assert task["question"] == {"kind": "question", "message": "Red or green?", "options": [
        {"id": "red", "name": "red", "kind": "choice"}, {"id": "green", "name": "Green", "kind": "choice"}]}
    with pytest.raises(TaskInvalid, match="not one of the question's options: use one of red, green"):
        board.answer_task(granted.task_id, "blue")
    answered = board.answer_task(granted.task_id, {"optionId": "green"})
    thread.join(WAIT_S)
    assert out == {"result": {"answer": "green"}}
    assert answered["state"] == "running" and answered["question"] is None
    kinds = [(e["kind"], e.get("answer")) for e in board.task_events(granted.task_id)["events"]
             if e["kind"] in ("question", "answer")]
    assert kinds == [("question", None), ("answer", "green")]
    with pytest.raises(TransitionRefused):  # settled: the task is running, nothing waits any more
        board.answer_task(granted.task_id, "red")


def test_a_cancel_ends_a_question_in_flight_at_once(board: Board) -> None:
    granted = Granted(board)
    thread, out = asking(granted.forwarder(), {"message": "Anything?"})
    task_when(board, granted.task_id, lambda t: t["state"] == "needs_input")
    assert board.cancel_task(granted.task_id)["state"] == "cancelled"
    thread.join(WAIT_S)
    assert not thread.is_alive() and "the task was cancelled" in out["error"]


def test_a_second_question_while_one_waits_is_refused(board: Board) -> None:
    granted = Granted(board)
    thread, _ = asking(granted.forwarder(), {"message": "First?"})
    task_when(board, granted.task_id, lambda t: t["state"] == "needs_input")
    with pytest.raises(TaskToolError, match="already waits for an answer"):
        granted.forwarder().call("ask_user", {"message": "Second?"})
    board.answer_task(granted.task_id, "fine")  # a question without options or schema wants text
    thread.join(WAIT_S)


def test_an_answer_must_match_the_schema_and_json_text_is_read_as_its_value() -> None:
    asked = AskedQuestion.of({"message": "Which?", "schema": scoped_agent.SCHEMA})
    with pytest.raises(TaskInvalid, match="does not match the question's schema"):
        asked.check({"color": "blue"})
    with pytest.raises(TaskInvalid, match="does not match"):
        asked.check("not json")
    assert asked.check({"color": "red"}) == {"color": "red"}
    assert asked.check('{"color": "green", "note": "x"}') == {"color": "green", "note": "x"}
    assert AskedQuestion.of({"message": "Say"}).check('"quoted"') == '"quoted"'  # text is text
    with pytest.raises(TaskInvalid, match="not a JSON schema"):
        AskedQuestion.of({"message": "?", "schema": {"type": 12}})
    with pytest.raises(TaskInvalid, match="distinct ids"):
        AskedQuestion.of({"message": "?", "options": ["a", "a"]})


def test_the_program_started_by_hand_says_what_it_needs(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert main() == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ENDPOINT_ENV in err


# ---- end to end: a real board, a scripted ACP agent using the tools it was handed -----------------------------------
def test_an_agent_asks_reports_and_creates_a_subtask_through_its_sessions_board_server(tmp_path: Path,
                                                                                     repo: Path) -> None:
    document = {"agents": {"scoped": {"acp": {"command": sys.executable, "args": [str(SCOPED_AGENT)],
                                              "approve": "all"}}}, "board": {"max_concurrent": 2}}
    with Board(parse_config(document), repo, data_dir=tmp_path / "board-data") as board:
        board.start()
        task_id = board.create_task("ask")["id"]
        asked = settled(board, task_id, "needs_input")
        assert asked["question"] == {"kind": "question", "message": "Which color?", "schema": scoped_agent.SCHEMA}
        with pytest.raises(TaskInvalid, match="does not match the question's schema"):
            board.answer_task(task_id, {"color": "blue"})
        assert board.get_task(task_id)["state"] == "needs_input"
        board.answer_task(task_id, {"color": "green", "note": "the light one"})
        done = settled(board, task_id, "review")
        answer = json.dumps({"color": "green", "note": "the light one"}, sort_keys=True)
        assert done["result"].startswith(f"answered: {answer}; subtask ")
        subtask = board.get_task(done["result"].rsplit(" ", 1)[1])
        assert subtask["blockedBy"] == [task_id] and subtask["prompt"] == scoped_agent.SUBTASK
        assert subtask["state"] == "queued" and subtask["agent"] == "scoped"
        assert done["progress"] == scoped_agent.PROGRESS
        events = board.task_events(task_id)["events"]
        assert scoped_agent.PROGRESS in [e.get("text") for e in events if e["kind"] == "progress"]
        assert [e["answer"] for e in events if e["kind"] == "answer"] == [
            {"color": "green", "note": "the light one"}]
