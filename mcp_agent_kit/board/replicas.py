"""board.replicas: what lets several board processes share one board — the data-directory lock, the
scheduler's lease, and answers relayed to the replica whose agent asked.

Replicas share one store (PostgreSQL: tasks, queue, transcripts, questions) and, on one machine, one
data directory (the worktrees). LOCKS says how a Board holds its data directory: with its own sqlite
file or a `sqlite://` store, one process only (an exclusive flock: a second board there is refused);
with a PostgreSQL store, a shared flock (any number of replicas, but no single-process board beside
them); with a memory store (tests), none. `replicated` is true for the last two: then every transcript
append is announced on EVENTS_CHANNEL ("<task id> <seq>") so "task" listeners on every replica hear it.

The scheduler's lease is a store.leases.SoleLease on (SCHEDULER_KIND, SCHEDULER_KEY): exactly one
replica plans and starts tasks at a time; when its holder dies another takes it within the lease.

AnswerRelay: an answer given on a replica that does not run the task becomes a record of kind
ANSWERS_KIND (key "<task id>:<version of the task as read>", state "pending"; insert-if-absent, so
two answers to one question race to one record), announced on board.tasks.CHANNEL (refused at once when
the task's replica is not live: its lease ran out). The replica that
runs the task finds pending answers for its runs on its next scheduler round (`deliver`), hands each
to its waiting turn through the local answer path (which checks it and moves the task exactly once),
and writes the outcome (the task, or the refusal) into the record. The answering replica waits for
that outcome (bounded by ANSWER_WAIT_S, woken by the task's notifications), deletes the record and
returns the task or raises the same refusal. Rules: no protocol; store records only; the local
answer path stays the one place that answers a question.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from mcp_agent_kit.board.errors import BoardError, TaskConflict, TaskInvalid, TaskNotFound
from mcp_agent_kit.board.states import transition
from mcp_agent_kit.board.tasks import CHANNEL, KIND, BoardTasks
from mcp_agent_kit.store.base import Record, Store

__all__ = ["ANSWERS_KIND", "EVENTS_CHANNEL", "LOCKS", "SCHEDULER_KEY", "SCHEDULER_KIND", "AnswerRelay",
           "lock_data_dir", "lock_mode"]

log = logging.getLogger("mcp_agent_kit.board")
SCHEDULER_KIND, SCHEDULER_KEY = "board_scheduler", "scheduler"
ANSWERS_KIND = "board_answers"
EVENTS_CHANNEL = "board_events"  # notifications: "<task id> <seq>" of a transcript append
ANSWER_WAIT_S = 15.0  # how long an answer given on one replica waits for the replica running the task
ANSWER_TTL_S = 3600.0  # an answer record left behind (its replica died) may be purged after this
LOCK_FILE = "board.lock"
# the store's scheme -> how the data directory is locked ("exclusive": one process; "shared": replicas)
LOCKS: dict[str, str | None] = {"": "exclusive", "sqlite": "exclusive", "postgresql": "shared", "postgres": "shared",
                                "memory": None}
# a refusal's type -> the error raised again on the answering replica (any other: TaskConflict)
_ERRORS: dict[str, type[BoardError]] = {"TaskInvalid": TaskInvalid}


def lock_mode(store: Store | None) -> str | None:
    """How a Board on `store` (None: its own sqlite file) locks its data directory (LOCKS)."""
    scheme = "" if store is None else store.url.split(":", 1)[0].lower()
    return LOCKS.get(scheme, "exclusive")


def lock_data_dir(data_dir: Path, mode: str) -> int:
    """flock the data directory's lock file (exclusive or shared, never waiting); the descriptor to close.
    BoardError names the conflict."""
    import fcntl

    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if mode == "shared" else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        fix = ("stop it, or give this one another data directory" if mode == "exclusive" else
               "a board with its own sqlite store holds it: stop it, or give the replicas another data directory")
        raise BoardError(f"another board runs on the data directory {data_dir}: {fix}") from None
    return fd


class AnswerRelay:
    """Answers crossing replicas (see the module docstring)."""

    def __init__(self, tasks: BoardTasks, wait: Callable[[Callable[[], Any], float], Any]) -> None:
        self.tasks, self.store, self.wait = tasks, tasks.store, wait

    def send(self, task_id: str, answer: Any, timeout: float = ANSWER_WAIT_S) -> dict[str, Any]:
        """Hand `answer` to the replica running the task; the task once answered there. TaskConflict when the
        question was answered already, or no replica took the answer in time; TaskInvalid as the runner says."""
        record = self.store.get(KIND, task_id) if isinstance(task_id, str) else None
        if record is None:
            raise TaskNotFound(str(task_id))
        transition(record.state, "answer", task_id)
        if not self.tasks.live_elsewhere(task_id):
            raise TaskConflict(f"task {task_id} waits on a board process that stopped (replica {record.holder}); "
                               "the board settles the task within its lease: read the task again")
        key = f"{task_id}:{record.version}"
        body = {"taskId": task_id, "answer": answer, "from": self.tasks.replica}
        pending = Record(ANSWERS_KIND, key, body, group=task_id, state="pending",
                         expires=self.tasks.clock() + ANSWER_TTL_S)
        if not self.store.insert(pending):
            raise TaskConflict(f"task {task_id}'s question is being answered already: read the task again")
        self.store.notify(CHANNEL, task_id)  # the replica running it delivers it on its next round
        try:
            done = self.wait(lambda: self._outcome(key), timeout)
        finally:
            self.store.delete(ANSWERS_KIND, key)
        if done is None:
            raise TaskConflict(f"the board process running task {task_id} did not take the answer within "
                               f"{timeout:g} s (it may have stopped): read the task again")
        if "error" in done:
            raise _ERRORS.get(str(done.get("type")), TaskConflict)(str(done["error"]))
        return dict(done["task"])

    def _outcome(self, key: str) -> dict[str, Any] | None:
        record = self.store.get(ANSWERS_KIND, key)
        return record.body.get("outcome") if record is not None and record.state == "done" else None

    def deliver(self, here: Collection[str], answer_here: Callable[[str, Any], dict[str, Any]]) -> int:
        """Answer the pending answers for the runs `here` through `answer_here` (the local path), writing each
        outcome for the replica waiting on it; how many were delivered."""
        if not here:
            return 0
        delivered = 0
        for record in self.store.query(ANSWERS_KIND, states=["pending"], limit=100, oldest_first=True).records:
            task_id = str(record.body.get("taskId"))
            if task_id not in here:
                continue
            try:
                outcome: dict[str, Any] = {"task": answer_here(task_id, record.body.get("answer"))}
            except BoardError as exc:
                outcome = {"error": str(exc), "type": type(exc).__name__}
            written = self.store.update(record._replace(body={**record.body, "outcome": outcome}, state="done"),
                                        expect_version=record.version)
            if written is None:
                log.info("board: the answer to task %s was withdrawn meanwhile", task_id)
            self.store.notify(CHANNEL, task_id)  # wakes the replica waiting for the outcome
            delivered += 1
        return delivered
