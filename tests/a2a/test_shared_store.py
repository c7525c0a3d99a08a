"""A2A tasks on a shared store.Store: two engines over one store act as two replicas, in one process.

The engines share a store.memory.MemoryStore (the contract's reference backend) through
a2a.store.TaskStore (with a replica id), each with its own replica id, so every cross-replica path
(reads, cancel, leases, idempotency, event logs, continuation claims) runs here in milliseconds;
tests/store/test_a2a_replicas.py runs the same over real processes, sqlite and PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.a2a import A2AError, Agent, Job
from mcp_agent_kit.a2a.cli import build_store, main, parser
from mcp_agent_kit.a2a.engine import TaskEngine, Work
from mcp_agent_kit.a2a.store import KIND, TaskStore
from mcp_agent_kit.store.base import Record
from mcp_agent_kit.store.memory import MemoryStore

LEASE_S = 1.0


class Runs(Agent):
    """'wait' works until canceled (or 5 s); 'ask' asks once, then completes; 'reply' answers
    with a message; 'refuse' is refused; anything else completes. Every run is counted."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self.lock = threading.Lock()
        self.stopped = threading.Event()

    def accept(self, message: dict[str, Any], task: dict[str, Any] | None) -> Work:
        text = message["parts"][0]["text"]
        if text == "refuse":
            raise A2AError("InvalidParams", "Invalid params: refused")

        def run(job: Job) -> None:
            with self.lock:
                self.runs[message["messageId"]] = self.runs.get(message["messageId"], 0) + 1
            if text == "wait":
                job.working("waiting")
                if job.cancel.wait(5.0):
                    self.stopped.set()
                    job.working("too late")  # dropped: the task was canceled elsewhere
                    return
                job.complete("waited")
            elif text == "ask" and task is None:
                job.ask("more?", pending={"asked": True})
            elif text == "reply":
                job.reply("a message")
            else:
                job.complete(f"done: {text}")
        return run


class Scanned(MemoryStore):
    """A MemoryStore that remembers, per thread, the latest `now` it was asked for lapsed leases at:
    each replica's lease thread scans once a tick, after the tick before it (its failing of lapsed
    tasks included) is over."""

    def __init__(self) -> None:
        super().__init__()
        self.scans: dict[int, float] = {}
        self.scans_lock = threading.Lock()

    def lapsed(self, kind: str, states: Iterable[str], now: float) -> list[Record]:
        with self.scans_lock:
            self.scans[threading.get_ident()] = now
        return super().lapsed(kind, states, now)

    def scanned_after(self, moment: float) -> bool:
        """Both replicas' lease threads began a scan after `moment` (wall-clock seconds)."""
        with self.scans_lock:
            scans = list(self.scans.values())
        return len(scans) == 2 and min(scans) > moment


@pytest.fixture
def pair() -> Iterator[tuple[TaskEngine, TaskEngine, Runs]]:
    store = Scanned()
    agent = Runs()
    one = TaskEngine(agent, TaskStore(store, "replica-1", LEASE_S))
    two = TaskEngine(agent, TaskStore(store, "replica-2", LEASE_S))
    yield one, two, agent
    one.close()
    two.close()


def msg(text: str, message_id: str | None = None, task_id: str | None = None, immediately: bool = False
        ) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": message_id or f"m-{time.monotonic_ns()}", "role": "ROLE_USER",
                               "parts": [{"text": text}]}
    if task_id:
        message["taskId"] = task_id
    return {"message": message, "configuration": {"returnImmediately": immediately}}


def result(value: dict[str, Any] | Iterator[dict[str, Any]]) -> dict[str, Any]:
    assert isinstance(value, dict)
    return value


def state_of(engine: TaskEngine, task_id: str) -> str:
    return str(engine.get("", {"id": task_id})["status"]["state"])


