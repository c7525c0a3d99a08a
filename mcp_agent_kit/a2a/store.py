"""store: where A2A tasks live — one repository (TaskStore) over any store.Store: memory, sqlite, postgresql.

One record of kind `a2a_tasks` per task: key = task id, owner = the principal, group = contextId,
state = the task state, order = the status timestamp (ListTasks' sort key, newest first, ties by
id), body = the task: a plain dict in ProtoJSON shape plus private keys starting with "_" (`_owner`,
`_pending`, `_events`, `_continuing`) that are never sent (`view` drops them). A task read from
here is a fresh top-level dict with two read-side keys: `_version` (saves are compare-and-set on it:
`Conflict` when another writer saved in between) and `_leased` (True while some replica holds a
live lease on it: it runs a job for the task, or has just taken a continuation of it:
`_continuing`, a deadline the engine writes). Everything nested in it is shared with the store and
never mutated: a caller changes a task by assigning new values to its top-level keys (new lists,
new dicts), then `save`s it (store.base: bodies are immutable once written).

`replica` "" (the default, a memory store) is one process: nothing is leased, and the engine
runs without replication. With a replica id, a task is leased to this replica while its id is in
`running` (the engine's jobs) and it is neither finished nor waiting for input.

Bounds, the same on every backend: finished tasks expire `ttl` seconds after they finished; at
`max_tasks` the oldest finished task makes room, at `max_per_owner` the owner's own oldest finished
task does (so one principal's tasks never push out another's), and when none has finished the
insert is refused (StoreError). Counts are the store's (memory: counters, never a scan; SQL: counted
again only once half the room the last count left is used); the oldest finished tasks are read a
batch at a time (a finished task never changes, so the batch stays good).
Rules: no protocol errors, only StoreError; no locking of its own (the engine holds its lock);
knows nothing of the engine.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Container
from typing import Any, NamedTuple

from mcp_agent_kit.a2a.lifecycle import STATES, TERMINAL, is_final
from mcp_agent_kit.store.base import Record, Store, StoreError

KIND = "a2a_tasks"
UNFINISHED = tuple(sorted(STATES - TERMINAL))
FINISHED = tuple(sorted(TERMINAL))
_PAGE = 100
_EVICT_BATCH = 256  # oldest finished tasks read at once when making room
_ROOMS = 10_000  # owners whose room is remembered (then forgotten, and counted again)
SHARED_MAX_TASKS, SHARED_MAX_PER_OWNER = 100_000, 10_000  # the bounds on a store that outlives the process


class Query(NamedTuple):
    owner: str | None
    context_id: str | None = None
    state: str | None = None
    after: str | None = None  # status timestamps strictly newer than this ISO string
    cursor: tuple[str, str] | None = None  # (timestamp, id) of the last item of the previous page
    limit: int = 50


class Conflict(StoreError):
    """Another writer saved the task after it was read; read it again."""


def view(task: dict[str, Any], history_length: int | None = None, artifacts: bool = True) -> dict[str, Any]:
    """A client's copy of a task: private keys dropped, history cut to the last N, empty lists omitted."""
    out: dict[str, Any] = {"id": task["id"], "contextId": task["contextId"], "status": dict(task["status"])}
    if artifacts and task.get("artifacts"):
        out["artifacts"] = [dict(a, parts=list(a["parts"])) for a in task["artifacts"]]
    history = task.get("history") or []
    if history_length is not None:
        history = history[-history_length:] if history_length > 0 else []
    if history:
        out["history"] = list(history)
    if task.get("metadata"):
        out["metadata"] = task["metadata"]
    return out


def task_of(record: Record) -> dict[str, Any]:
    """The task a record holds, with its `_version` and `_leased` read-side keys."""
    task = dict(record.body)
    task["_version"] = record.version
    if record.holder is None and "_continuing" not in task:
        task["_leased"] = False
        return task
    now = time.time()
    task["_leased"] = (record.holder is not None and (record.lease_until or 0.0) > now) or \
        float(task.get("_continuing", 0.0)) > now
    return task


