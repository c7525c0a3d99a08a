"""board.tasks: the task repository on the memory and sqlite stores — creation and its checks, listing,
moves by compare-and-set (two repositories on one sqlite file never both move a task), the transcript,
and the restart rule under the store's leases."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board import task_fields as tf
from mcp_agent_kit.board.errors import BoardError, TaskConflict, TaskInvalid, TaskNotFound, TransitionRefused
from mcp_agent_kit.board.tasks import CHANNEL, KIND, RESTARTED, BoardTasks, events_channel
from mcp_agent_kit.store import Store, open_store

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
QUESTION = {"kind": "permission", "message": "write echo.txt?",
            "options": [{"id": "allow", "name": "Allow", "kind": "allow_once"},
                        {"id": "reject", "name": "Reject", "kind": "reject_once"}]}


class Clock:
    """Wall-clock seconds the test moves by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return "memory:" if request.param == "memory" else f"sqlite:///{tmp_path / 'board.db'}"


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = open_store(url)
    yield opened
    opened.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tasks(store: Store, clock: Clock) -> Iterator[BoardTasks]:
    board = BoardTasks(store, replica="r1", agents=["echo", "qwen"], default_agent="echo", clock=clock)
    yield board
    board.close()


def test_a_new_task_has_every_field_with_the_issue_names(tasks: BoardTasks) -> None:
    task = tasks.create("Fix the login bug\n\nIt fails on empty passwords.", priority="high")
    assert list(task) == list(tf.FIELDS)
    assert task["title"] == "Fix the login bug"
    assert (task["agent"], task["priority"], task["state"], task["blockedBy"]) == ("echo", "high", "queued", [])
    assert ISO.fullmatch(task["createdAt"]) and task["createdAt"].startswith("2027-01-15T08:00:00")
    for unset in ("waiting", "branch", "base", "workspace", "question", "result", "error", "sessionId",
                  "startedAt", "endedAt"):
        assert task[unset] is None
    assert tasks.get(task["id"]) == task
    held = tasks.create("later", hold=True, agent="qwen", title="  My   title ", base="main~1", task_id="t-2")
    assert (held["id"], held["state"], held["title"], held["base"], held["agent"]) == (
        "t-2", "held", "My title", "main~1", "qwen")


def test_titles_come_from_the_prompt_and_are_bounded() -> None:
    assert tf.derive_title("\n\n   add   a\tREADME  \nmore") == "add a README"
    long = tf.derive_title("word " * 100)
    assert long.endswith("…") and len(long) <= tf.TITLE_FROM_PROMPT


@pytest.mark.parametrize(("kwargs", "problem"), [
    ({"prompt": "  \n "}, "prompt must not be empty"),
    ({"prompt": "x" * (tf.PROMPT_MAX + 1)}, "prompt is 100001 characters long"),
    ({"prompt": "go", "priority": "asap"}, "unknown priority 'asap': use one of urgent, high, normal, low"),
    ({"prompt": "go", "agent": "codex"}, "unknown agent 'codex': this board has echo, qwen"),
    ({"prompt": "go", "agent": "two words"}, "agent 'two words' must be an agent id"),
    ({"prompt": "go", "blocked_by": ["nope"]}, "blockedBy: no task 'nope' on this board"),
    ({"prompt": "go", "blocked_by": "abc"}, "blockedBy must be a list"),
    ({"prompt": "go", "blocked_by": [f"t{i}" for i in range(51)]}, "at most 50"),
    ({"prompt": "go", "title": "t" * 201}, "title is 201 characters long"),
    ({"prompt": "go", "base": "main dev"}, "is not a git revision"),
    ({"prompt": "go", "base": "--upload-pack=x"}, "is not a git revision"),
    ({"prompt": "go", "task_id": "../etc"}, "may hold only letters"),
    ({"prompt": "go", "task_id": "x" * 65}, "at most 64"),
    ({"prompt": "go", "task_id": "me", "blocked_by": ["me"]}, "cannot be blocked by itself"),
    ({"prompt": 42}, "prompt must be text, not int"),
])
def test_bad_input_is_refused_with_a_clear_line(tasks: BoardTasks, kwargs: dict[str, Any], problem: str) -> None:
    with pytest.raises(TaskInvalid) as refused:
        tasks.create(**kwargs)
    assert problem in str(refused.value)
    assert isinstance(refused.value, BoardError) and isinstance(refused.value, ValueError)
    assert tasks.list() == []  # nothing was written


