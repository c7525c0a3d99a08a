"""legacy_tasks: the experimental tasks of 2025-11-25 for handshake-era connections (SEP-1686).

On a connection that negotiated 2025-11-25, a `tools/call` with `params.task` for a task-capable
tool (`task_tool(...)` or `long_running=True`) answers at once with `CreateTaskResult {task}`
while the tool runs on a worker thread. The client polls `tasks/get`, takes the outcome with
`tasks/result` (it blocks until the task ends and returns exactly what `tools/call` would have),
pages through `tasks/list` and stops a task with `tasks/cancel`. A running task's questions go to
the client as server→client requests tagged `io.modelcontextprotocol/related-task`, the task
showing `input_required` meanwhile. Rules: no sockets; tasks belong to the connection (stdio
stream or HTTP session) that created them; statuses move only along core.tasks.TRANSITIONS; the
2026-07-28 tasks extension (core.tasks) is untouched.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core import methods
from mcp_agent_kit.core.dispatcher import LEGACY, MODERN, Connection, Dispatcher
from mcp_agent_kit.core.methods import Call
from mcp_agent_kit.core.tasks import TERMINAL, _now, drop_expired, policy_of, transition
from mcp_agent_kit.logs import logger
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RpcError

SINCE = mcp.LEGACY_TASKS_SINCE
RELATED_TASK = "io.modelcontextprotocol/related-task"
POLL_MS = 500
PAGE_SIZE = 50
MAX_TASKS = 1000  # per connection


class LegacyTask:
    """One task's state; changed only under its connection's Tasks lock."""

    def __init__(self, ttl: int | None) -> None:
        import uuid  # lazily: uuid costs ~1.5 ms at server start, and tasks are rare

        self.id = str(uuid.uuid4())
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = _now()
        self.born = time.monotonic()
        self.ttl_ms = ttl
        self.result: dict[str, Any] | None = None
        self.error: RpcError | None = None
        self.cancel = threading.Event()
        self.notify: Callable[[dict[str, Any]], None] | None = None  # where status changes are announced

    def wire(self) -> dict[str, Any]:
        body: dict[str, Any] = {"taskId": self.id, "status": self.status, "createdAt": self.created,
                                "lastUpdatedAt": self.updated, "ttl": self.ttl_ms, "pollInterval": POLL_MS}
        if self.message:
            body["statusMessage"] = self.message
        return body


class Tasks:
    """The tasks of one handshake-era connection."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self._tasks: dict[str, LegacyTask] = {}

    def create(self, ttl: int | None) -> LegacyTask:
        self.sweep()
        task = LegacyTask(ttl)
        with self.lock:
            if len(self._tasks) >= MAX_TASKS:
                raise RpcError(INTERNAL_ERROR, "Internal error: too many tasks on this connection")
            self._tasks[task.id] = task
        return task

    def find(self, task_id: Any) -> LegacyTask:
        self.sweep()
        with self.lock:
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise RpcError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return task

    def all(self) -> list[LegacyTask]:
        self.sweep()
        with self.lock:
            return list(self._tasks.values())

    def sweep(self) -> None:
        with self.lock:
            if drop_expired(self._tasks):
                self.lock.notify_all()

    def move(self, task: LegacyTask, status: str, **fields: Any) -> bool:
        """A transition; announced with notifications/tasks/status (optional in the spec)."""
        with self.lock:
            if not transition(task, status, fields):
                return False
            self.lock.notify_all()
            snapshot = task.wire()
        if task.notify is not None:
            try:
                task.notify(jsonrpc.notification("notifications/tasks/status", snapshot))
            except Exception as exc:  # the client went away: the task itself goes on
                logger().debug("could not announce task %s: %s", task.id, exc)
        return True

    def wait_end(self, task: LegacyTask, cancel: threading.Event | None) -> bool:
        """Block until the task ends; False if the waiting request was cancelled first."""
        with self.lock:
            while task.status not in TERMINAL:
                if cancel is not None and cancel.is_set():
                    return False
                self.lock.wait(0.25)
            return True


_create_lock = threading.Lock()


def tasks_of(conn: Connection) -> Tasks:
    with _create_lock:
        found: Tasks | None = conn.legacy_tasks
        if found is None:
            found = conn.legacy_tasks = Tasks()
        return found


def offered(call: Call) -> bool:
    """2025-11-25 tasks apply: a handshake-era connection at that revision, tasks installed.
    (The connection's version, not the call's: during initialize the call predates it.)"""
    return call.era == LEGACY and call.conn.version >= SINCE and "tasks" in call.dispatcher.features


# ---- tools/call with params.task ------------------------------------------------------------------
class _TaskOutbox:
    """A task's way to the client: the connection's outbox, each message tagged with the task."""

    def __init__(self, inner: Any, tasks: Tasks, task: LegacyTask) -> None:
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


class _TaskCall(Call):
    __slots__ = ()