class TaskStore:
    """The A2A task repository over `store` (default: a fresh memory store, one process).
    `replica`: this process's lease holder id when other replicas share the store; `clock`
    (epoch seconds) stamps expiry for the `ttl`."""

    def __init__(self, store: Store | None = None, replica: str = "", lease_s: float = 30.0, *,
                 max_tasks: int = 10_000, ttl: float | None = 24 * 3600.0, max_per_owner: int = 1_000,
                 clock: Callable[[], float] = time.time) -> None:
        if lease_s <= 0 or max_tasks < 1 or max_per_owner < 1:
            raise ValueError("lease_s must be positive, max_tasks and max_per_owner at least 1")
        if store is None:
            from mcp_agent_kit.store.memory import MemoryStore

            store = MemoryStore()
        self.store = store
        self.replica = replica
        self.lease_s = lease_s
        self.max_tasks = max_tasks
        self.ttl = ttl
        self.max_per_owner = max_per_owner
        self.clock = clock
        self.running: Container[str] = frozenset()  # the ids of the engine's jobs' tasks (lease_to)
        self._leased_to = False
        self._last_sweep = 0.0
        self._oldest: dict[str | None, collections.deque[str]] = {}  # owner (None: anyone) -> finished ids
        self._room: dict[str | None, int] = {}  # owner (None: anyone) -> inserts left before counting again

    def lease_to(self, running: Container[str]) -> None:
        """The one engine that runs tasks on this store here: a task whose id is in `running` is
        leased to this replica. Once only: a second engine on the same store is a mistake."""
        if self._leased_to:
            raise ValueError("this TaskStore already serves an engine; give each engine its own store")
        self.running, self._leased_to = running, True

    def _record(self, task: dict[str, Any], version: int = 1) -> Record:
        status = task["status"]
        state = status["state"]
        leased = bool(self.replica) and not is_final(state) and task["id"] in self.running
        expires = None
        if self.ttl is not None and state in TERMINAL:
            expires = self.clock() + self.ttl
        body = dict(task)
        body.pop("_version", None)
        body.pop("_leased", None)
        return Record(KIND, task["id"], body, task.get("_owner") or "", str(task.get("contextId", "")), state,
                      str(status.get("timestamp", "")), version, self.replica if leased else None,
                      self.clock() + self.lease_s if leased else None, expires)

    # ---- bounds ---------------------------------------------------------------------------------
    def _make_room(self, owner: str) -> None:
        """Evict what the caps ask for before an insert; StoreError when only unfinished tasks are left."""
        self._sweep()
        if self._full(owner, self.max_per_owner) and not self._evict(owner):
            raise StoreError("this principal has too many unfinished tasks")
        if self._full(None, self.max_tasks) and not self._evict(None):
            raise StoreError("the task store is full of unfinished tasks")

    def _full(self, owner: str | None, cap: int) -> bool:
        """Is the cap (of `owner`, None: of the store) reached? The memory store counts in O(1), so
        always; a SQL store counts rows, so only once the room its last count left is used up, and
        of that room half, since other replicas insert too (deletes only make more room)."""
        if not self.store.shared:
            return (self.store.count(KIND) if owner is None else self.store.count(KIND, owner=owner)) >= cap
        room = self._room.get(owner, 0)
        if room > 0:
            self._room[owner] = room - 1
            return False
        count = self.store.count(KIND) if owner is None else self.store.count(KIND, owner=owner)
        if count >= cap:
            return True
        if len(self._room) >= _ROOMS:
            self._room.clear()
        self._room[owner] = (cap - count) // 2  # this insert takes one of the rest
        return False

    def _evict(self, owner: str | None) -> bool:
        """Delete the oldest finished task (of `owner`, or of anyone); False when there is none."""
        for fetched in (False, True):
            queue = self._oldest.get(owner)
            if not queue:
                if fetched:
                    break
                page = self.store.query(KIND, owner=owner, states=FINISHED, limit=_EVICT_BATCH, oldest_first=True)
                queue = self._oldest[owner] = collections.deque(r.key for r in page.records)
            while queue:
                if self.store.delete(KIND, queue.popleft()):  # gone already: purged, or evicted by another cap
                    return True
        self._oldest.pop(owner, None)
        return False

    def _sweep(self) -> None:
        """Purge expired finished tasks, at most once a minute (or once a ttl, when shorter)."""
        now = self.clock()
        if self.ttl is not None and now - self._last_sweep > min(self.ttl, 60.0):
            self._last_sweep = now
            self.store.purge(KIND, now)

    # ---- the repository -------------------------------------------------------------------------
    def insert(self, task: dict[str, Any]) -> None:
        """Add a new task (StoreError when its id exists or the caps refuse it)."""
        self._make_room(task.get("_owner") or "")
        if not self.store.insert(self._record(task)):
            raise StoreError(f"task {task['id']} already exists")
        task["_version"] = 1

    def get(self, task_id: str) -> dict[str, Any] | None:
        record = self.store.get(KIND, task_id)
        return None if record is None else task_of(record)

    def save(self, task: dict[str, Any]) -> None:
        """Compare-and-set on the `_version` the task was read with (Conflict when it moved on)."""
        version = task.get("_version")
        saved = self.store.update(self._record(task, 1 if version is None else version + 1), expect_version=version)
        if saved is None:
            raise Conflict(f"task {task['id']} was changed by another replica")
        task["_version"] = saved.version

    def query(self, query: Query) -> tuple[list[dict[str, Any]], int]:
        """One page of the owner's tasks, newest status first, and how many match in all."""
        self._sweep()
        owner = query.owner or ""
        states = None if query.state is None else [query.state]
        if query.after is None:
            page = self.store.query(KIND, owner=owner, group=query.context_id, states=states,
                                    before=query.cursor, limit=query.limit)
            return [task_of(r) for r in page.records], page.total
        # statusTimestampAfter: newest first, so the matches are a prefix of the sorted records
        newer: list[Record] = []
        before: tuple[str, str] | None = None
        while True:
            page = self.store.query(KIND, owner=owner, group=query.context_id, states=states, before=before,
                                    limit=_PAGE)
            fresh = [r for r in page.records if r.order > query.after]
            newer += fresh
            if len(fresh) < len(page.records) or len(page.records) < _PAGE:
                break
            before = (page.records[-1].order, page.records[-1].key)
        if query.cursor is not None:
            cursor = query.cursor
            found = [r for r in newer if (r.order, r.key) < cursor]
        else:
            found = newer
        return [task_of(r) for r in found[: query.limit]], len(newer)

    def unfinished(self) -> list[dict[str, Any]]:
        """Every unfinished task (every replica's, on a shared store)."""
        page = self.store.query(KIND, states=UNFINISHED, limit=self.max_tasks)
        return [task_of(r) for r in page.records]

    def close(self) -> None:
        self.store.close()


# The older names, kept importable: the one-process memory store (docs/limits.md) and the shared one.
MemoryTaskStore = MemoryStore = SharedTaskStore = TaskStore