def test_ids_are_unique_and_an_agent_is_needed(store: Store) -> None:
    board = BoardTasks(store)
    with pytest.raises(TaskInvalid, match="agent: name the agent"):
        board.create("go")
    board.create("go", agent="anything", task_id="a1")
    with pytest.raises(TaskInvalid, match="a task 'a1' exists already"):
        board.create("again", agent="anything", task_id="a1")
    made = {board.create("go", agent="x")["id"] for _ in range(20)}
    assert len(made) == 20 and all(re.fullmatch(r"[0-9a-f]{10}", i) for i in made)


def test_blockers_must_exist_and_are_kept_in_order_without_duplicates(tasks: BoardTasks) -> None:
    a = tasks.create("a", task_id="a")
    b = tasks.create("b", task_id="b", blocked_by=["a"])
    c = tasks.create("c", blocked_by=["b", "a", "b"])
    assert c["blockedBy"] == ["b", "a"] and b["blockedBy"] == [a["id"]]


def test_listing_is_creation_order_and_filters_by_state_and_agent(tasks: BoardTasks, clock: Clock) -> None:
    made = []
    for i in range(12):
        made.append(tasks.create(f"task {i}", agent="qwen" if i % 3 == 0 else "echo", hold=i % 4 == 0)["id"])
        if i % 5 == 0:
            clock.now += 1  # some share a clock reading, some do not: the order holds either way
    assert [t["id"] for t in tasks.list()] == made
    assert [t["id"] for t in tasks.list(agent="qwen")] == made[::3]
    assert [t["id"] for t in tasks.list(state="held")] == made[::4]
    assert [t["id"] for t in tasks.list(state=["held", "queued"], agent="qwen")] == made[::3]
    with pytest.raises(TaskInvalid, match="unknown state 'paused'"):
        tasks.list(state="paused")


def test_a_run_from_start_to_done(tasks: BoardTasks, clock: Clock) -> None:
    task = tasks.create("write echo.txt", task_id="t1")
    clock.now += 5
    started = tasks.move("t1", "start", {"branch": "task/t1-write-echo-txt", "workspace": "/w/t1", "sessionId": "s1"})
    assert (started.previous, started.event, started.task["state"]) == ("queued", None, "running")
    assert started.task["startedAt"].startswith("2027-01-15T08:00:05") and started.task["endedAt"] is None
    assert tasks.running() == ["t1"]
    asked = tasks.move("t1", "ask", {"question": QUESTION})
    assert (asked.task["state"], asked.event, asked.task["question"]) == ("needs_input", "task.needs_input", QUESTION)
    answered = tasks.move("t1", "answer")
    assert (answered.task["state"], answered.event, answered.task["question"]) == ("running", None, None)
    clock.now += 5
    ended = tasks.move("t1", "finish", {"result": "wrote echo.txt"})
    assert (ended.task["state"], ended.event, ended.task["result"]) == ("review", "task.review", "wrote echo.txt")
    assert ended.task["endedAt"].startswith("2027-01-15T08:00:10")
    assert tasks.running() == []
    done = tasks.move("t1", "accept")
    assert (done.task["state"], done.event) == ("done", "task.done")
    assert done.task["sessionId"] == "s1" and done.task["createdAt"] == task["createdAt"]
    with pytest.raises(TransitionRefused, match="task t1 is done: cannot prompt it; nothing more can be done"):
        tasks.move("t1", "prompt", {"prompt": "more"})
    moves = [(e["action"], e["from"], e["state"], e["event"]) for e in tasks.events("t1")[0]]
    assert moves == [("start", "queued", "running", None), ("ask", "running", "needs_input", "task.needs_input"),
                     ("answer", "needs_input", "running", None), ("finish", "running", "review", "task.review"),
                     ("accept", "review", "done", "task.done")]


def test_a_follow_up_prompt_requeues_in_the_same_session_and_workspace(tasks: BoardTasks) -> None:
    tasks.create("first", task_id="t1")
    tasks.move("t1", "start", {"sessionId": "s1", "workspace": "/w/t1"})
    tasks.move("t1", "fail", {"error": "agent crashed"})
    failed = tasks.get("t1")
    assert (failed["state"], failed["error"]) == ("failed", "agent crashed") and failed["endedAt"]
    again = tasks.move("t1", "prompt", {"prompt": "what did I say before?"}).task
    assert (again["state"], again["prompt"], again["sessionId"], again["workspace"]) == (
        "queued", "what did I say before?", "s1", "/w/t1")
    assert again["error"] is None and again["endedAt"] is None
    tasks.move("t1", "cancel")
    with pytest.raises(TaskInvalid, match="prompt needs prompt"):
        tasks.move("t1", "prompt")
    with pytest.raises(TaskInvalid, match="'prompt' cannot be set here"):
        tasks.update("t1", {"prompt": "sneaky"})


