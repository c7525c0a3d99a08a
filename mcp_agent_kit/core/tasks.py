"""tasks: the tasks extension `io.modelcontextprotocol/tasks` (SEP-2663, digest §7).

A task-capable tool called by a client that declares the extension on that request answers
at once with a CreateTaskResult; the tool keeps running on a worker thread, and the client
polls `tasks/get`, answers the tool's questions with `tasks/update` and asks for cooperative
cancellation with `tasks/cancel`. A tool may also run an MRTR prelude first and detach later
with `start_task(ctx)`. Rules: no sockets and no encoding; the Server composes a TasksExtension
into its dispatcher (core.extension), which keeps the tasks in a core.task_table.TaskTable (with
its limits and per-principal quotas) and runs them on a core.worker_pool.WorkerPool (never a
thread each), and renders their 2026-07-28 shape here; task ids are random UUIDs and a task is visible only to the
principal that created it. 2025-11-25's tasks (core.legacy_tasks) share core.task_table and the pool, not this module.
The table, the pool and core.task_table's names re-exported here load on first use (a task-capable
tool's call, a tasks/* request, `task_tool`): a server without tasks never imports them.
A TaskSource keeps tasks of its own elsewhere (the gateway's agent turns, in sqlite, with sealed
ids); it is declared when the extension is built (`TasksExtension(sources=...)`, `Server(task_sources=...)`),
never added later: its tools' task-mode calls and the tasks/* requests for ids it owns go to it,
behind the same capability check and -32021 as every task; when the extension is bound it hands each
source the `notify` that pushes the source's own task changes to their owner's listens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from mcp_agent_kit.core import methods
from mcp_agent_kit.core.call import Call, Method
from mcp_agent_kit.core.context import (
    CancelFlag,
    Context,
    InputBroker,
    cancel_listener,
    capability_declared,
    required_capability,
)
from mcp_agent_kit.core.extension import Contributions, Lazy
from mcp_agent_kit.core.listen import ListenExtension, Subscription
from mcp_agent_kit.core.task_machinery import TaskMachinery
from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, RpcError
from mcp_agent_kit.wire.mcp import MODERN

if TYPE_CHECKING:
    from concurrent.futures import Future

    from mcp_agent_kit.core.registry import Registry
    from mcp_agent_kit.core.task_mirror import Keeper
    from mcp_agent_kit.core.task_table import (
        DEFAULT_TTL_MS,
        TERMINAL,
        TRANSITIONS,
        Policy,
        TaskCancelled,
        TaskLimits,
        TaskRecord,
        TaskTable,
        policy_of,
        task_tool,
    )
    from mcp_agent_kit.core.worker_pool import WorkerPool

__all__ = [
    "DEFAULT_TTL_MS", "EXTENSION", "REQUIRED", "TERMINAL", "TRANSITIONS", "Policy", "TaskCancelled",
    "TasksExtension", "declared", "policy_of", "start_task", "task_tool",
]

EXTENSION = mcp.TASKS_EXTENSION
REQUIRED: dict[str, Any] = {"extensions": {EXTENSION: {}}}
DEFAULT_POLL_MS = 500
KIND = "mcp_tasks"  # the store records of these tasks (core.task_mirror)
# core.task_table's names this module re-exports, imported when one is first asked for.
_FROM_TABLE = frozenset(
    {"DEFAULT_TTL_MS", "TERMINAL", "TRANSITIONS", "Policy", "TaskCancelled", "policy_of", "task_tool"}
)


def __getattr__(name: str) -> Any:
    if name not in _FROM_TABLE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from mcp_agent_kit.core import task_table

    value = getattr(task_table, name)
    globals()[name] = value
    return value


def principal_key(principal: Any) -> str:
    """A task's owner column in the store: its principal (anonymous = "-")."""
    return "-" if principal is None else f"={principal}"


def start_task(ctx: Context | None) -> None:
    """From here on the tool runs as a task (when the request declared the extension).

    Questions asked before this point are MRTR rounds of the tools/call itself; questions asked
    after it park the task as input_required. Without the extension this does nothing.
    """
    hook = getattr(ctx, "_mcp_task_detach", None)
    if callable(hook):
        hook()


def declared(capabilities: dict[str, Any]) -> bool:
    return capability_declared(capabilities, REQUIRED)


