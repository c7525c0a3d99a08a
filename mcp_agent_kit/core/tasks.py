"""tasks: the tasks extension `io.modelcontextprotocol/tasks` (SEP-2663, digest §7).

A task-capable tool called by a client that declares the extension on that request answers
at once with a CreateTaskResult; the tool keeps running on a worker thread, and the client
polls `tasks/get`, answers the tool's questions with `tasks/update` and asks for cooperative
cancellation with `tasks/cancel`. A tool may also run an MRTR prelude first and detach later
with `start_task(ctx)`. Rules: no sockets and no encoding — transports only call
`install(dispatcher)`; the status lifecycle is the TRANSITIONS table; task ids are random
UUIDs and a task is visible only to the principal that created it.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.core import listen, methods
from mcp_agent_kit.core.context import Context, InputBroker, capability_declared, required_capability
from mcp_agent_kit.core.dispatcher import MODERN, Dispatcher
from mcp_agent_kit.core.methods import Call
from mcp_agent_kit.core.registry import Registry
from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from concurrent.futures import Future

EXTENSION = mcp.TASKS_EXTENSION
REQUIRED: dict[str, Any] = {"extensions": {EXTENSION: {}}}
TERMINAL = frozenset({"completed", "failed", "cancelled"})
TRANSITIONS: dict[str, frozenset[str]] = {
    "working": frozenset({"input_required", "completed", "failed", "cancelled"}),
    "input_required": frozenset({"working", "completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}
DEFAULT_TTL_MS = 3_600_000
DEFAULT_POLL_MS = 500


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


# Keyed by id() with a finalizer, not a WeakKeyDictionary: policy_of runs on every tools/call,
# and a WeakKeyDictionary lookup builds a weak reference each time.
_policies: dict[int, dict[str, Policy]] = {}


def _keyed(table: dict[int, Any], owner: object, make: Any) -> Any:
    """table[id(owner)], created with make() and dropped when owner is collected."""
    found = table.get(id(owner))
    if found is None:
        found = table[id(owner)] = make()
        weakref.finalize(owner, table.pop, id(owner), None)
    return found


def task_tool(registry: Registry, name: str, *, required: bool = False, manual: bool = False,
              ttl_ms: int | None = DEFAULT_TTL_MS) -> None:
    """Make a registered tool task-capable (tools registered with `long_running=True` already are).

    required: a client without the extension gets -32021 instead of a synchronous run.
    manual: the tool runs synchronously (MRTR rounds included) until it calls `start_task(ctx)`.
    ttl_ms: how long the task is kept after creation (None: until the server stops).
    """
    _keyed(_policies, registry, dict)[name] = Policy(required=required, manual=manual, ttl_ms=ttl_ms)


def policy_of(registry: Registry, tool: Any) -> Policy | None:
    policies = _policies.get(id(registry))
    found = policies.get(tool.name) if policies is not None else None
    if found is None and getattr(tool, "long_running", False):
        return Policy()
    return found


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


def _now() -> str:
    from datetime import UTC, datetime  # lazily: tasks are rare, server start is not

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def transition(task: Any, status: str, fields: dict[str, Any]) -> bool:
    """Move a task (its store's lock held) along TRANSITIONS, setting fields; False if not allowed."""
    if status != task.status and status not in TRANSITIONS[task.status]:
        return False
    task.status = status
    for name, value in fields.items():
        setattr(task, name, value)
    task.updated = _now()
    return True


def drop_expired(table: dict[str, Any]) -> bool:
    """Forget the tasks (store lock held) whose ttl_ms has passed, asking their work to stop."""
    now = time.monotonic()
    expired = [t for t in table.values() if t.ttl_ms is not None and now - t.born > t.ttl_ms / 1000]
    for task in expired:
        del table[task.id]
        task.cancel.set()
    return bool(expired)


# ---- the task record and its store -----------------------------------------------------------------
class Task:
    """One task's state. Mutated only under its store's lock."""

    def __init__(self, principal: str | None, ttl_ms: int | None) -> None:
        import uuid

        self.id = str(uuid.uuid4())
        self.principal = principal
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = _now()
        self.born = time.monotonic()
        self.ttl_ms = ttl_ms
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.pending: dict[str, dict[str, Any]] = {}
        self.answers: dict[str, Any] = {}
        self.used_keys: set[str] = set()
        self.cancel = threading.Event()

    def wire(self, poll_ms: int) -> dict[str, Any]:
        """The Task fields, plus the status-specific ones (DetailedTask)."""
        body: dict[str, Any] = {
            "taskId": self.id, "status": self.status, "createdAt": self.created,
            "lastUpdatedAt": self.updated, "ttlMs": self.ttl_ms, "pollIntervalMs": poll_ms,
        }
        if self.message:
            body["statusMessage"] = self.message
        if self.status == "input_required":
            body["inputRequests"] = dict(self.pending)
        elif self.status == "completed" and self.result is not None:
            body["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            body["error"] = self.error
        return body


class Store:
    """The tasks of one dispatcher, with TTL expiry and change pushes to listen streams."""

    def __init__(self, dispatcher: Dispatcher, *, poll_ms: int = DEFAULT_POLL_MS, max_live: int = 10_000) -> None:
        self.dispatcher = dispatcher
        self.poll_ms = poll_ms
        self.max_live = max_live
        self.lock = threading.Condition()
        self._tasks: dict[str, Task] = {}

    def create(self, principal: str | None, ttl_ms: int | None) -> Task:
        self.sweep()
        task = Task(principal, ttl_ms)
        with self.lock:
            if len(self._tasks) >= self.max_live:
                raise RpcError(INTERNAL_ERROR, "Internal error: too many tasks; try again later")
            self._tasks[task.id] = task
        return task

    def find(self, task_id: Any, principal: str | None) -> Task:
        """The caller's task, or -32602 for unknown, expired or someone else's ids."""
        self.sweep()
        with self.lock:
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or task.principal != principal:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown task {task_id!r}")
        return task

    def sweep(self) -> None:
        with self.lock:
            if drop_expired(self._tasks):
                self.lock.notify_all()

    def move(self, task: Task, status: str, **fields: Any) -> bool:
        """Apply one transition from the table; False (and no change) when it is not allowed."""
        with self.lock:
            if not transition(task, status, fields):
                return False
            self.lock.notify_all()
            snapshot = task.wire(self.poll_ms)
        self._push(task, snapshot)
        return True

    def _push(self, task: Task, snapshot: dict[str, Any]) -> None:
        found = listen.hub(self.dispatcher)
        if found is None:
            return
        for sub in found.subscribers():
            if task.id in sub.task_ids and sub.principal == task.principal:
                sub.send("notifications/tasks", dict(snapshot))

    # ---- input_required ----------------------------------------------------------------------
    def ask(self, task: Task, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Park the task until every request is answered through tasks/update."""
        wire_keys: dict[str, str] = {}
        with self.lock:
            for key in requests:
                wire, n = key, 1
                while wire in task.used_keys:
                    n += 1
                    wire = f"{key}-{n}"
                task.used_keys.add(wire)
                wire_keys[key] = wire
            task.pending.update({wire_keys[key]: request for key, request in requests.items()})
        self.move(task, "input_required")
        with self.lock:
            while any(wire in task.pending for wire in wire_keys.values()):
                if task.cancel.is_set():
                    raise TaskCancelled()
                self.lock.wait(0.5)
            if task.cancel.is_set():
                raise TaskCancelled()
            answers = {key: task.answers.pop(wire) for key, wire in wire_keys.items()}
        return answers

    def answer(self, task: Task, responses: dict[str, Any]) -> None:
        with self.lock:
            for key, value in responses.items():
                if key in task.pending:  # unknown or already answered keys are ignored
                    del task.pending[key]
                    task.answers[key] = value
            resume = task.status == "input_required" and not task.pending
            self.lock.notify_all()
        if resume:
            self.move(task, "working")


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


class TaskCall(Call):
    """The Call a task's tool runs under: its own outbox, cancel flag and broker."""

    __slots__ = ("run",)

    def __init__(self, run: TaskRun) -> None:
        c = run.call
        super().__init__(
            c.dispatcher, c.conn, c.method, c.id, c.params, c.era, c.version, c.capabilities,
            c.client_info, _TaskOut(run), run.cancel, c.log_level, c.progress_token,
        )
        self.run = run

    def context(self, broker: InputBroker, state: dict[str, Any] | None = None) -> Context:
        ctx = super().context(_TaskBroker(self.run, broker), state)
        ctx._mcp_task_detach = self.run.detach  # type: ignore[attr-defined]  # read by start_task()
        return ctx


class TaskRun:
    """One tools/call that runs (or may come to run) as a task."""

    def __init__(self, store: Store, call: Call, tool: Any, arguments: dict[str, Any], policy: Policy) -> None:
        self.store = store
        self.call = call
        self.tool = tool
        self.arguments = arguments
        self.policy = policy
        self.task: Task | None = None
        self.cancel = threading.Event()
        from concurrent.futures import Future  # lazily: it imports logging, which a server start avoids

        self.first: Future[dict[str, Any]] = Future()
        self._lock = threading.Lock()

    def start(self) -> dict[str, Any]:
        if not self.policy.manual:
            self.detach()  # the task exists before the reply goes out
        threading.Thread(target=self._work, name=f"mcp-task-{self.tool.name}", daemon=True).start()
        request_cancel = self.call.cancel
        while True:
            try:
                return self.first.result(timeout=0.25)
            except TimeoutError:
                if request_cancel is not None and request_cancel.is_set() and self.task is None:
                    self.cancel.set()

    def detach(self) -> None:
        with self._lock:
            if self.task is not None:
                return
            task = self.store.create(self.call.conn.principal, self.policy.ttl_ms)
            task.cancel = self.cancel
            self.task = task
        if not self.first.done():
            self.first.set_result({"resultType": "task", **task.wire(self.store.poll_ms)})

    def _work(self) -> None:
        outcome: dict[str, Any] | None = None
        failure: RpcError | None = None
        try:
            outcome = methods.execute_tool(TaskCall(self), self.tool, self.arguments)
        except TaskCancelled:
            pass
        except RpcError as exc:
            failure = exc
        except Exception as exc:  # a tool crash outside execute_tool's own handling
            failure = RpcError(INTERNAL_ERROR, f"Internal error: {exc}")
        with self._lock:
            task = self.task
        if task is None:  # never detached: the tools/call answers synchronously
            if failure is not None:
                self.first.set_exception(failure)
            elif outcome is not None:
                self.first.set_result(outcome)
            else:
                self.first.set_exception(RpcError(INTERNAL_ERROR, "Internal error: the call was cancelled"))
            return
        if self.cancel.is_set():
            self.store.move(task, "cancelled", pending={})
        elif failure is not None:
            self.store.move(task, "failed", error=failure.to_error(), pending={})
        elif outcome is not None:
            self.store.move(task, "completed", result=outcome, pending={})


def run_tool(call: Call, tool: Any, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """methods.TOOL_RUNNERS hook: take over task-capable tools when the extension is declared
    (2026-07-28), or when a 2025-11-25 client asks for a task (core.legacy_tasks)."""
    if not (_policies or tool.long_running or "task" in call.params) or isinstance(call, TaskCall):
        return None  # the usual call: no task anywhere in sight
    if call.era != MODERN:
        from mcp_agent_kit.core import legacy_tasks

        return legacy_tasks.run_tool(call, tool, arguments)
    policy = policy_of(call.registry, tool)
    store = _stores.get(id(call.dispatcher))
    if policy is None or store is None:
        return None
    if not declared(call.capabilities):
        if policy.required:
            raise RpcError(mcp.MISSING_CAPABILITY, "Missing required client capability",
                           {"requiredCapabilities": REQUIRED})
        return None
    return TaskRun(store, call, tool, arguments, policy).start()


# ---- tasks/* methods ---------------------------------------------------------------------------
def _store(call: Call) -> Store:
    store = _stores.get(id(call.dispatcher))
    if store is None:
        raise RpcError(-32601, f"Method not found: {call.method}")
    return store


def tasks_get(call: Call) -> dict[str, Any]:
    store = _store(call)
    task = store.find(call.params.get("taskId"), call.conn.principal)
    with store.lock:
        return task.wire(store.poll_ms)


def tasks_update(call: Call) -> dict[str, Any]:
    store = _store(call)
    task = store.find(call.params.get("taskId"), call.conn.principal)
    responses = call.params.get("inputResponses")
    if not isinstance(responses, dict):
        raise RpcError(INVALID_PARAMS, 'Invalid params: tasks/update needs an "inputResponses" object')
    store.answer(task, responses)
    return {}


def tasks_cancel(call: Call) -> dict[str, Any]:
    store = _store(call)
    task = store.find(call.params.get("taskId"), call.conn.principal)
    if task.status not in TERMINAL:
        task.cancel.set()
        with store.lock:
            store.lock.notify_all()
    return {}


def _listen_task_ids(call: Call, sub: listen.Subscription, wanted: Any) -> Any:
    if not isinstance(wanted, list) or not all(isinstance(t, str) for t in wanted):
        raise RpcError(INVALID_PARAMS, 'Invalid params: "taskIds" must be an array of strings')
    if not declared(call.capabilities):
        return None
    sub.task_ids.update(wanted)
    return list(wanted)


_stores: dict[int, Store] = {}
_install_lock = threading.Lock()


def install(dispatcher: Dispatcher, **options: Any) -> Store:
    """Offer the tasks extension (and subscriptions/listen) on this dispatcher; idempotent."""
    hub = listen.install(dispatcher)
    hub.extras["taskIds"] = _listen_task_ids
    with _install_lock:
        store: Store = _keyed(_stores, dispatcher, lambda: Store(dispatcher, **options))
        dispatcher.features.add("tasks")
        if run_tool not in methods.TOOL_RUNNERS:
            methods.TOOL_RUNNERS.append(run_tool)
        for name, fn in (("tasks/get", tasks_get), ("tasks/update", tasks_update), ("tasks/cancel", tasks_cancel)):
            methods.METHODS.setdefault(name, methods.Method(fn, frozenset({MODERN}), None, REQUIRED))
    from mcp_agent_kit.core import legacy_tasks  # 2025-11-25's experimental tasks, for handshake-era clients

    legacy_tasks.install(dispatcher)
    return store