def wait_for(check: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_any_replica_reads_and_lists_every_task(pair: tuple[TaskEngine, TaskEngine, Runs]) -> None:
    one, two, _ = pair
    made = [result(one.send("", msg(f"t{i}")))["task"] for i in range(3)]
    assert two.get("", {"id": made[0]["id"]})["status"]["state"] == "TASK_STATE_COMPLETED"
    listed = two.list_tasks("", {"pageSize": 2})
    assert listed["totalSize"] == 3 and len(listed["tasks"]) == 2
    rest = two.list_tasks("", {"pageSize": 2, "pageToken": listed["nextPageToken"]})
    assert {t["id"] for t in listed["tasks"] + rest["tasks"]} == {t["id"] for t in made}
    after = made[0]["status"]["timestamp"]
    newer = two.list_tasks("", {"statusTimestampAfter": after})
    assert newer["totalSize"] == len(newer["tasks"]) and made[0]["id"] not in {t["id"] for t in newer["tasks"]}
    with pytest.raises(A2AError, match="not found"):
        two.get("someone-else", {"id": made[0]["id"]})


def test_a_cancel_on_another_replica_reaches_the_running_job(pair: tuple[TaskEngine, TaskEngine, Runs]) -> None:
    one, two, agent = pair
    task = result(one.send("", msg("wait", immediately=True)))["task"]
    assert wait_for(lambda: state_of(two, task["id"]) == "TASK_STATE_WORKING")
    assert two.cancel("", {"id": task["id"]})["status"]["state"] == "TASK_STATE_CANCELED"
    assert agent.stopped.wait(3.0), "the job on replica 1 never saw the cancel"
    one.wait_idle(task["id"])
    assert state_of(one, task["id"]) == "TASK_STATE_CANCELED"
    with pytest.raises(A2AError, match="terminal"):
        one.cancel("", {"id": task["id"]})


def test_a_lapsed_lease_fails_the_task_once(pair: tuple[TaskEngine, TaskEngine, Runs]) -> None:
    _, two, _ = pair
    store = two.replicas.store if two.replicas else None
    assert store is not None
    body = {"id": "orphan", "contextId": "c", "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026"},
            "history": [], "_owner": ""}
    store.insert(Record(KIND, "orphan", body, state="TASK_STATE_WORKING", order="2026", holder="dead",
                        lease_until=time.time() - 1))
    assert wait_for(lambda: state_of(two, "orphan") == "TASK_STATE_FAILED", 3 * LEASE_S + 2)
    failed = two.get("", {"id": "orphan"})
    assert "lease expired" in failed["status"]["message"]["parts"][0]["text"]
    assert isinstance(store, Scanned)
    seen_failed = time.time()  # both replicas scan again after this: whatever they did about it is done
    assert wait_for(lambda: store.scanned_after(seen_failed)), "the lease threads stopped scanning"
    statuses = [e for _, e in store.events("task:a2a_tasks:orphan") if "statusUpdate" in e]
    assert len(statuses) == 1 and len(two.get("", {"id": "orphan"})["history"]) == 1


def test_a_live_lease_is_renewed_and_never_failed(pair: tuple[TaskEngine, TaskEngine, Runs]) -> None:
    one, two, _ = pair
    store = one.replicas.store if one.replicas else None
    assert isinstance(store, Scanned)
    task = result(one.send("", msg("wait", immediately=True)))["task"]

    def waiting() -> bool:  # the job's last save ("waiting"); from then on only renewals extend its lease
        message = two.get("", {"id": task["id"]})["status"].get("message")
        return bool(message) and message["parts"][0]["text"] == "waiting"

    assert wait_for(waiting)
    first = store.get(KIND, task["id"])
    assert first is not None and first.lease_until is not None
    # Both replicas scanned for lapsed leases after the lease last written would have ended unrenewed.
    assert wait_for(lambda: store.scanned_after(first.lease_until or 0.0), 3 * LEASE_S + 2)
    assert state_of(two, task["id"]) == "TASK_STATE_WORKING"
    renewed = store.get(KIND, task["id"])
    assert renewed is not None and (renewed.lease_until or 0.0) > first.lease_until
    two.cancel("", {"id": task["id"]})