def test_moves_check_their_fields(tasks: BoardTasks) -> None:
    tasks.create("go", task_id="t1")
    tasks.move("t1", "start")
    with pytest.raises(TaskInvalid, match="ask needs question"):
        tasks.move("t1", "ask")
    with pytest.raises(TaskInvalid, match=r"question.kind must be one of permission, question"):
        tasks.move("t1", "ask", {"question": {"kind": "quiz", "message": "?"}})
    with pytest.raises(TaskInvalid, match="fail needs error"):
        tasks.move("t1", "fail")
    with pytest.raises(TaskInvalid, match="unknown task action 'merge'"):
        tasks.move("t1", "merge")
    with pytest.raises(TaskNotFound, match="no task 'ghost' on this board"):
        tasks.move("ghost", "cancel")
    with pytest.raises(TransitionRefused, match="task t1 is running: cannot accept it; allowed now: cancel"):
        tasks.move("t1", "accept")
    assert tasks.get("t1")["state"] == "running"


def test_update_sets_fields_and_writes_nothing_when_nothing_changes(tasks: BoardTasks, store: Store) -> None:
    tasks.create("go", task_id="t1")
    _, version = tasks.read("t1")
    same = tasks.update("t1", {"waiting": None})
    assert tasks.read("t1")[1] == version and same["waiting"] is None
    changed = tasks.update("t1", {"waiting": "capacity: the board runs 2 of its 2 tasks at once", "priority": "low"})
    assert tasks.read("t1") == (changed, version + 1)
    with pytest.raises(TaskInvalid, match="'state' cannot be set here"):
        tasks.update("t1", {"state": "done"})
    with pytest.raises(TaskConflict, match=f"version {version} is gone"):
        tasks.update("t1", {"priority": "high"}, version=version)
    assert store.get(KIND, "t1") is not None and store.get(KIND, "t1").state == "queued"  # type: ignore[union-attr]


