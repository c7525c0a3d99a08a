"""task_table: the one task table both eras' tasks keep — states, transitions, limits, expiry, owners.

core.tasks (the 2026-07-28 extension) and core.legacy_tasks (2025-11-25's experimental tasks)
each keep their tasks in a TaskTable and render the wire shape of a TaskRecord themselves; which
tools run as tasks is a Policy per tool, kept on the registry. Rules: no wire shapes and no
method handlers here; a status moves only along TRANSITIONS, under the table's lock; a task is
found only by its owner; uuid and datetime are imported on first use (server start avoids them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError

TERMINAL = frozenset({"completed", "failed", "cancelled"})
TRANSITIONS: dict[str, frozenset[str]] = {
    "working": frozenset({"input_required", "completed", "failed", "cancelled"}),
    "input_required": frozenset({"working", "completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}
DEFAULT_TTL_MS = 3_600_000


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

    def __init__(self, owner: Any, ttl_ms: int | None) -> None:
        import uuid  # lazily: uuid costs ~1.5 ms at server start, and tasks are rare

        self.id = str(uuid.uuid4())
        self.owner = owner
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
        self.cancel = threading.Event()
        self.notify: Callable[[dict[str, Any]], None] | None = None  # where 2025-11-25 announces changes

    @property
    def expired(self) -> bool:
        return self.ttl_ms is not None and time.monotonic() - self.born > self.ttl_ms / 1000


# ---- the table ---------------------------------------------------------------------------------
class TaskTable:
    """Tasks by id: created up to a limit, found by their owner only, forgotten when they expire.

    `render(task)` gives the era's wire shape; `changed(task, snapshot)` (optional) is told of
    every transition, outside the lock, with the shape rendered under it.
    """

    def __init__(
        self,
        render: Callable[[TaskRecord], dict[str, Any]],
        *,
        max_live: int,
        too_many: str = "Internal error: too many tasks; try again later",
        not_found: Callable[[Any], str] = lambda task_id: f"Invalid params: unknown task {task_id!r}",
        changed: Callable[[TaskRecord, dict[str, Any]], None] | None = None,
    ) -> None:
        self.render = render
        self.max_live = max_live
        self.too_many = too_many
        self.not_found = not_found
        self.changed = changed
        self.lock = threading.Condition()
        self._tasks: dict[str, TaskRecord] = {}

    def create(self, owner: Any, ttl_ms: int | None) -> TaskRecord:
        self.sweep()
        task = TaskRecord(owner, ttl_ms)
        with self.lock:
            if len(self._tasks) >= self.max_live:
                raise RpcError(INTERNAL_ERROR, self.too_many)
            self._tasks[task.id] = task
        return task

    def find(self, task_id: Any, owner: Any) -> TaskRecord:
        """The owner's task, or -32602 for unknown, expired or someone else's ids."""
        self.sweep()
        with self.lock:
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or task.owner != owner:
            raise RpcError(INVALID_PARAMS, self.not_found(task_id))
        return task

    def owned_by(self, owner: Any) -> list[TaskRecord]:
        self.sweep()
        with self.lock:
            return [task for task in self._tasks.values() if task.owner == owner]

    def sweep(self) -> None:
        """Forget the tasks whose ttl has passed, asking their work to stop."""
        with self.lock:
            expired = [task for task in self._tasks.values() if task.expired]
            for task in expired:
                del self._tasks[task.id]
                task.cancel.set()
            if expired:
                self.lock.notify_all()

    def move(self, task: TaskRecord, status: str, **fields: Any) -> bool:
        """Apply one transition from TRANSITIONS, setting fields; False (and no change) if not allowed."""
        with self.lock:
            if status != task.status and status not in TRANSITIONS[task.status]:
                return False
            task.status = status
            for name, value in fields.items():
                setattr(task, name, value)
            task.updated = now()
            self.lock.notify_all()
            snapshot = self.render(task)
        if self.changed is not None:
            self.changed(task, snapshot)
        return True

    def snapshot(self, task: TaskRecord) -> dict[str, Any]:
        with self.lock:
            return self.render(task)

    def wait_end(self, task: TaskRecord, cancel: threading.Event | None) -> bool:
        """Block until the task ends; False if the waiting request was cancelled first."""
        with self.lock:
            while task.status not in TERMINAL:
                if cancel is not None and cancel.is_set():
                    return False
                self.lock.wait(0.25)
            return True

    def wake(self) -> None:
        with self.lock:
            self.lock.notify_all()
