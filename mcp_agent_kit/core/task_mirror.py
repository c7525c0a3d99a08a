"""task_mirror: a task table's tasks written through to a shared store, so every replica sees them.

With a store (`Server(store=...)`), each TaskTable gets a TaskMirror: a task is inserted into the
store when it is created (leased to this replica), every transition is written through, and a
lookup of an id this replica does not run reads the store (a *remote* TaskRecord, a read-only
view). A cancel or an answer received for a remote task goes into the record's `inbox` and is
announced with `notify("task:<kind>:<id>")`; the replica running the task applies it when the
notification arrives or, at worst, on its next poll (at most a second later). The store decides a
task's end: the first terminal state written (compare-and-set) wins, and a replica whose write
finds another terminal state adopts it. One Keeper per server runs one thread that keeps each
mirror's leases (store.leases.LeaseKeeper: renewed every lease/3; a task whose replica's lease
lapsed is failed with LAPSED), purges expired records and wakes mirrors on notifications.
Rules: no wire shapes (the era's codec turns errors into JSON and back); the store is reached only
through store.base.Store; without a mirror a table runs exactly as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core.task_table import TERMINAL, TaskRecord, now
from mcp_agent_kit.logs import logger
from mcp_agent_kit.store.base import Record, Store, StoreError
from mcp_agent_kit.store.leases import LAPSED, LeaseKeeper
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, RpcError

UNFINISHED = ("working", "input_required")
__all__ = ["LAPSED", "Keeper", "TaskMirror"]
POLL_S = 1.0  # the longest a signal waits when its notification was lost
PURGE_S = 10.0
CAS_TRIES = 8

Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]  # (error -> JSON, JSON -> error)
PLAIN: Codec = (lambda error: error, lambda error: error)


def unavailable(exc: StoreError) -> RpcError:
    return RpcError.internal_error(f"the task store is unavailable ({exc})")


def channel(kind: str, key: str) -> str:
    return f"task:{kind}:{key}"


class Keeper:
    """One per server: this replica's id and lease, and the thread that keeps its mirrors."""

    def __init__(self, store: Store, replica: str, lease_s: float) -> None:
        if lease_s <= 0:
            raise ValueError("the store lease must be positive")
        self.store = store
        self.replica = replica
        self.lease_s = lease_s
        self.mirrors: dict[str, TaskMirror] = {}
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._unsubscribe = store.subscribe(self._heard)
        self._thread = threading.Thread(target=self._loop, name="mcp-task-keeper", daemon=True)
        self._thread.start()

    def add(self, mirror: TaskMirror) -> None:
        self.mirrors[mirror.kind] = mirror

    def close(self) -> None:
        self._closed.set()
        self._wake.set()
        self._unsubscribe()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _heard(self, name: str, payload: str) -> None:
        prefix, _, rest = name.partition(":")
        kind, _, key = rest.partition(":")
        mirror = self.mirrors.get(kind) if prefix == "task" else None
        if mirror is not None and mirror.signal_heard(key):
            self._wake.set()

    def _loop(self) -> None:
        step = min(POLL_S, self.lease_s / 3)
        next_poll = next_renew = next_purge = 0.0
        while not self._closed.is_set():
            self._wake.wait(step)
            self._wake.clear()
            clock = time.monotonic()
            poll, renew, purge = clock >= next_poll, clock >= next_renew, clock >= next_purge
            next_poll = clock + POLL_S if poll else next_poll
            next_renew = clock + self.lease_s / 3 if renew else next_renew
            next_purge = clock + PURGE_S if purge else next_purge
            for mirror in list(self.mirrors.values()):
                try:
                    mirror.tick(poll=poll, renew=renew, purge=purge)
                except StoreError as exc:
                    logger().warning("task store: %s", exc)
                except Exception:  # a bug must not stop the leases of every other task
                    logger().exception("task keeper")


