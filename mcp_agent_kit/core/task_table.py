"""task_table: the one task table both eras' tasks keep — states, transitions, limits, expiry, owners.

core.tasks (the 2026-07-28 extension) and core.legacy_tasks (2025-11-25's experimental tasks)
each keep their tasks in a TaskTable and render the wire shape of a TaskRecord themselves; which
tools run as tasks is a Policy per tool, kept on the registry. Rules: no wire shapes and no
method handlers here; a status moves only along TRANSITIONS, under the table's lock; a task is
found only by its owner; uuid and datetime are imported on first use (server start avoids them).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from mcp_agent_kit.core.context import CancelFlag, cancel_listener
from mcp_agent_kit.wire.jsonrpc import RpcError

TERMINAL = frozenset({"completed", "failed", "cancelled"})
TRANSITIONS: dict[str, frozenset[str]] = {
    "working": frozenset({"input_required", "completed", "failed", "cancelled"}),
    "input_required": frozenset({"working", "completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}
DEFAULT_TTL_MS = 3_600_000
SAFETY_WAIT_S = 60.0  # a wait for a task wakes on every change (notified); this bound only guards against a lost one


class TaskLimits(NamedTuple):
    """How many tasks a server keeps and runs (docs/limits.md); `Server(task_limits=...)`."""

    max_tasks: int = 10_000  # kept at once, all principals: past it the oldest finished task is evicted
    per_principal: int = 1_000  # kept at once per principal: past it that principal's oldest finished goes
    running_per_principal: int = 1_000  # unfinished at once per principal: past it new tasks are refused
    workers: int = 32  # threads running tasks; the rest wait in the queue, still `working`


DEFAULT_LIMITS = TaskLimits()
OWNER: Any = object()  # create()'s default principal: the task's owner

REFUSALS = {  # why a task was refused -> the -32603 detail (the spec defines no quota error)
    "full": "too many unfinished tasks on this server; try again later",
    "running": "too many unfinished tasks for this principal; try again later",
}


class TaskCancelled(Exception):
    """Raised inside a task's tool when it waits for input and the task is cancelled."""


# ---- which tools run as tasks ----------------------------------------------------------------
class Policy:
    """How one tool runs as a task: `required` (no task, no service) and `manual` detach."""

    __slots__ = ("manual", "required", "ttl_ms")

    def __init__(self, *, required: bool = False, manual: bool = False, ttl_ms: int | None = DEFAULT_TTL_MS) -> None:
        self.required = required
        self.manual = manual
        self.ttl_ms = ttl_ms


LONG_RUNNING = Policy()  # the policy of a tool registered with long_running=True


def task_tool(registry: Any, name: str, *, required: bool = False, manual: bool = False,
              ttl_ms: int | None = DEFAULT_TTL_MS) -> None:
    """Make a registered tool task-capable (tools registered with `long_running=True` already are).

    required: a client without the extension gets -32021 instead of a synchronous run.
    manual: the tool runs synchronously (MRTR rounds included) until it calls `start_task(ctx)`.
    ttl_ms: how long the task is kept after creation (None: until the server stops).
    """
    registry.task_policies[name] = Policy(required=required, manual=manual, ttl_ms=ttl_ms)


def policy_of(registry: Any, tool: Any) -> Policy | None:
    """The tool's Policy, or None for a tool that never runs as a task."""
    found: Policy | None = registry.task_policies.get(tool.name)
    if found is None and tool.long_running:
        return LONG_RUNNING
    return found


def now() -> str:
    """The current time as the RFC 3339 text task timestamps carry."""
    from datetime import UTC, datetime  # lazily: tasks are rare, server start is not

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---- one task ---------------------------------------------------------------------------------
class TaskRecord:
    """One task's state, whatever its era. Changed only under its table's lock."""

    remote = False  # a read-only view of a task another replica runs (core.task_mirror)
    wall = 0.0  # time.time() at creation, when the task is mirrored to a store

    def __init__(self, owner: Any, ttl_ms: int | None, principal: Any = None, *,
                 cancel: threading.Event | None = None,
                 notify: Callable[[dict[str, Any]], None] | None = None) -> None:
        import uuid  # lazily: uuid costs ~1.5 ms at server start, and tasks are rare

        self.id = str(uuid.uuid4())
        self.owner = owner  # who may see it: the principal (2026-07-28) or the connection (2025-11-25)
        self.principal = principal  # whose quota it counts against
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = now()
        self.born = time.monotonic()
        self.ttl_ms = ttl_ms
        self.result: dict[str, Any] | None = None
        self.error: Any = None  # the era decides: an error object (2026-07-28) or an RpcError (2025-11-25)
        self.pending: dict[str, dict[str, Any]] = {}  # input requests awaiting tasks/update (2026-07-28)
        self.answers: dict[str, Any] = {}
        self.used_keys: set[str] = set()
        # listenable (Context.add_listener('cancelled', fn)); the task's own unless its run made it one first
        self.cancel: threading.Event = CancelFlag() if cancel is None else cancel
        self.notify = notify  # where 2025-11-25 announces changes

    @property
    def deadline(self) -> float | None:
        return None if self.ttl_ms is None else self.born + self.ttl_ms / 1000

    @property
    def expired(self) -> bool:
        return self.ttl_ms is not None and time.monotonic() - self.born > self.ttl_ms / 1000


