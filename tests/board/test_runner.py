"""The runs behind the board: the transcript as deltas, agents that cannot start, setup failures, and a
restart after the board's process was killed with SIGKILL (nothing lost; the follow-up continues the session)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config
from mcp_agent_kit.board.errors import TaskInvalid
from mcp_agent_kit.board.tasks import RESTARTED
from mcp_agent_kit.store.memory import MemoryStore
from tests.board.boards import WAIT_S, Transcript, echo_config, running_board, settled, task_when
from tests.board.conftest import run_git
from tests.net import until

CRASH = Path(__file__).resolve().parent / "crash_board.py"


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, killed but not yet reaped by init, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def test_kill_9_then_a_new_board_loses_nothing_and_the_follow_up_continues(tmp_path: Path, repo: Path) -> None:
    config = echo_config(tmp_path / "sessions")
    data = tmp_path / "board-data"
    child = subprocess.Popen([sys.executable, str(CRASH), json.dumps(config), str(repo), str(data)],
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line, f"the board process ended early (status {child.poll()})"
        before = json.loads(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(WAIT_S)
        if child.stdout:
            child.stdout.close()
    orphan = before["agentPid"]
    assert orphan and alive(orphan)  # the agent outlives the board: its own process group
    first = before["tasks"][0]
    assert first["state"] == "running"

    board = Board(parse_config(config), repo, data_dir=data)
    try:
        board.start()
        until(lambda: not alive(orphan), "the orphaned agent stopped by the new board", WAIT_S)
        after = board.list_tasks()
        assert [t["id"] for t in after] == [t["id"] for t in before["tasks"]]
        interrupted = board.get_task(first["id"])
        assert interrupted["state"] == "failed" and interrupted["error"] == RESTARTED
        assert (interrupted["workspace"], interrupted["sessionId"]) == (first["workspace"], first["sessionId"])
        assert first["workspace"] in run_git(repo, "worktree", "list")
        assert [t["state"] for t in after[1:]] == ["held", "queued"]

        board.prompt_task(first["id"], "what did I say before?")
        again = settled(board, first["id"], "review")
        # the orphaned agent may have ended its turn (and saved it) when the board's pipe closed, before it was
        # stopped: then the "/wait" prompt is the last thing said before; either way the session is the same one
        assert again["result"] in ("Before, you said: hello from before", "Before, you said: /wait until killed")
        assert (again["sessionId"], again["workspace"]) == (first["sessionId"], first["workspace"])
    finally:
        board.close()


def test_the_transcript_is_deltas_between_turn_start_and_turn_end(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo) as board:
        seqs: list[int] = []
        board.add_listener("task", lambda change: seqs.append(change["seq"]))
        task = board.create_task("one two three")
        settled(board, task["id"], "review")
        page = board.task_events(task["id"])
        kinds = [e["kind"] for e in page["events"]]
        messages = [e["text"] for e in page["events"] if e["kind"] == "message"]
        first = board.task_events(task["id"], limit=2)
        rest = board.task_events(task["id"], after=first["next"])
    assert kinds[:2] == ["state", "turn_start"] and kinds[-2:] == ["turn_end", "state"]
    assert {"plan", "message", "tool_call", "answer", "progress"} <= set(kinds)
    assert messages[:4] == ["Echo:", " one", " two", " three"]  # each a delta, never the text so far
    assert "".join(messages) == board_result(page["events"])
    tool = next(e for e in page["events"] if e["kind"] == "tool_call")
    assert tool["title"] == "Write echo.txt" and tool["content"][0]["type"] == "diff"
    assert [e["seq"] for e in page["events"]] == list(range(1, len(kinds) + 1)) == [
        e["seq"] for e in first["events"] + rest["events"]]
    assert page["next"] == len(kinds) and max(seqs) == len(kinds)
    assert page["events"][-1]["event"] == "task.review"


def board_result(events: list[dict[str, object]]) -> str:
    return "".join(str(e["text"]) for e in events if e["kind"] == "message")


def test_an_agent_that_cannot_start_keeps_its_tasks_queued_saying_why(tmp_path: Path, repo: Path) -> None:
    document = echo_config(tmp_path / "sessions")
    document["agents"]["ghost"] = {"acp": {"command": str(tmp_path / "no-such-agent")}}
    board = Board(parse_config(document), repo, data_dir=tmp_path / "board-data")
    try:
        board.start()
        ghost = board.create_task("nobody runs this", agent="ghost")
        echo = board.create_task("somebody runs this", agent="echo")
        settled(board, echo["id"], "review")
        waiting = task_when(board, ghost["id"], lambda t: t["waiting"] is not None)
    finally:
        board.close()
    assert waiting["state"] == "queued"
    assert waiting["waiting"] == f"agent not ready: ghost (command {str(tmp_path / 'no-such-agent')!r} not found)"


def test_a_failing_setup_fails_the_task_with_the_output_tail(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo, workspace={"setup": "echo preparing; echo broken >&2; exit 3"}) as board:
        task = board.create_task("never runs")
        failed = settled(board, task["id"], "failed")
        events = board.task_events(task["id"])["events"]
    assert failed["error"].startswith("setup failed with exit status 3: broken")
    assert "preparing" in failed["error"] and failed["workspace"] and failed["sessionId"] is None
    assert [e["kind"] for e in events] == ["state", "error", "state"]


def test_a_task_starts_from_its_own_base_branch(tmp_path: Path, repo: Path) -> None:
    run_git(repo, "checkout", "-q", "-b", "feature")
    (repo / "feature.txt").write_text("feature\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "feature")
    run_git(repo, "checkout", "-q", "main")
    with running_board(tmp_path, repo) as board:
        task = board.create_task("on the feature", base="feature")
        done = settled(board, task["id"], "review")
    assert done["base"] == "feature" and (Path(done["workspace"]) / "feature.txt").exists()


def test_an_agent_that_dies_at_once_fails_its_task(tmp_path: Path, repo: Path) -> None:
    document = echo_config(tmp_path / "sessions")
    document["agents"]["quitter"] = {"acp": {"command": sys.executable, "args": ["-c", "pass"]}}
    board = Board(parse_config(document), repo, data_dir=tmp_path / "board-data")
    try:
        board.start()
        task = board.create_task("goodbye", agent="quitter")
        failed = settled(board, task["id"], "failed")
    finally:
        board.close()
    assert "initialize failed" in failed["error"] and failed["workspace"]


def test_a_cancel_made_on_another_replica_stops_the_turn_where_it_runs(tmp_path: Path, repo: Path) -> None:
    store = MemoryStore()
    config = parse_config(echo_config(tmp_path / "sessions"))
    runs = Board(config, repo, store=store, data_dir=tmp_path / "a", replica="a")
    other = Board(config, repo, store=store, data_dir=tmp_path / "b", replica="b")
    try:
        runs.start()
        task = other.create_task("/wait on replica a")
        Transcript(runs, task["id"], lambda e: e["kind"] == "message" and "Waiting" in e["text"]).wait()
        ended = Transcript(runs, task["id"], lambda e: e["kind"] == "turn_end")
        assert other.cancel_task(task["id"])["state"] == "cancelled"
        ended.wait()  # replica a saw the move, sent session/cancel, and the agent ended its turn
        events = runs.task_events(task["id"])["events"]
    finally:
        other.close()
        runs.close()
    assert [e["stopReason"] for e in events if e["kind"] == "turn_end"] == ["cancelled"]


def test_every_session_gets_the_boards_and_its_agents_mcp_servers(tmp_path: Path, repo: Path) -> None:
    document = echo_config(tmp_path / "sessions")
    document["mcpServers"] = [{"name": "board-wide", "command": "srv", "args": [], "env": []}]
    document["agents"]["echo"]["acp"]["mcpServers"] = {"own": {"command": "own-srv"}}
    board = Board(parse_config(document), repo, data_dir=tmp_path / "board-data")
    try:
        board.start()
        task = board.create_task("mcp servers?")
        done = settled(board, task["id"], "review")
    finally:
        board.close()
    servers = json.loads(done["result"].removeprefix("MCP servers: "))
    assert [s["name"] for s in servers] == ["board-wide", "own", "board"]  # the task's own tools last


def test_a_new_task_carrying_a_finished_tasks_session_in_its_metadata_continues_it(tmp_path: Path,
                                                                                   repo: Path) -> None:
    """The seed's session resumption: read a finished task's session (task.get), create a follow-up task whose
    metadata carries it as `acp_session_id`: its first turn loads that session (a new worktree, the same talk)."""
    with running_board(tmp_path, repo) as board:
        first = board.create_task("hello from the first task")
        done = settled(board, first["id"], "review")
        follow = board.create_task("what did I say before?", metadata={"acp_session_id": done["sessionId"]})
        assert follow["sessionId"] == done["sessionId"] and follow["metadata"] == {"acp_session_id": done["sessionId"]}
        after = settled(board, follow["id"], "review")
        assert after["result"] == "Before, you said: hello from the first task"
        assert after["sessionId"] == done["sessionId"] and after["workspace"] != done["workspace"]
        unknown = board.create_task("what did I say before?", metadata={"acp_session_id": "no-such-session"})
        fresh = settled(board, unknown["id"], "review")  # a session the agent cannot load: a new one, said why
        assert fresh["sessionId"] != "no-such-session"
        notes = [e for e in board.task_events(unknown["id"])["events"] if "no-such-session" in json.dumps(e)]
        assert notes, "the transcript says the session could not be loaded"
        with pytest.raises(TaskInvalid, match="acp_session_id"):
            board.create_task("x", metadata={"acp_session_id": 7})
