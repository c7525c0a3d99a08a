"""replication: what makes A2A replicas behind one load balancer act as one agent.

Over a shared TaskStore: every event of a task is appended to the channel `task:a2a_tasks:<id>` and
notified, so a subscriber on any replica tails the log in order (woken by the notification, polling
every POLL_S as the fallback); one background thread per engine keeps the leases of the tasks
this replica runs (store.leases.LeaseKeeper: renewed every lease/3; a task whose lease lapsed,
its replica died, goes to `on_lapsed`, LAPSED its text), notices a cancel written by another
replica (the job's cancel event is set), purges expired records and drops the event log of a task
this replica finished LOG_GRACE_S after (a subscriber still behind then ends at the task's
recorded final state); idempotency claims (store.claims, key `a2a:<owner>:<messageId>`) make a
retried message run once across replicas.
OneProcess is its counterpart for tasks no other process shares (the engine picks one of the two).
Rules: no HTTP, no protocol errors; knows the engine only through the callables it is given.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Generator
from typing import Any

from mcp_agent_kit.a2a.lifecycle import TERMINAL
from mcp_agent_kit.a2a.protocol import SUBMITTED, WORKING
from mcp_agent_kit.a2a.store import KIND, TaskStore, task_of
from mcp_agent_kit.logs import logger
from mcp_agent_kit.store.base import StoreError
from mcp_agent_kit.store.claims import IDEMPOTENCY, Claims
from mcp_agent_kit.store.leases import LAPSED, LeaseKeeper

__all__ = ["LAPSED", "Replication", "channel", "claim_key"]
log = logger("mcp_agent_kit.a2a")
PREFIX = f"task:{KIND}:"
POLL_S = 1.0
PURGE_S = 60.0
LOG_GRACE_S = 60.0
CLAIM_TTL = 24 * 3600.0
Event = dict[str, Any]


def channel(task_id: str) -> str:
    return PREFIX + task_id


def claim_key(owner: str, message_id: str) -> str:
    return f"a2a:{owner}:{message_id}"


class Replication:
    """Event logs, leases, remote cancels and idempotency for one engine on a shared store."""

    shared = True

    def __init__(self, tasks: TaskStore, jobs: Callable[[], dict[str, threading.Event]],
                 on_lapsed: Callable[[dict[str, Any]], None]) -> None:
        self.tasks = tasks
        self.store = tasks.store
        self._jobs = jobs  # task id -> its job's cancel event, for the jobs this replica runs
        self._lock = threading.Lock()
        self._tails: dict[str, set[threading.Event]] = {}
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._finished: collections.deque[tuple[float, str]] = collections.deque()  # (drop its log at, task id)
        self.claims = Claims(self.store, ttl_s=CLAIM_TTL)
        self.leases = LeaseKeeper(self.store, KIND, tasks.replica, tasks.lease_s, states=(SUBMITTED, WORKING),
                                  held=lambda: list(self._jobs()),
                                  on_lapsed=lambda record, _reason: on_lapsed(task_of(record)))
        self._unsubscribe = self.store.subscribe(self._heard)
        self._thread = threading.Thread(target=self._loop, name="a2a-leases", daemon=True)
        self._thread.start()

    # ---- event logs ---------------------------------------------------------------------------
    def publish(self, task_id: str, event: Event, final: bool = False) -> None:
        """Log the event and wake every replica's subscribers; `final`: the task has finished."""
        self.store.append(channel(task_id), event)
        self.store.notify(channel(task_id))
        if final:
            self._finished.append((time.monotonic() + LOG_GRACE_S, task_id))

    def tail(self, task_id: str, after: int, done: Callable[[str], bool], keepalive_s: float,
             timeout: float | None = None) -> Generator[Event | None, None, None]:
        """The task's events after sequence number `after`, until a status update `done` accepts
        (or the task is found finished with nothing more logged); None when idle for keepalive_s."""
        wake = threading.Event()
        name = channel(task_id)
        with self._lock:
            self._tails.setdefault(name, set()).add(wake)
        deadline = None if timeout is None else time.monotonic() + timeout
        idle = time.monotonic()
        try:
            while not self._closed.is_set():
                wake.clear()
                batch = self.store.events(name, after)
                for seq, event in batch:
                    after = seq
                    yield event
                    update = event.get("statusUpdate")
                    if update is not None and done(update["status"]["state"]):
                        return
                if batch:
                    idle = time.monotonic()
                    continue
                if deadline is not None and time.monotonic() >= deadline:
                    return
                wait = POLL_S if deadline is None else min(POLL_S, max(0.0, deadline - time.monotonic()))
                if wake.wait(wait):
                    continue
                record = self.store.get(KIND, task_id)
                if (record is None or record.state in TERMINAL) and not self.store.events(name, after, 1):
                    return  # finished, and its last event never got logged (its replica died)
                if time.monotonic() - idle >= keepalive_s:
                    idle = time.monotonic()
                    yield None
        finally:
            with self._lock:
                waiting = self._tails.get(name)
                if waiting is not None:
                    waiting.discard(wake)
                    if not waiting:
                        del self._tails[name]

    def _heard(self, name: str, payload: str) -> None:
        """A notification (any replica's): wake this channel's tails and, for a local job, the checker."""
        if not name.startswith(PREFIX):
            return
        with self._lock:
            waiting = list(self._tails.get(name, ()))
        for wake in waiting:
            wake.set()
        if name[len(PREFIX):] in self._jobs():
            self._wake.set()

    # ---- idempotency ----------------------------------------------------------------------------
    def claim(self, owner: str, message_id: str) -> bool:
        """True the first time (owner, messageId) is seen by any replica; False for a retry."""
        return self.claims.claim(claim_key(owner, message_id), owner)

    def resolve(self, owner: str, message_id: str, body: dict[str, Any]) -> None:
        """Record what a claimed message became: {"taskId": ...} or {"message": ...}."""
        self.claims.resolve(claim_key(owner, message_id), owner, body)

    def unclaim(self, owner: str, message_id: str) -> None:
        """The message was refused before it ran: a retry may try again."""
        self.claims.release(claim_key(owner, message_id))

    def outcome(self, owner: str, message_id: str, timeout: float) -> dict[str, Any] | None:
        """What a claimed message became, waiting (bounded) while its replica is still accepting it."""
        return self.claims.outcome(claim_key(owner, message_id), timeout)

    # ---- the lease thread -------------------------------------------------------------------------
    def _loop(self) -> None:
        period = min(POLL_S, self.leases.period)
        last_purge = 0.0
        while not self._closed.is_set():
            self._wake.wait(period)
            self._wake.clear()
            if self._closed.is_set():
                return
            try:
                self._tick()
                while self._finished and self._finished[0][0] <= time.monotonic():
                    self.store.drop_events(channel(self._finished.popleft()[1]))
                if time.monotonic() - last_purge >= PURGE_S:
                    last_purge = time.monotonic()
                    now = time.time()
                    self.store.purge(KIND, now)
                    self.store.purge(IDEMPOTENCY, now)
            except (StoreError, OSError) as exc:
                log.warning("a2a lease keeping failed (will retry): %s", exc)

    def _tick(self) -> None:
        for task_id, cancel in self._jobs().items():
            record = self.store.get(KIND, task_id)
            if record is not None and record.state in TERMINAL:
                cancel.set()  # another replica canceled it (or failed it when our lease lapsed)
        if self.leases.due():
            self.leases.keep()

    def close(self) -> None:
        self._closed.set()
        self._wake.set()
        self._unsubscribe()
        self._thread.join(timeout=5.0)


class OneProcess:
    """Replication's counterpart when no other process shares the tasks: nothing to claim, log or lease."""

    shared = False

    def claim(self, owner: str, message_id: str) -> bool:
        return True  # a repeated messageId runs again, as it always has in one process

    def resolve(self, owner: str, message_id: str, body: dict[str, Any]) -> None:
        pass

    def unclaim(self, owner: str, message_id: str) -> None:
        pass

    def publish(self, task_id: str, event: Event, final: bool = False) -> None:
        pass  # the engine's own subscriber queues are every subscriber there is

    def close(self) -> None:
        pass