def test_the_transcript_is_an_ordered_log_read_from_a_sequence_number(tasks: BoardTasks) -> None:
    tasks.create("go", task_id="t1")
    seqs = [tasks.append("t1", {"type": "message_chunk", "text": f"part {i}"}) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    events, after = tasks.events("t1")
    assert after == 5 and [e["seq"] for e in events] == seqs and events[2] == {
        "seq": 3, "type": "message_chunk", "text": "part 2"}
    assert tasks.events("t1", 3) == (events[3:], 5)
    assert tasks.events("t1", 5) == ([], 5)
    assert tasks.events("t1", 1, limit=2) == (events[1:3], 3)
    with pytest.raises(TaskInvalid, match="a text 'type'"):
        tasks.append("t1", {"text": "untyped"})
    with pytest.raises(TaskInvalid, match="after must be a sequence number"):
        tasks.events("t1", -1)


def test_creates_and_moves_wake_subscribers(tasks: BoardTasks, store: Store) -> None:
    heard: list[tuple[str, str]] = []
    woke = threading.Event()

    def listener(channel: str, payload: str) -> None:
        heard.append((channel, payload))
        woke.set()
    stop = store.subscribe(listener)
    try:
        tasks.create("go", task_id="t1")
        tasks.move("t1", "cancel")
        assert woke.wait(5)
        assert heard[:2] == [(CHANNEL, "t1"), (CHANNEL, "t1")]
    finally:
        stop()


# ---- two repositories on one store: compare-and-set ----------------------------------------------------
@pytest.fixture
def shared(tmp_path: Path) -> Iterator[tuple[BoardTasks, BoardTasks]]:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    one = BoardTasks(open_store(url), replica="one", own_store=True)
    two = BoardTasks(open_store(url), replica="two", own_store=True)
    yield one, two
    one.close()
    two.close()


def test_two_replicas_never_both_move_a_task(shared: tuple[BoardTasks, BoardTasks]) -> None:
    one, two = shared
    one.create("go", agent="echo", task_id="t1")
    seen_by_one, v1 = one.read("t1")
    seen_by_two, v2 = two.read("t1")
    assert seen_by_one == seen_by_two and v1 == v2
    one.move("t1", "start", version=v1)
    with pytest.raises(TaskConflict, match=f"task t1 changed meanwhile: version {v2} is gone"):
        two.move("t1", "start", version=v2)
    with pytest.raises(TransitionRefused, match="task t1 is running: cannot start it"):
        two.move("t1", "start")  # against the task as stored now: it runs already
    assert two.get("t1")["state"] == "running" and one.running() == ["t1"] and two.running() == []
    record = one.store.get(KIND, "t1")
    assert record is not None and record.holder == "one"
    two.move("t1", "ask", {"question": QUESTION})
    two.move("t1", "answer")  # an answer arriving on the other replica leaves the lease where the run is
    record = one.store.get(KIND, "t1")
    assert record is not None and record.holder == "one"


def test_racing_starts_from_many_repositories_one_wins(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.db'}"
    boards = [BoardTasks(open_store(url), replica=f"r{i}", own_store=True) for i in range(6)]
    try:
        boards[0].create("go", agent="echo", task_id="t1")
        gate = threading.Barrier(len(boards))
        outcomes: list[str] = []

        def start(board: BoardTasks) -> None:
            gate.wait()
            try:
                board.move("t1", "start")
                outcomes.append("started")
            except TransitionRefused:
                outcomes.append("refused")
        threads = [threading.Thread(target=start, args=(b,)) for b in boards]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["refused"] * 5 + ["started"]
        starts = [e for e in boards[0].events("t1")[0] if e["action"] == "start"]
        assert len(starts) == 1
    finally:
        for board in boards:
            board.close()


# ---- restarts and leases -----------------------------------------------------------------------------------
def test_a_restart_under_the_same_replica_name_interrupts_its_runs_at_once(tmp_path: Path, clock: Clock) -> None:
    url = f"sqlite:///{tmp_path / 'board.db'}"
    before = BoardTasks(open_store(url), replica="board-a", clock=clock, own_store=True)
    before.create("one", agent="echo", task_id="t1")
    before.create("two", agent="echo", task_id="t2")
    before.create("three", agent="echo", task_id="t3")
    before.move("t1", "start", {"sessionId": "s1", "workspace": "/w/t1", "branch": "task/t1-one"})
    before.move("t2", "start", {"sessionId": "s2"})
    before.move("t2", "ask", {"question": QUESTION})
    before.store.close()  # kill -9: nothing tidied up
    after = BoardTasks(open_store(url), replica="board-a", clock=clock, own_store=True)
    try:
        interrupted = after.recover()
        assert sorted(t["id"] for t in interrupted) == ["t1", "t2"]
        t1, t2 = after.get("t1"), after.get("t2")
        assert (t1["state"], t1["error"], t1["sessionId"], t1["workspace"], t1["branch"]) == (
            "failed", RESTARTED, "s1", "/w/t1", "task/t1-one")
        assert (t2["state"], t2["question"]) == ("failed", None)
        assert after.get("t3")["state"] == "queued"  # the queue is kept
        assert [e["event"] for e in after.events("t1")[0]] == [None, "task.failed"]
        assert after.move("t1", "prompt", {"prompt": "continue"}).task["sessionId"] == "s1"
        assert after.recover() == []
    finally:
        after.close()


def test_a_live_replicas_runs_are_left_alone_until_its_lease_lapses(shared: tuple[BoardTasks, BoardTasks]) -> None:
    one, two = shared
    clock = Clock()
    one.clock = two.clock = clock
    one.create("go", agent="echo", task_id="t1")
    one.move("t1", "start")
    assert two.recover() == [] and one.recover() == []  # two sees one's live lease; one runs it itself
    assert two.get("t1")["state"] == "running"
    clock.now += one.lease_s + 1  # one stopped renewing (it died)
    lapsed = two.recover()
    assert [t["id"] for t in lapsed] == ["t1"]
    assert lapsed[0]["state"] == "failed" and "lease expired" in lapsed[0]["error"]


def test_the_lease_keeper_renews_ours_and_interrupts_a_dead_replicas(shared: tuple[BoardTasks, BoardTasks]) -> None:
    one, two = shared
    one.create("mine", agent="echo", task_id="mine")
    one.create("theirs", agent="echo", task_id="theirs")
    one.move("mine", "start")
    two.move("theirs", "start")
    two.forget("theirs")  # two stops renewing: as if it died
    clock = Clock(two.clock() + two.lease_s + 1)
    keeper = one.leases(start=False)
    keeper.clock = clock  # the lease of "theirs" has run out by this clock; one renews its own first
    assert keeper.keep() == 1
    assert one.get("theirs")["state"] == "failed" and one.get("mine")["state"] == "running"
    record = one.store.get(KIND, "mine")
    assert record is not None and record.holder == "one"


def test_the_transcript_channel_is_per_task() -> None:
    assert events_channel("t1") == "board_tasks:t1" != events_channel("t2")