def render(task: TaskRecord, poll_ms: int) -> dict[str, Any]:
    """The Task fields, plus the status-specific ones (DetailedTask)."""
    body: dict[str, Any] = {
        "taskId": task.id, "status": task.status, "createdAt": task.created,
        "lastUpdatedAt": task.updated, "ttlMs": task.ttl_ms, "pollIntervalMs": poll_ms,
    }
    if task.message:
        body["statusMessage"] = task.message
    if task.status == "input_required":
        body["inputRequests"] = dict(task.pending)
    elif task.status == "completed" and task.result is not None:
        body["result"] = task.result
    elif task.status == "failed" and task.error is not None:
        body["error"] = task.error
    return body


TaskNotify = Callable[[str, "str | None", dict[str, Any]], None]
"""notify(task_id, owner, snapshot): push a task's DetailedTask to its owner's listens that asked for its id."""


class TaskSource(Protocol):
    """Tasks kept outside the table: `tools` run as its tasks when the request declares the extension."""

    tools: frozenset[str]

    def attach(self, notify: TaskNotify) -> None:
        """Called once, when the extension is bound: how to push the source's own task changes."""

    def owns(self, task_id: Any) -> bool:
        """Is this id one of ours (its shape, not whether it exists)?"""

    def start(self, call: Call, arguments: dict[str, Any]) -> dict[str, Any]:
        """The CreateTaskResult for a task-mode call of one of `tools`."""

    def get(self, call: Call) -> dict[str, Any]:
        """tasks/get for an id it owns."""

    def update(self, call: Call) -> dict[str, Any]:
        """tasks/update for an id it owns."""

    def cancel(self, call: Call) -> dict[str, Any]:
        """tasks/cancel for an id it owns."""