def run_tool(call: Call, tool: Any, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """A task-augmented tools/call of a 2025-11-25 connection (called by core.tasks.run_tool)."""
    if isinstance(call, _TaskCall) or not offered(call):
        return None
    policy = policy_of(call.registry, tool)
    requested = call.params.get("task")
    if requested is None:
        if policy is not None and policy.required:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: tool {tool.name!r} runs only as a task")
        return None
    if policy is None:
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: tool {tool.name!r} cannot run as a task")
    if not isinstance(requested, dict):
        raise RpcError(INVALID_PARAMS, 'Invalid params: "task" must be an object')
    ttl = requested.get("ttl")
    if ttl is not None and (type(ttl) is not int or ttl < 0):
        raise RpcError(INVALID_PARAMS, 'Invalid params: "task.ttl" must be a non-negative integer')
    limit = policy.ttl_ms
    ttl = limit if ttl is None else (ttl if limit is None else min(ttl, limit))
    tasks = tasks_of(call.conn)
    task = tasks.create(ttl)
    if call.out is not None:
        task.notify = call.out.notify
    work = _TaskCall(
        call.dispatcher, call.conn, call.method, call.id, call.params, call.era, call.version,
        call.capabilities, call.client_info, _TaskOutbox(call.out, tasks, task), task.cancel, call.log_level,
        call.progress_token,
    )
    threading.Thread(target=_work, args=(tasks, task, work, tool, arguments), name=f"mcp-task-{tool.name}",
                     daemon=True).start()
    return {"task": task.wire()}


def _work(tasks: Tasks, task: LegacyTask, call: Call, tool: Any, arguments: dict[str, Any]) -> None:
    try:
        result = methods.execute_tool(call, tool, arguments)
    except RpcError as exc:
        tasks.move(task, "failed", error=exc, message=exc.message)
        return
    except Exception as exc:  # execute_tool turns tool errors into results; this is our own bug
        tasks.move(task, "failed", error=RpcError(INTERNAL_ERROR, f"Internal error: {exc}"))
        return
    shaped = mcp.shape_legacy_result(result, call.version)
    failed = bool(shaped.get("isError"))
    tasks.move(task, "failed" if failed else "completed", result=shaped)


# ---- tasks/* ------------------------------------------------------------------------------------------
def _task(call: Call) -> tuple[Tasks, LegacyTask]:
    if not offered(call):
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {call.method}")
    tasks = tasks_of(call.conn)
    return tasks, tasks.find(call.params.get("taskId"))


def tasks_get(call: Call) -> dict[str, Any]:
    return _task(call)[1].wire()


def tasks_result(call: Call) -> dict[str, Any]:
    tasks, task = _task(call)
    if not tasks.wait_end(task, call.cancel):
        raise RpcError(INTERNAL_ERROR, "Internal error: the request was cancelled")
    if task.error is not None:
        raise task.error
    if task.result is None:  # cancelled before it produced anything
        raise RpcError(INTERNAL_ERROR, "Internal error: the task was cancelled")
    meta = {**(task.result.get("_meta") or {}), RELATED_TASK: {"taskId": task.id}}
    return {**task.result, "_meta": meta}


def tasks_list(call: Call) -> dict[str, Any]:
    if not offered(call):
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {call.method}")
    listed = tasks_of(call.conn).all()
    start = methods._offset("tasks", call.params.get("cursor"), len(listed))
    result: dict[str, Any] = {"tasks": [task.wire() for task in listed[start : start + PAGE_SIZE]]}
    if start + PAGE_SIZE < len(listed):
        result["nextCursor"] = methods._cursor("tasks", start + PAGE_SIZE)
    return result


def tasks_cancel(call: Call) -> dict[str, Any]:
    tasks, task = _task(call)
    with tasks.lock:
        if task.status in TERMINAL:
            raise RpcError(INVALID_PARAMS, f"Cannot cancel task: it is already {task.status}")
        tasks.move(task, "cancelled", message="The task was cancelled by request.")
    task.cancel.set()
    return task.wire()


def _annotate(call: Call, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """methods.TOOL_ANNOTATORS hook: `execution.taskSupport` on task-capable tools (2025-11-25)."""
    if not offered(call):
        return tools
    registry = call.registry
    annotated = []
    for tool in tools:
        definition = registry.get_tool(tool["name"])
        policy = policy_of(registry, definition) if definition is not None else None
        if policy is not None:
            tool = {**tool, "execution": {"taskSupport": "required" if policy.required else "optional"}}
        annotated.append(tool)
    return annotated


def _by_era(modern: Callable[[Call], dict[str, Any]], legacy: Callable[[Call], dict[str, Any]]) -> Any:
    def either(call: Call) -> dict[str, Any]:
        return modern(call) if call.era == MODERN else legacy(call)

    either.legacy_tasks = True  # type: ignore[attr-defined]
    return either


def _declare(call: Call, capabilities: dict[str, Any]) -> None:
    """methods.LEGACY_CAPABILITIES hook: declare tasks when some tool can run as one."""
    if offered(call) and any(policy_of(call.registry, tool) is not None for tool in call.registry.listing("tools")):
        capabilities["tasks"] = mcp.legacy_tasks_capability()


def install(dispatcher: Dispatcher) -> None:
    """Offer 2025-11-25 tasks next to the modern extension (called by core.tasks.install)."""
    both = frozenset({MODERN, LEGACY})
    table = methods.METHODS
    with _create_lock:
        if _declare not in methods.LEGACY_CAPABILITIES:
            methods.LEGACY_CAPABILITIES.append(_declare)
        if _annotate not in methods.TOOL_ANNOTATORS:
            methods.TOOL_ANNOTATORS.append(_annotate)
        for name, fn in (("tasks/get", tasks_get), ("tasks/cancel", tasks_cancel)):
            entry = table[name]
            if not getattr(entry.fn, "legacy_tasks", False):
                table[name] = methods.Method(_by_era(entry.fn, fn), both, entry.needs, entry.client_needs)
        for name, fn in (("tasks/result", tasks_result), ("tasks/list", tasks_list)):
            table.setdefault(name, methods.Method(fn, frozenset({LEGACY})))