# ---- the table ---------------------------------------------------------------------------------
class TaskTable:
    """Tasks by id: created within the limits, found by their owner only, dropped at their ttl.

    Finished tasks never block new ones: at a limit the oldest finished task (of the principal,
    or of anyone for the overall limit) is evicted; only unfinished tasks can make a create fail.
    `render(task)` gives the era's wire shape; `changed(task, snapshot)` (optional) is told of
    every transition, outside the lock, with the shape rendered under it. A running task past its
    ttl is cancelled and dropped by one reaper thread per table (started while deadlines exist).
    """

    def __init__(
        self,
        render: Callable[[TaskRecord], dict[str, Any]],
        *,
        limits: TaskLimits = DEFAULT_LIMITS,
        not_found: Callable[[Any], RpcError] = lambda task_id: RpcError.invalid_params(f"unknown task {task_id!r}"),
        changed: Callable[[TaskRecord, dict[str, Any]], None] | None = None,
    ) -> None:
        self.render = render
        self.limits = limits
        self.not_found = not_found
        self.changed = changed
        self.mirror: Any = None  # a core.task_mirror.TaskMirror when tasks are shared with other replicas
        shared = threading.RLock()
        self.lock = threading.Condition(shared)
        self._tasks: dict[str, TaskRecord] = {}
        self._by_owner: dict[Any, dict[str, None]] = {}
        self._kept: dict[Any, int] = {}  # principal -> tasks kept
        self._running: dict[Any, int] = {}  # principal -> unfinished tasks
        self._finished: dict[str, None] = {}  # ids in the order they finished
        self._finished_of: dict[Any, dict[str, None]] = {}
        self._deadlines: list[tuple[float, str]] = []
        self._reaper_wake = threading.Condition(shared)
        self._reaping = False

    def __len__(self) -> int:
        return len(self._tasks)

    def attach(self, mirror: Any) -> None:
        """Write every task through to a store (core.task_mirror) and find other replicas' tasks there."""
        mirror.table = self
        self.mirror = mirror

    def running(self, principal: Any) -> int:
        with self.lock:
            return self._running.get(principal, 0)

    def create(self, owner: Any, ttl_ms: int | None, principal: Any = OWNER, *,
               cancel: threading.Event | None = None,
               notify: Callable[[dict[str, Any]], None] | None = None) -> TaskRecord:
        """A new `working` task, or -32603 when the principal (or everyone) has too many unfinished.
        `principal` defaults to the owner (2026-07-28: the owner is the principal); `cancel` and `notify`
        are the task's from its first moment in the table (TaskRecord), never set on it later."""
        principal = owner if principal is OWNER else principal
        task = TaskRecord(owner, ttl_ms, principal, cancel=cancel, notify=notify)
        limits = self.limits
        mirror = self.mirror
        if mirror is not None and mirror.mirrored(task):
            if not mirror.quota(owner, limits.running_per_principal):
                raise RpcError.internal_error(REFUSALS["running"])
        else:
            mirror = None
        with self.lock:
            self._expire_due()
            if self._running.get(principal, 0) >= limits.running_per_principal:
                raise RpcError.internal_error(REFUSALS["running"])
            if self._kept.get(principal, 0) >= limits.per_principal:
                self._evict(self._finished_of.get(principal))
            if len(self._tasks) >= limits.max_tasks:
                self._evict(self._finished)
            if len(self._tasks) >= limits.max_tasks or self._kept.get(principal, 0) >= limits.per_principal:
                raise RpcError.internal_error(REFUSALS["full"])
            self._tasks[task.id] = task
            self._by_owner.setdefault(owner, {})[task.id] = None
            self._kept[principal] = self._kept.get(principal, 0) + 1
            self._running[principal] = self._running.get(principal, 0) + 1
            deadline = task.deadline
            if deadline is not None:
                first = not self._deadlines or deadline < self._deadlines[0][0]
                heapq.heappush(self._deadlines, (deadline, task.id))
                if not self._reaping:
                    self._reaping = True
                    threading.Thread(target=self._reap, name="mcp-task-reaper", daemon=True).start()
                elif first:
                    self._reaper_wake.notify()
        if mirror is not None:
            try:
                mirror.created(task)
            except RpcError:
                with self.lock:
                    self._remove(task)
                raise
        return task

    def find(self, task_id: Any, owner: Any) -> TaskRecord:
        """The owner's task, or -32602 for unknown, expired or someone else's ids."""
        with self.lock:
            self._expire_due()
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None and self.mirror is not None and isinstance(task_id, str):
            task = self.mirror.lookup(task_id, owner)
        if task is None or task.owner != owner:
            raise self.not_found(task_id)
        return task

    def owned_by(self, owner: Any) -> list[TaskRecord]:
        """The owner's tasks, oldest first (with a mirror: on every replica, as the store has them)."""
        with self.lock:
            self._expire_due()
            here = [self._tasks[task_id] for task_id in self._by_owner.get(owner, ())]
        if self.mirror is None or not self.mirror.owner_key(owner):
            return here
        local = {task.id: task for task in here}
        return [local.get(task.id, task) for task in self.mirror.owned(owner, self.limits.max_tasks)]

    def drop_owner(self, owner: Any) -> list[TaskRecord]:
        """The owner is gone (its session or stream ended): cancel and forget its tasks."""
        with self.lock:
            dropped = [self._tasks[task_id] for task_id in list(self._by_owner.get(owner, ()))]
            for task in dropped:
                self._remove(task)
            self.lock.notify_all()
        return dropped

    def sweep(self) -> None:
        """Forget the tasks whose ttl has passed, asking their work to stop."""
        with self.lock:
            self._expire_due()

    def move(self, task: TaskRecord, status: str, **fields: Any) -> bool:
        """Apply one transition from TRANSITIONS, setting fields; False (and no change) if not allowed.
        With a mirror the store decides an end (core.task_mirror.TaskMirror.finish)."""
        mirror = self.mirror
        if mirror is not None and status in TERMINAL and task.status not in TERMINAL:
            status, fields = mirror.finish(task, status, fields)
        with self.lock:
            before = task.status
            if status != before and status not in TRANSITIONS[before]:
                return False
            task.status = status
            for name, value in fields.items():
                setattr(task, name, value)
            task.updated = now()
            if status in TERMINAL and before not in TERMINAL and self._tasks.get(task.id) is task:
                self._running[task.principal] -= 1
                self._finished[task.id] = None
                self._finished_of.setdefault(task.principal, {})[task.id] = None
            self.lock.notify_all()
            snapshot = self.render(task)
        if self.changed is not None:
            self.changed(task, snapshot)
        if mirror is not None and status not in TERMINAL:
            mirror.wrote(task)
        return True

    def snapshot(self, task: TaskRecord) -> dict[str, Any]:
        with self.lock:
            return self.render(task)

    def wait_end(self, task: TaskRecord, cancel: threading.Event | None) -> bool:
        """Block until the task ends; False if the waiting request was cancelled first.

        Event-driven: every status change (move, expiry, a dropped owner) notifies the table's
        condition, and the request's cancel flag wakes it through a listener; nothing is polled."""
        return self.wait_until(lambda: task.status in TERMINAL, cancel)

    def wait_until(self, done: Callable[[], bool], cancel: threading.Event | None) -> bool:
        """Block under the lock until `done()` (looked at after each notify of the table's condition);
        False if `cancel` was set first. `cancel` wakes the wait through a listener (core.context.cancel_listener)."""
        remove = None if cancel is None else cancel_listener(cancel, self.wake)
        try:
            with self.lock:
                while not done():
                    if cancel is not None and cancel.is_set():
                        return False
                    self.lock.wait(SAFETY_WAIT_S)
                return True
        finally:
            if remove is not None:
                remove()

    def wake(self) -> None:
        """Wake every wait on the table (a change made outside move(), such as a cancel flag set)."""
        with self.lock:
            self.lock.notify_all()

    # ---- under the lock ---------------------------------------------------------------------------
    def _evict(self, finished: dict[str, None] | None) -> None:
        """Drop the oldest task of `finished` (ids in the order they finished), if any."""
        if finished:
            self._remove(self._tasks[next(iter(finished))])

    def _remove(self, task: TaskRecord) -> None:
        if self._tasks.pop(task.id, None) is None:
            return
        principal = task.principal
        owned = self._by_owner.get(task.owner)
        if owned is not None:
            owned.pop(task.id, None)
            if not owned:
                del self._by_owner[task.owner]
        self._kept[principal] -= 1
        if not self._kept[principal]:
            del self._kept[principal]
        if task.status in TERMINAL:
            self._finished.pop(task.id, None)
            mine = self._finished_of.get(principal)
            if mine is not None:
                mine.pop(task.id, None)
                if not mine:
                    del self._finished_of[principal]
        else:
            self._running[principal] -= 1
            task.status = "cancelled"
            task.message = task.message or "The task was cancelled: it expired or its session ended."
            task.updated = now()
        if not self._running.get(principal, 1):
            del self._running[principal]
        task.cancel.set()

    def _expire_due(self) -> None:
        deadlines, tasks, clock = self._deadlines, self._tasks, time.monotonic()
        while deadlines and deadlines[0][0] <= clock:
            _, task_id = heapq.heappop(deadlines)
            task = tasks.get(task_id)
            if task is not None:
                self._remove(task)
                self.lock.notify_all()

    def _reap(self) -> None:
        """One thread per table while deadlines exist: drop each task at its ttl."""
        with self.lock:
            while self._deadlines:
                self._expire_due()
                if self._deadlines:
                    self._reaper_wake.wait(max(0.0, self._deadlines[0][0] - time.monotonic()))
            self._reaping = False