# ---- the extension and its store ---------------------------------------------------------------------
class TasksExtension(TaskMachinery):
    """The 2026-07-28 tasks extension on one dispatcher: its task table, methods and tools/call hook."""

    name = "tasks"

    def __init__(self, listen: ListenExtension | None = None, *, poll_ms: int = DEFAULT_POLL_MS,
                 limits: TaskLimits | None = None, pool: WorkerPool | Lazy[WorkerPool] | None = None,
                 sources: Iterable[TaskSource] = ()) -> None:
        """limits: core.task_table.DEFAULT_LIMITS when None; pool: its own (limits.workers threads)
        when None. Both are built when the first task needs them. sources: TaskSources served beside
        the table (fixed here)."""
        self.listen = listen
        self.poll_ms = poll_ms
        self._limits = limits
        self._table = Lazy(self._new_table)
        self.lazy_pool = self._pool_from(pool)
        self.registry: Any = None
        self.sources: tuple[TaskSource, ...] = tuple(sources)
        if listen is not None:
            listen.extras["taskIds"] = self._listen_task_ids

    def _new_table(self) -> TaskTable:
        from mcp_agent_kit.core.task_table import DEFAULT_LIMITS, TaskTable

        poll_ms = self.poll_ms
        return TaskTable(lambda task: render(task, poll_ms), changed=self._push,
                         limits=DEFAULT_LIMITS if self._limits is None else self._limits)

    @property
    def lock(self) -> threading.Condition:
        return self.table.lock

    def bind(self, registry: Registry) -> Contributions:
        self.registry = registry
        for source in self.sources:
            source.attach(self.notify)
        rows = (("tasks/get", self.tasks_get), ("tasks/update", self.tasks_update), ("tasks/cancel", self.tasks_cancel))
        return Contributions(
            methods={(name, MODERN): Method(fn, None, REQUIRED) for name, fn in rows},
            interceptors={MODERN: self.intercept},
            capabilities={MODERN: _offer_extension},
        )

    def close(self) -> None:
        return None  # running tasks outlive a transport; they end with their ttl or the process

    def share(self, keeper: Keeper) -> None:
        """Keep the tasks in the keeper's store too, so every replica can read and steer them."""
        from mcp_agent_kit.core.task_mirror import TaskMirror  # lazily: only replicas need it

        mirror = TaskMirror(keeper, KIND, principal_key, on_answers=self.answer, on_cancel=self._cancel_here,
                            watching=self._watched, on_remote=self._pushed_remote)
        self.table.attach(mirror)

    def _cancel_here(self, task: TaskRecord) -> None:
        task.cancel.set()
        self.table.wake()

    def _watched(self, task_id: str) -> bool:
        return self.listen is not None and any(task_id in sub.task_ids for sub in self.listen.subscribers())

    def _pushed_remote(self, task: TaskRecord) -> None:
        """Another replica changed a task a listen stream here watches: push it as if it ran here."""
        for sub in self.listen.subscribers() if self.listen is not None else ():
            if task.id in sub.task_ids and principal_key(sub.principal) == task.owner:
                sub.send("notifications/tasks", self.table.render(task))

    def _source(self, call: Call) -> TaskSource | None:
        task_id = call.params.get("taskId")
        return next((source for source in self.sources if source.owns(task_id)), None)

    # ---- input_required ----------------------------------------------------------------------
    def ask(self, task: TaskRecord, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Park the task until every request is answered through tasks/update."""
        from mcp_agent_kit.core.task_table import TaskCancelled

        wire_keys: dict[str, str] = {}
        lock = self.lock
        with lock:
            for key in requests:
                wire, n = key, 1
                while wire in task.used_keys:
                    n += 1
                    wire = f"{key}-{n}"
                task.used_keys.add(wire)
                wire_keys[key] = wire
            task.pending.update({wire_keys[key]: request for key, request in requests.items()})
        self.table.move(task, "input_required")
        # answer() notifies the table's condition; the task's cancel flag wakes the wait through a listener
        if not self.table.wait_until(lambda: not any(wire in task.pending for wire in wire_keys.values()),
                                     task.cancel):
            raise TaskCancelled()
        with lock:
            if task.cancel.is_set():
                raise TaskCancelled()
            answers = {key: task.answers.pop(wire) for key, wire in wire_keys.items()}
        return answers

    def answer(self, task: TaskRecord, responses: dict[str, Any]) -> None:
        with self.lock:
            for key, value in responses.items():
                if key in task.pending:  # unknown or already answered keys are ignored
                    del task.pending[key]
                    task.answers[key] = value
            resume = task.status == "input_required" and not task.pending
            self.lock.notify_all()
        if resume:
            self.table.move(task, "working")

    def _push(self, task: TaskRecord, snapshot: dict[str, Any]) -> None:
        self.notify(task.id, task.owner, snapshot)

    def notify(self, task_id: str, owner: str | None, snapshot: dict[str, Any]) -> None:
        """Push a task's DetailedTask (`notifications/tasks`) to its owner's listens that asked for its id
        (a TaskSource calls this for its own tasks)."""
        if self.listen is None:
            return
        for sub in self.listen.subscribers():
            if task_id in sub.task_ids and (sub.principal or "") == (owner or ""):
                sub.send("notifications/tasks", dict(snapshot))

    def _listen_task_ids(self, call: Call, sub: Subscription, wanted: Any) -> Any:
        if not isinstance(wanted, list) or not all(isinstance(t, str) for t in wanted):
            raise RpcError.invalid_params('"taskIds" must be an array of strings')
        if not declared(call.capabilities):
            return None
        sub.task_ids.update(wanted)
        return list(wanted)

    # ---- tools/call ------------------------------------------------------------------------------
    def intercept(self, call: Call, tool: Any, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """Run a task-capable tool as a task when the request declares the extension."""
        for source in self.sources:
            if tool.name in source.tools:
                return source.start(call, arguments) if declared(call.capabilities) else None
        if not (tool.long_running or self.registry.task_policies):
            return None  # the usual call: no task anywhere in sight
        from mcp_agent_kit.core.task_table import policy_of

        policy = policy_of(self.registry, tool)
        if policy is None:
            return None
        if not declared(call.capabilities):
            if policy.required:
                raise RpcError(mcp.MISSING_CAPABILITY, "Missing required client capability",
                               {"requiredCapabilities": REQUIRED})
            return None
        return TaskRun(self, call, tool, arguments, policy).start()

    # ---- tasks/* methods -----------------------------------------------------------------------
    def tasks_get(self, call: Call) -> dict[str, Any]:
        source = self._source(call)
        if source is not None:
            return source.get(call)
        task = self.table.find(call.params.get("taskId"), call.conn.principal)
        return self.table.snapshot(task)

    def tasks_update(self, call: Call) -> dict[str, Any]:
        source = self._source(call)
        if source is not None:
            return source.update(call)
        task = self.table.find(call.params.get("taskId"), call.conn.principal)
        responses = call.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise RpcError.invalid_params('tasks/update needs an "inputResponses" object')
        if task.remote:
            self.table.mirror.deliver(task.id, responses)
        else:
            self.answer(task, responses)
        return {}

    def tasks_cancel(self, call: Call) -> dict[str, Any]:
        source = self._source(call)
        if source is not None:
            return source.cancel(call)
        from mcp_agent_kit.core import task_table

        task = self.table.find(call.params.get("taskId"), call.conn.principal)
        if task.remote:
            self.table.mirror.request_cancel(task.id)
        elif task.status not in task_table.TERMINAL:
            self._cancel_here(task)
        return {}


def _offer_extension(version: str, caps: dict[str, Any]) -> None:
    caps["extensions"] = {**caps.get("extensions", {}), EXTENSION: {}}


# ---- running a tool as a task ------------------------------------------------------------------------
class _TaskOut:
    """The task's outbox: the request's stream until the task detaches, nothing after."""

    def __init__(self, run: TaskRun) -> None:
        self.run = run

    def notify(self, message: dict[str, Any]) -> None:
        out = self.run.call.out
        if self.run.task is None and out is not None:
            out.notify(message)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RpcError(INTERNAL_ERROR, "tasks cannot send requests to the client")


class _TaskBroker:
    """MRTR replay before the task detaches; parking as input_required after."""

    def __init__(self, run: TaskRun, inner: InputBroker) -> None:
        self.run = run
        self.inner = inner

    def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        run = self.run
        if run.task is None:
            return self.inner.ask(requests)
        for request in requests.values():
            needed = required_capability(request)
            if needed is None:
                raise ValueError(f"unsupported input request method {request.get('method')!r}")
            if not capability_declared(run.call.capabilities, needed):
                raise RpcError(mcp.MISSING_CAPABILITY, "Missing required client capability",
                               {"requiredCapabilities": needed})
        replayed: dict[str, Any] = getattr(self.inner, "answers", {})
        known = {key: replayed[key] for key in requests if key in replayed}
        missing = {key: request for key, request in requests.items() if key not in known}
        if missing:
            known.update(run.store.ask(run.task, missing))
        return known


class TaskRun:
    """One tools/call that runs (or may come to run) as a task."""

    def __init__(self, store: TasksExtension, call: Call, tool: Any, arguments: dict[str, Any], policy: Policy) -> None:
        self.store = store
        self.call = call
        self.tool = tool
        self.arguments = arguments
        self.policy = policy
        self.task: TaskRecord | None = None
        self.cancel: threading.Event = CancelFlag()  # listenable: Context.add_listener('cancelled', fn)
        from concurrent.futures import Future  # lazily: it imports logging, which a server start avoids

        self.first: Future[dict[str, Any]] = Future()
        self._lock = threading.Lock()

    def broker(self, inner: InputBroker) -> InputBroker:
        """core.call.TaskHooks: the tool's questions go through MRTR, then to the task."""
        return _TaskBroker(self, inner)

    def start(self) -> dict[str, Any]:
        if not self.policy.manual:
            self.detach()  # the task exists before the reply goes out
        self.store.pool.submit(self._work)  # a task waiting for a worker is `working`
        request_cancel = self.call.cancel
        # Until the tool detaches, cancelling the tools/call cancels the tool; after, only tasks/cancel does.
        remove = None if request_cancel is None else cancel_listener(request_cancel, self._request_cancelled)
        try:
            return self.first.result()  # set by detach() or by the end of _work, whichever comes first
        finally:
            if remove is not None:
                remove()

    def _request_cancelled(self) -> None:
        with self._lock:
            detached = self.task is not None
        if not detached:
            self.cancel.set()  # outside the lock: the tool's own cancel listeners run here

    def detach(self) -> None:
        with self._lock:
            if self.task is not None:
                return
            task = self.store.table.create(self.call.conn.principal, self.policy.ttl_ms, cancel=self.cancel)
            self.task = task
        if not self.first.done():
            self.first.set_result({"resultType": "task", **render(task, self.store.poll_ms)})

    def _work(self) -> None:
        from mcp_agent_kit.core.task_table import TaskCancelled

        outcome: dict[str, Any] | None = None
        failure: RpcError | None = None
        try:
            if self.cancel.is_set():  # cancelled (or expired) while it waited for a worker
                raise TaskCancelled()
            worker = self.call._replace(out=_TaskOut(self), cancel=self.cancel, task=self)
            outcome = methods.execute_tool(worker, self.tool, self.arguments)
        except TaskCancelled:
            pass
        except RpcError as exc:
            failure = exc
        except Exception as exc:  # a tool crash outside execute_tool's own handling
            failure = RpcError.internal_error(f"{exc}")
        with self._lock:
            task = self.task
        if task is None:  # never detached: the tools/call answers synchronously
            if failure is not None:
                self.first.set_exception(failure)
            elif outcome is not None:
                self.first.set_result(outcome)
            else:
                self.first.set_exception(RpcError.internal_error("the call was cancelled"))
            return
        table = self.store.table
        if self.cancel.is_set():
            table.move(task, "cancelled", pending={})
        elif failure is not None:
            table.move(task, "failed", error=failure.to_error(), pending={})
        elif outcome is not None:
            table.move(task, "completed", result=outcome, pending={})
