"""legacy_tasks: the experimental tasks of 2025-11-25 for handshake-era connections (SEP-1686).

On a connection that negotiated 2025-11-25, a `tools/call` with `params.task` for a task-capable
tool (`task_tool(...)` or `long_running=True`) answers at once with `CreateTaskResult {task}`
while the tool runs on a worker thread. The client polls `tasks/get`, takes the outcome with
`tasks/result` (it blocks until the task ends and returns exactly what `tools/call` would have),
pages through `tasks/list` and stops a task with `tasks/cancel`. A running task's questions go to
the client as server→client requests tagged `io.modelcontextprotocol/related-task`, the task
showing `input_required` meanwhile. Rules: no sockets; the Server composes a LegacyTasksExtension
into its dispatcher; tasks belong to the connection (stdio stream or HTTP session) that created
them and count against its principal's quota, in one core.task_table.TaskTable for all
connections (so the limits hold overall); they run on a bounded core.worker_pool.WorkerPool,
and are cancelled and dropped when their connection ends (`end_connection`: session DELETE,
eviction or expiry, stdio EOF) or at their ttl; this module renders the 2025-11-25 shapes and
never imports the 2026-07-28 extension (core.tasks). The table and the pool (core.task_table,
core.worker_pool) are built, and imported, when the first task is created or asked for.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.core import methods
from mcp_agent_kit.core.call import Call, Method
from mcp_agent_kit.core.context import InputBroker
from mcp_agent_kit.core.extension import Contributions, Lazy
from mcp_agent_kit.core.task_machinery import TaskMachinery
from mcp_agent_kit.logs import logger
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from mcp_agent_kit.wire.mcp import LEGACY

if TYPE_CHECKING:
    from mcp_agent_kit.core.connection import Connection
    from mcp_agent_kit.core.registry import Registry
    from mcp_agent_kit.core.task_mirror import Keeper
    from mcp_agent_kit.core.task_table import TaskLimits, TaskRecord, TaskTable
    from mcp_agent_kit.core.worker_pool import WorkerPool

SINCE = mcp.LEGACY_TASKS_SINCE
RELATED_TASK = "io.modelcontextprotocol/related-task"
POLL_MS = 500
PAGE_SIZE = 50
KIND = "legacy_tasks"  # the store records of these tasks (core.task_mirror): owner = the session id
CODEC = (lambda error: error.to_error(),
         lambda error: RpcError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message")), error.get("data")))


def render(task: TaskRecord) -> dict[str, Any]:
    body: dict[str, Any] = {"taskId": task.id, "status": task.status, "createdAt": task.created,
                            "lastUpdatedAt": task.updated, "ttl": task.ttl_ms, "pollInterval": POLL_MS}
    if task.message:
        body["statusMessage"] = task.message
    return body


def _announce(task: TaskRecord, snapshot: dict[str, Any]) -> None:
    """A transition, announced with notifications/tasks/status (optional in the spec)."""
    if task.notify is not None:
        try:
            task.notify(jsonrpc.notification("notifications/tasks/status", snapshot))
        except Exception as exc:  # the client went away: the task itself goes on
            logger().debug("could not announce task %s: %s", task.id, exc)


def _new_table(limits: TaskLimits | None) -> TaskTable:
    from mcp_agent_kit.core.task_table import DEFAULT_LIMITS, TaskTable

    return TaskTable(render, limits=DEFAULT_LIMITS if limits is None else limits, changed=_announce,
                     not_found=lambda task_id: RpcError(INVALID_PARAMS, "Failed to retrieve task: Task not found"))


def _may_run_as_task(registry: Any, tool: Any) -> bool:
    """core.task_table.policy_of(registry, tool) is not None, without importing the table."""
    return tool.long_running or tool.name in registry.task_policies


def offered(call: Call) -> bool:
    """2025-11-25 tasks apply: a handshake-era connection at that revision.
    (The connection's version, not the call's: during initialize the call predates it.)"""
    return call.era == LEGACY and call.conn.version >= SINCE


# ---- a task's worker ---------------------------------------------------------------------------
class _TaskOutbox:
    """A task's way to the client: the connection's outbox, each message tagged with the task."""

    def __init__(self, inner: Any, tasks: TaskTable, task: TaskRecord) -> None:
        self.inner = inner
        self.tasks = tasks
        self.task = task

    def _tag(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**params, "_meta": {**(params.get("_meta") or {}), RELATED_TASK: {"taskId": self.task.id}}}

    def notify(self, message: dict[str, Any]) -> None:
        if self.inner is not None:
            self.inner.notify({**message, "params": self._tag(message.get("params") or {})})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.inner is None:
            raise RpcError(INTERNAL_ERROR, "this connection cannot send requests to the client")
        self.tasks.move(self.task, "input_required")
        try:
            return dict(self.inner.request(method, self._tag(params)))
        finally:
            self.tasks.move(self.task, "working")


class _Hooks:
    """core.call.TaskHooks of a 2025-11-25 task: questions go through the tagged outbox as they are."""

    def broker(self, inner: InputBroker) -> InputBroker:
        return inner

    def detach(self) -> None:
        return None  # the task exists from the start


_HOOKS = _Hooks()


def _work(tasks: TaskTable, task: TaskRecord, call: Call, tool: Any, arguments: dict[str, Any]) -> None:
    if task.cancel.is_set():  # cancelled, expired or its session ended while it waited for a worker
        tasks.move(task, "cancelled")
        return
    try:
        result = methods.execute_tool(call, tool, arguments)
    except RpcError as exc:
        tasks.move(task, "failed", error=exc, message=exc.message)
        return
    except Exception as exc:  # execute_tool turns tool errors into results; this is our own bug
        tasks.move(task, "failed", error=RpcError.internal_error(f"{exc}"))
        return
    shaped = mcp.shape_legacy_result(result, call.version)
    failed = bool(shaped.get("isError"))
    tasks.move(task, "failed" if failed else "completed", result=shaped)


# ---- the extension -------------------------------------------------------------------------------
class LegacyTasksExtension(TaskMachinery):
    """2025-11-25 tasks on one dispatcher: one task table per connection, the tasks/* methods, the
    task-augmented tools/call, `execution.taskSupport` in tools/list and `capabilities.tasks`."""

    name = "legacy-tasks"

    def __init__(self, *, limits: TaskLimits | None = None, pool: WorkerPool | Lazy[WorkerPool] | None = None) -> None:
        """limits: core.task_table.DEFAULT_LIMITS when None; pool: its own (limits.workers threads)
        when None. Both are built when the first task needs them."""
        self.registry: Any = None
        self._table = Lazy(lambda: _new_table(limits))
        self.lazy_pool = self._pool_from(pool)

    def bind(self, registry: Registry) -> Contributions:
        self.registry = registry
        rows = (("tasks/get", self.tasks_get), ("tasks/cancel", self.tasks_cancel),
                ("tasks/result", self.tasks_result), ("tasks/list", self.tasks_list))
        return Contributions(
            methods={(name, LEGACY): Method(fn) for name, fn in rows},
            interceptors={LEGACY: self.intercept},
            annotators={LEGACY: self.annotate},
            capabilities={LEGACY: self.declare},
        )

    def close(self) -> None:
        return None

    def share(self, keeper: Keeper) -> None:
        """Keep the tasks of HTTP sessions (Connection.key) in the keeper's store too: any replica
        the session reaches can get, list, cancel and take the result of them."""
        from mcp_agent_kit.core.task_mirror import TaskMirror  # lazily: only replicas need it

        mirror = TaskMirror(keeper, KIND, lambda conn: conn.key, CODEC, on_cancel=lambda task: task.cancel.set())
        self.table.attach(mirror)

    def tasks_of(self, conn: Connection) -> list[TaskRecord]:
        """The connection's tasks, oldest first."""
        return self.table.owned_by(conn)

    def end_connection(self, conn: Connection) -> None:
        """The connection ended (session deleted, evicted or expired; stdio EOF): cancel and drop its tasks."""
        if not self._table.built:
            return  # no task was ever created here
        dropped = self.table.drop_owner(conn)
        if dropped:
            logger().debug("cancelled %d task(s) of a closed connection", len(dropped))

    def end_shared(self, conn: Connection) -> None:
        """The session was deleted: its unfinished tasks on other replicas end `cancelled` too."""
        mirror = self.table.mirror if self._table.built else None  # share() builds it, to attach its mirror
        if mirror is None:
            return
        from mcp_agent_kit.core.task_table import TERMINAL

        for task in mirror.owned(conn, self.table.limits.max_tasks):
            if task.status not in TERMINAL:
                mirror.request_cancel(task.id, "cancelled", "The task was cancelled: its session ended.")

    # ---- tools/call with params.task ----------------------------------------------------------
    def intercept(self, call: Call, tool: Any, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """A task-augmented tools/call of a 2025-11-25 connection."""
        registry = self.registry
        if not (registry.task_policies or tool.long_running or "task" in call.params) or not offered(call):
            return None
        from mcp_agent_kit.core.task_table import policy_of

        policy = policy_of(registry, tool)
        requested = call.params.get("task")
        if requested is None:
            if policy is not None and policy.required:
                raise RpcError.method_not_found(f"tool {tool.name!r} runs only as a task")
            return None
        if policy is None:
            raise RpcError.method_not_found(f"tool {tool.name!r} cannot run as a task")
        if not isinstance(requested, dict):
            raise RpcError.invalid_params('"task" must be an object')
        ttl = requested.get("ttl")
        if ttl is not None and (type(ttl) is not int or ttl < 0):
            raise RpcError.invalid_params('"task.ttl" must be a non-negative integer')
        limit = policy.ttl_ms
        ttl = limit if ttl is None else (ttl if limit is None else min(ttl, limit))
        tasks = self.table
        task = tasks.create(call.conn, ttl, call.conn.principal, notify=None if call.out is None else call.out.notify)
        work = call._replace(out=_TaskOutbox(call.out, tasks, task), cancel=task.cancel, task=_HOOKS)
        created = {"task": tasks.snapshot(task)}  # before the worker starts: the task is still working
        self.pool.submit(lambda: _work(tasks, task, work, tool, arguments))  # queued: still `working`
        return created

    def annotate(self, call: Call, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`execution.taskSupport` on task-capable tools (2025-11-25)."""
        if not offered(call):
            return tools
        registry = self.registry
        definitions = [registry.get_tool(tool["name"]) for tool in tools]
        if not any(definition is not None and _may_run_as_task(registry, definition) for definition in definitions):
            return tools  # no task-capable tool on this page
        from mcp_agent_kit.core.task_table import policy_of

        annotated = []
        for tool, definition in zip(tools, definitions, strict=True):
            policy = policy_of(registry, definition) if definition is not None else None
            if policy is not None:
                tool = {**tool, "execution": {"taskSupport": "required" if policy.required else "optional"}}
            annotated.append(tool)
        return annotated

    def declare(self, version: str, capabilities: dict[str, Any]) -> None:
        """initialize declares tasks at 2025-11-25 and later, when some tool can run as one."""
        registry = self.registry
        if version >= SINCE and any(_may_run_as_task(registry, tool) for tool in registry.listing("tools")):
            capabilities["tasks"] = mcp.legacy_tasks_capability()

    # ---- tasks/* --------------------------------------------------------------------------------
    def _task(self, call: Call) -> tuple[TaskTable, TaskRecord]:
        if not offered(call):
            raise RpcError.method_not_found(call.method)
        return self.table, self.table.find(call.params.get("taskId"), call.conn)

    def tasks_get(self, call: Call) -> dict[str, Any]:
        tasks, task = self._task(call)
        return tasks.snapshot(task)

    def tasks_result(self, call: Call) -> dict[str, Any]:
        tasks, task = self._task(call)
        if task.remote:
            task = self._remote_end(task, call)
        elif not tasks.wait_end(task, call.cancel):
            raise RpcError.internal_error("the request was cancelled")
        if task.error is not None:
            raise task.error
        if task.result is None:  # cancelled before it produced anything
            raise RpcError.internal_error("the task was cancelled")
        meta = {**(task.result.get("_meta") or {}), RELATED_TASK: {"taskId": task.id}}
        return {**task.result, "_meta": meta}

    def _remote_end(self, task: TaskRecord, call: Call) -> TaskRecord:
        """Wait for a task another replica runs to end, reading the store (each POLL_S at most)."""
        from mcp_agent_kit.core.task_mirror import POLL_S
        from mcp_agent_kit.core.task_table import TERMINAL

        cancel = call.cancel if call.cancel is not None else threading.Event()
        while task.status not in TERMINAL:
            if cancel.wait(POLL_S / 2):
                raise RpcError.internal_error("the request was cancelled")
            task = self.table.find(task.id, call.conn)
        return task

    def tasks_list(self, call: Call) -> dict[str, Any]:
        if not offered(call):
            raise RpcError.method_not_found(call.method)
        listed = self.table.owned_by(call.conn)
        start = methods.page_offset("tasks", call.params.get("cursor"), len(listed))
        result: dict[str, Any] = {"tasks": [render(task) for task in listed[start : start + PAGE_SIZE]]}
        if start + PAGE_SIZE < len(listed):
            result["nextCursor"] = methods.page_cursor("tasks", start + PAGE_SIZE)
        return result

    def tasks_cancel(self, call: Call) -> dict[str, Any]:
        from mcp_agent_kit.core.task_table import TERMINAL

        tasks, task = self._task(call)
        if task.remote:
            ended = tasks.mirror.request_cancel(task.id, "cancelled", "The task was cancelled by request.")
            if ended is None:
                found = tasks.find(task.id, call.conn)
                raise RpcError(INVALID_PARAMS, f"Cannot cancel task: it is already {found.status}")
            return render(tasks.mirror.restore(ended, call.conn))
        with tasks.lock:
            if task.status in TERMINAL:
                raise RpcError(INVALID_PARAMS, f"Cannot cancel task: it is already {task.status}")
            tasks.move(task, "cancelled", message="The task was cancelled by request.")
        task.cancel.set()
        return render(task)