class TaskMirror:
    """One table's tasks in the store, as records of `kind` (key = task id, owner = owner_key(owner))."""

    def __init__(self, keeper: Keeper, kind: str, owner_key: Callable[[Any], str | None],
                 codec: Codec = PLAIN, *, on_answers: Callable[[TaskRecord, dict[str, Any]], None] | None = None,
                 on_cancel: Callable[[TaskRecord], None] | None = None,
                 watching: Callable[[str], bool] | None = None,
                 on_remote: Callable[[TaskRecord], None] | None = None) -> None:
        """on_answers / on_cancel: apply an answer or a cancel another replica received for a task running here;
        watching(key): is a remote task's change wanted here, and on_remote(task) where it goes."""
        self.keeper = keeper
        self.store = keeper.store
        self.kind = kind
        self.owner_key = owner_key
        self.encode_error, self.decode_error = codec
        self.table: Any = None  # the TaskTable, set by TaskTable.attach
        self.on_answers, self.on_cancel, self.on_remote = on_answers, on_cancel, on_remote
        self.watching: Callable[[str], bool] = watching or (lambda key: False)
        self._remote_changed: set[str] = set()
        self.held: dict[str, TaskRecord] = {}  # unfinished tasks this replica runs
        self._signalled: set[str] = set()
        self._lock = threading.Lock()
        self._write_locks: dict[str, threading.Lock] = {}
        self.leases = LeaseKeeper(self.store, kind, keeper.replica, keeper.lease_s, states=UNFINISHED,
                                  held=self._held, on_lapsed=self._fail_lapsed)
        keeper.add(self)

    def _held(self) -> list[str]:
        with self._lock:
            return list(self.held)

    # ---- records ------------------------------------------------------------------------------
    def mirrored(self, task: TaskRecord) -> bool:
        return self.owner_key(task.owner) is not None

    def _body(self, task: TaskRecord, inbox: dict[str, Any]) -> dict[str, Any]:
        return {"id": task.id, "status": task.status, "message": task.message, "created": task.created,
                "updated": task.updated, "ttlMs": task.ttl_ms, "result": task.result,
                "error": None if task.error is None else self.encode_error(task.error),
                "pending": dict(task.pending), "wall": task.wall, "inbox": inbox}

    def quota(self, owner: Any, limit: int) -> bool:
        """Does `owner` have fewer than `limit` unfinished tasks across every replica?"""
        key = self.owner_key(owner)
        if key is None:
            return True
        try:
            return self.store.count(self.kind, owner=key, states=UNFINISHED) < limit
        except StoreError as exc:
            raise unavailable(exc) from exc

    def created(self, task: TaskRecord) -> None:
        """Insert the new task, leased to this replica (RpcError when the store refuses)."""
        key = self.owner_key(task.owner)
        if key is None:
            return
        task.wall = wall = time.time()
        expires = None if task.ttl_ms is None else wall + task.ttl_ms / 1000
        record = Record(self.kind, task.id, self._body(task, {"cancel": False, "answers": {}}), owner=key,
                        state=task.status, order=task.created, holder=self.keeper.replica, expires=expires)
        try:
            self.store.insert(record, lease_s=self.keeper.lease_s)
        except StoreError as exc:
            raise unavailable(exc) from exc
        with self._lock:
            self.held[task.id] = task
            self._write_locks[task.id] = threading.Lock()

    def wrote(self, task: TaskRecord) -> None:
        """A non-terminal transition happened here: write the task as it is now."""
        if task.id in self.held:
            self._write(task, None)

    def finish(self, task: TaskRecord, status: str, fields: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Before a task of ours ends: claim the end in the store. Returns the end to apply here:
        ours, or the terminal state another replica wrote first (a remote cancel, a lapsed lease)."""
        if task.id not in self.held:
            return status, fields
        adopted = self._write(task, (status, fields))
        with self._lock:
            self.held.pop(task.id, None)
            self._write_locks.pop(task.id, None)
            self._signalled.discard(task.id)
        return adopted if adopted is not None else (status, fields)

    def _write(self, task: TaskRecord, end: tuple[str, dict[str, Any]] | None) -> tuple[str, dict[str, Any]] | None:
        with self._lock:
            lock = self._write_locks.get(task.id)
        if lock is None:
            return None
        with lock:
            for _ in range(CAS_TRIES):
                try:
                    stored = self.store.get(self.kind, task.id)
                    if stored is None:
                        return None  # purged (expired) meanwhile
                    if stored.state in TERMINAL:
                        return self._adopt(task, stored, end)
                    with self.table.lock:
                        body = self._body(task, stored.body.get("inbox") or {})
                    if end is not None:
                        status, fields = end
                        body.update({k: v for k, v in fields.items() if k in body})
                        body.update(status=status, pending={})
                        if "error" in fields and fields["error"] is not None:
                            body["error"] = self.encode_error(fields["error"])
                        body["updated"] = now()
                    state = body["status"]
                    done = state in TERMINAL
                    new = stored._replace(body=body, state=state, holder=None if done else stored.holder,
                                          lease_until=None if done else stored.lease_until)
                    if self.store.update(new, expect_version=stored.version) is not None:
                        self.store.notify(channel(self.kind, task.id), state)
                        return None
                except StoreError as exc:
                    logger().warning("task %s: could not write to the store: %s", task.id, exc)
                    return None
        logger().warning("task %s: the store record kept changing; write given up", task.id)
        return None

    def _adopt(self, task: TaskRecord, stored: Record, end: tuple[str, dict[str, Any]] | None) -> tuple[
            str, dict[str, Any]] | None:
        """The store already holds an end for the task: it wins."""
        fields: dict[str, Any] = {"message": stored.body.get("message"), "pending": {}}
        error = stored.body.get("error")
        if error is not None:
            fields["error"] = self.decode_error(error)
        if stored.body.get("result") is not None:
            fields["result"] = stored.body["result"]
        task.cancel.set()
        if end is None:  # a transition of a running task: end it here as the store says
            threading.Thread(target=self.table.move, args=(task, stored.state), kwargs=fields, daemon=True).start()
            return None
        return stored.state, fields

    # ---- remote tasks --------------------------------------------------------------------------
    def lookup(self, task_id: str, owner: Any) -> TaskRecord | None:
        """The owner's task as the store has it (a remote view), or None."""
        key = self.owner_key(owner)
        if key is None:
            return None
        try:
            stored = self.store.get(self.kind, task_id)
        except StoreError as exc:
            raise unavailable(exc) from exc
        if stored is None or stored.owner != key or (stored.expires is not None and stored.expires < time.time()):
            return None
        return self.restore(stored, owner)

    def owned(self, owner: Any, limit: int) -> list[TaskRecord]:
        """Every task of the owner in the store, oldest first (remote views)."""
        key = self.owner_key(owner)
        if key is None:
            return []
        try:
            page = self.store.query(self.kind, owner=key, limit=limit)
        except StoreError as exc:
            raise unavailable(exc) from exc
        now = time.time()
        return [self.restore(r, owner) for r in reversed(page.records) if r.expires is None or r.expires >= now]

    def restore(self, stored: Record, owner: Any) -> TaskRecord:
        body = stored.body
        task = TaskRecord.__new__(TaskRecord)
        task.id = stored.key
        task.owner = task.principal = owner
        task.status = stored.state
        task.message = body.get("message")
        task.created, task.updated = body.get("created", ""), body.get("updated", "")
        task.ttl_ms = body.get("ttlMs")
        task.born = time.monotonic() - max(0.0, time.time() - float(body.get("wall", time.time())))
        task.result = body.get("result")
        error = body.get("error")
        task.error = None if error is None else self.decode_error(error)
        task.pending = dict(body.get("pending") or {})
        task.answers, task.used_keys = {}, set()
        task.cancel = threading.Event()
        task.notify = None
        task.remote = True
        return task

    def send(self, task_id: str, change: Callable[[Record], Record | None]) -> Record | None:
        """Change a remote task's record (compare-and-set) and wake its replica; the new record, or
        None when `change` declined or the task is gone."""
        for _ in range(CAS_TRIES):
            try:
                stored = self.store.get(self.kind, task_id)
                changed = None if stored is None else change(stored)
                if stored is None or changed is None:
                    return None
                new = self.store.update(changed, expect_version=stored.version)
                if new is not None:
                    self.store.notify(channel(self.kind, task_id))
                    return new
            except StoreError as exc:
                raise unavailable(exc) from exc
        raise RpcError.internal_error("the task kept changing; try again")

    def request_cancel(self, task_id: str, end: str | None = None, message: str | None = None) -> Record | None:
        """Ask the running replica to cancel; with `end`, also end the record now (2025-11-25)."""
        def change(stored: Record) -> Record | None:
            if stored.state in TERMINAL:
                return None
            body = {**stored.body, "inbox": {**(stored.body.get("inbox") or {}), "cancel": True}}
            if end is None:
                return stored._replace(body=body)
            body.update(status=end, message=message, pending={})
            return stored._replace(body=body, state=end, holder=None, lease_until=None)
        return self.send(task_id, change)

    def deliver(self, task_id: str, responses: dict[str, Any]) -> None:
        """Leave answers to a remote task's pending input requests in its inbox."""
        def change(stored: Record) -> Record | None:
            pending = stored.body.get("pending") or {}
            wanted = {key: value for key, value in responses.items() if key in pending}
            if not wanted or stored.state in TERMINAL:
                return None
            inbox = stored.body.get("inbox") or {}
            answers = {**(inbox.get("answers") or {}), **wanted}
            return stored._replace(body={**stored.body, "inbox": {**inbox, "answers": answers}})
        self.send(task_id, change)

    # ---- the keeper's work ---------------------------------------------------------------------
    def signal_heard(self, key: str) -> bool:
        with self._lock:
            if key in self.held:
                self._signalled.add(key)
                return True
        if self.on_remote is not None and self.watching(key):
            with self._lock:
                self._remote_changed.add(key)
            return True
        return False

    def tick(self, *, poll: bool, renew: bool, purge: bool) -> None:
        with self._lock:
            due = list(self.held) if poll else list(self._signalled)
            self._signalled.clear()
            ended = [task for task in self.held.values() if task.status in TERMINAL]
            remote, self._remote_changed = self._remote_changed, set()
        for task in ended:  # ended without a move (its session closed, its ttl passed): write the end
            self.finish(task, task.status, {"message": task.message})
        for key in due:
            self._apply(key)
        for key in remote:
            stored = self.store.get(self.kind, key)
            if stored is not None and self.on_remote is not None:
                self.on_remote(self.restore(stored, stored.owner))  # owner: the column
        if renew:
            self.leases.keep()
        if purge:
            self.store.purge(self.kind, time.time())

    def _apply(self, key: str) -> None:
        """Apply what other replicas left for one of our tasks: an end, a cancel, answers."""
        with self._lock:
            task = self.held.get(key)
        if task is None:
            return
        stored = self.store.get(self.kind, key)
        if stored is None:
            return
        if stored.state in TERMINAL:
            self._adopt(task, stored, None)
            return
        inbox = stored.body.get("inbox") or {}
        if inbox.get("cancel") and not task.cancel.is_set() and self.on_cancel is not None:
            self.on_cancel(task)
        answers = inbox.get("answers") or {}
        with self.table.lock:
            fresh = {k: v for k, v in answers.items() if k in task.pending}
        if fresh and self.on_answers is not None:
            self.on_answers(task, fresh)

    def _fail_lapsed(self, stored: Record, reason: str) -> None:
        """A replica died with this task unfinished (the lease keeper found it): fail it, once (compare-and-set)."""
        error = {"code": INTERNAL_ERROR, "message": reason}
        body = {**stored.body, "status": "failed", "message": reason, "error": error, "pending": {}, "updated": now()}
        new = stored._replace(body=body, state="failed", holder=None, lease_until=None)
        if self.store.update(new, expect_version=stored.version) is not None:
            logger().warning("task %s failed: %s (holder %s)", stored.key, reason, stored.holder)
            self.store.notify(channel(self.kind, stored.key))