def test_a_retried_message_runs_once_across_replicas(pair: tuple[TaskEngine, TaskEngine, Runs]) -> None:
    one, two, agent = pair
    first = result(one.send("", msg("x", message_id="same")))
    again = result(two.send("", msg("x", message_id="same")))
    assert again["task"]["id"] == first["task"]["id"] and agent.runs["same"] == 1
    replied = result(one.send("", msg("reply", message_id="r1")))
    assert result(two.send("", msg("reply", message_id="r1"))) == replied and agent.runs["r1"] == 1
    streamed = list(two.send("", msg("x", message_id="same"), stream=True))
    assert streamed[0]["task"]["id"] == first["task"]["id"] and len(streamed) == 1  # already finished
    for engine in (one, two):  # a refused message leaves no claim: the retry is refused the same way
        with pytest.raises(A2AError, match="refused"):
            engine.send("", msg("refuse", message_id="no"))


def test_a_subscription_on_another_replica_sees_every_event_in_order(
        pair: tuple[TaskEngine, TaskEngine, Runs]) -> None:
    one, two, _ = pair
    task = result(one.send("", msg("wait", immediately=True)))["task"]
    assert wait_for(lambda: state_of(two, task["id"]) == "TASK_STATE_WORKING")
    seen: list[dict[str, Any]] = []
    events = two.subscribe("", {"id": task["id"]})  # subscribed: the task is read here, its log followed from there
    follower = threading.Thread(target=lambda: seen.extend(events))
    follower.start()
    one.cancel("", {"id": task["id"]})
    follower.join(5.0)
    assert not follower.is_alive()
    assert seen[0]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert [e["statusUpdate"]["status"]["state"] for e in seen[1:]] == ["TASK_STATE_CANCELED"]


def test_input_is_answered_on_another_replica_and_claimed_once(pair: tuple[TaskEngine, TaskEngine, Runs]) -> None:
    one, two, _ = pair
    asked = result(one.send("", msg("ask")))["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = result(two.send("", msg("yes", task_id=asked["id"])))["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [m["parts"][0]["text"] for m in done["history"]] == ["ask", "more?", "yes", "done: yes"]
    waiting = result(one.send("", msg("ask")))["task"]
    winners: list[str] = []
    errors: list[str] = []

    def answer(engine: TaskEngine, text: str) -> None:
        try:
            winners.append(result(engine.send("", msg(text, task_id=waiting["id"])))["task"]["id"])
        except A2AError as exc:
            errors.append(str(exc))
    threads = [threading.Thread(target=answer, args=(e, f"answer {i}")) for i, e in enumerate((one, two, one, two))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5.0)
    assert len(winners) == 1 and len(errors) == 3
    assert all("still working" in e or "another replica" in e or "terminal" in e for e in errors)


def test_the_a2a_command_opens_the_store_it_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_AGENT_KIT_SECRET", raising=False)
    cli = parser()
    for argv in (["x:y"], ["x:y", "--store", "memory:"]):  # one process: memory, no replica id
        alone = build_store(cli.parse_args(argv))
        assert alone.replica == "" and not alone.store.shared and alone.max_per_owner == 1_000
    older = build_store(cli.parse_args(["x:y", "--store", str(tmp_path / "tasks.db")]))
    assert older.replica and older.store.url.endswith("tasks.db")
    older.close()
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert main(["examples/a2a_tck_agent.py:agent", "--store", url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--secret-file" in err[0] and "MCP_AGENT_KIT_SECRET" in err[0]
    (tmp_path / "secret").write_text("s" * 40)
    shared = build_store(cli.parse_args(["x:y", "--store", url, "--secret-file", str(tmp_path / "secret"),
                                         "--store-lease", "5"]))
    assert shared.replica and shared.lease_s == 5.0 and shared.max_per_owner == 10_000
    shared.close()


def test_a_store_serves_one_engine_only() -> None:
    """The engine declares its jobs to its store once (lease_to); a second engine on the same
    SharedTaskStore would silently take the leases of the first, so it is refused."""
    tasks = TaskStore(MemoryStore(), "replica-1", LEASE_S)
    engine = TaskEngine(Runs(), tasks)
    try:
        with pytest.raises(ValueError, match="already serves an engine; give each engine its own store"):
            TaskEngine(Runs(), tasks)
    finally:
        engine.close()
