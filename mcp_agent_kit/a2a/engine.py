"""engine: runs A2A tasks — creation, continuation, cancellation, listing and event fan-out.

An Agent decides what a message means (`accept`, which may refuse with an A2AError before any task
exists) and does the work through a Job on a bounded core.worker_pool.WorkerPool (`workers`
threads; more work waits in its queue, its task `submitted`), at most `max_running_per_owner`
jobs per principal at once (more are refused with an Internal error). Every state change passes the lifecycle
table; every event is published under one lock to each subscriber queue of its task, so all streams
of a task see the same events in the same order, and a task outlives its streams. Rules: no sockets,
no JSON encoding, no HTTP; results are plain ProtoJSON dicts.
"""

from __future__ import annotations

import copy
import logging
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from mcp_agent_kit.a2a import lifecycle, listing
from mcp_agent_kit.a2a.messages import agent_message, check_media_types, new_id, parse_message, text_part
from mcp_agent_kit.a2a.protocol import (
    CANCELED,
    COMPLETED,
    FAILED,
    INPUT_REQUIRED,
    SUBMITTED,
    WORKING,
    A2AError,
    now_iso,
)
from mcp_agent_kit.a2a.store import MemoryStore, StoreError, TaskStore, view
from mcp_agent_kit.core.worker_pool import DEFAULT_WORKERS, WorkerPool

log = logging.getLogger("mcp_agent_kit.a2a")
Event = dict[str, Any]
Work = Callable[["Job"], None]
_END: Event = {}
KEEPALIVE: Event = {}  # yielded by an open-ended stream that has been idle for KEEPALIVE_S
KEEPALIVE_S = 15.0
MAX_BEHIND = 1024  # events one subscriber may have unread; one more and its stream ends (memory stays bounded)
TOO_MANY = "Internal error: too many unfinished tasks for this principal; try again later"


class Agent:
    """What an A2A server does with messages. Subclass and override; `accept` returns the work."""

    name = "agent"
    description = "An A2A agent"
    version = "0.1.0"
    input_modes: tuple[str, ...] = ("text/plain", "application/json")
    output_modes: tuple[str, ...] = ("text/plain", "application/json")

    def skills(self) -> list[dict[str, Any]]:
        return []

    def extensions(self) -> list[dict[str, Any]]:
        return []

    def accepted_media_types(self) -> frozenset[str]:
        modes = set(self.input_modes)
        for skill in self.skills():
            modes.update(skill.get("inputModes", ()))
        return frozenset(mode.lower() for mode in modes)

    def accept(self, message: dict[str, Any], task: dict[str, Any] | None) -> Work:
        """Check a message (a new one, or one continuing `task`) and return the work to run."""
        raise A2AError("UnsupportedOperation", "this agent accepts no messages")


class Job:
    """The handle an agent's work uses to report on one message: statuses, artifacts, or a direct reply."""

    def __init__(
        self, engine: TaskEngine, message: dict[str, Any], owner: str, task_id: str | None, context_id: str
    ) -> None:
        self.engine = engine
        self.message = message
        self.owner = owner
        self.task_id = task_id
        self.context_id = context_id
        self.cancel = threading.Event()
        self.replied = False
        self.sink: queue.SimpleQueue[Event] = queue.SimpleQueue()

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    def status(self, state: str, parts: list[dict[str, Any]] | str | None = None, pending: Any = None) -> None:
        """Move the task to `state`, with an optional status message (text or parts)."""
        if isinstance(parts, str):
            parts = [text_part(parts)]
        self.engine._status(self, state, parts, pending)

    def working(self, text: str | None = None) -> None:
        self.status(WORKING, text)

    def complete(self, parts: list[dict[str, Any]] | str | None = None) -> None:
        self.status(COMPLETED, parts)

    def fail(self, parts: list[dict[str, Any]] | str) -> None:
        self.status(FAILED, parts)

    def ask(self, parts: list[dict[str, Any]] | str, pending: Any = None) -> None:
        """INPUT_REQUIRED with a question; `pending` is kept (privately) for the continuation."""
        self.status(INPUT_REQUIRED, parts, pending)

    def artifact(
        self,
        parts: list[dict[str, Any]],
        *,
        name: str | None = None,
        artifact_id: str | None = None,
        append: bool = False,
        last_chunk: bool = False,
        description: str | None = None,
    ) -> str:
        """Add an artifact (or, with append, more parts to an existing one); returns its id."""
        art: dict[str, Any] = {"artifactId": artifact_id or new_id()}
        if name:
            art["name"] = name
        if description:
            art["description"] = description
        art["parts"] = list(parts)
        self.engine._artifact(self, art, append, last_chunk)
        return str(art["artifactId"])

    def reply(self, parts: list[dict[str, Any]] | str) -> None:
        """Answer with a Message and no task (or complete the task with it if one exists already)."""
        if isinstance(parts, str):
            parts = [text_part(parts)]
        self.engine._reply(self, parts)


class TaskEngine:
    """Tasks for one agent over one store."""

    def __init__(self, agent: Agent, store: TaskStore | None = None, *, wait_timeout: float = 300.0,
                 workers: int = DEFAULT_WORKERS, max_running_per_owner: int = 1_000) -> None:
        self.agent = agent
        self.store: TaskStore = store if store is not None else MemoryStore()
        self.wait_timeout = wait_timeout
        self.pool = WorkerPool(workers, name="a2a-task")
        self.max_running_per_owner = max_running_per_owner
        self._running: dict[str, int] = {}  # owner -> jobs queued or running
        self._lock = threading.RLock()
        self._subs: dict[str, list[queue.SimpleQueue[Event]]] = {}
        self._jobs: dict[str, Job] = {}
        self._recover()

    # ---- public operations (called by the bindings) ------------------------------------------
    def send(self, owner: str, params: dict[str, Any], stream: bool = False) -> dict[str, Any] | Iterator[Event]:
        message = parse_message(params.get("message"))
        config = params.get("configuration")
        config = {} if config is None else config
        if not isinstance(config, dict):
            raise A2AError("InvalidParams", "Invalid params: configuration must be an object")
        immediate = _flag(config, "returnImmediately", "return_immediately")
        history_length = _count(config, "historyLength", "history_length")
        check_media_types(message, self.agent.accepted_media_types())
        with self._lock:
            if self._running.get(owner, 0) >= self.max_running_per_owner:
                raise A2AError("Internal", TOO_MANY)
            job, snapshot = self._open(owner, message)
            self._running[owner] = self._running.get(owner, 0) + 1
        try:
            work = self.agent.accept(message, snapshot)
            if job.task_id is not None:
                self._continue(job)
            elif immediate and not stream:
                self._create(job)
        except BaseException:
            with self._lock:
                self._ran(owner)
                if job.task_id is not None:
                    self._jobs.pop(job.task_id, None)
            raise
        self.pool.submit(lambda: self._run(job, work))  # waiting for a worker, the task stays submitted
        if stream:
            return self._drain(job.sink, job, lifecycle.is_final)
        return self._wait(job, immediate, history_length)

    def get(self, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        history_length = _count(params, "historyLength", "history_length")
        with self._lock:
            return view(self._owned(owner, params), history_length)

    def cancel(self, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            task = self._owned(owner, params)
            if task["status"]["state"] in lifecycle.TERMINAL:
                raise _ended("TaskNotCancelable", task)
            job = self._jobs.get(task["id"])
            if job is not None:
                job.cancel.set()
            self._move(task, CANCELED, None)
            return view(task)

    def subscribe(self, owner: str, params: dict[str, Any]) -> Iterator[Event]:
        sink: queue.SimpleQueue[Event] = queue.SimpleQueue()
        with self._lock:
            task = self._owned(owner, params)
            if task["status"]["state"] in lifecycle.TERMINAL:
                raise _ended("UnsupportedOperation", task)
            self._subs.setdefault(task["id"], []).append(sink)
            sink.put({"task": view(task)})
        return self._drain(sink, None, lambda state: state in lifecycle.TERMINAL, task["id"])

    def list_tasks(self, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return listing.list_tasks(self.store, owner, params)

    def wait_idle(self, task_id: str, timeout: float = 10.0) -> None:
        """Tests: wait until no job runs for this task."""
        deadline = time.monotonic() + timeout
        while task_id in self._jobs and time.monotonic() < deadline:
            time.sleep(0.01)

    # ---- task creation and continuation -----------------------------------------------------------
    def _open(self, owner: str, message: dict[str, Any]) -> tuple[Job, dict[str, Any] | None]:
        task_id = message.get("taskId")
        if task_id is None:
            return Job(self, message, owner, None, message.get("contextId") or new_id()), None
        with self._lock:
            task = self._owned(owner, {"id": task_id}, "message.taskId")
            state = task["status"]["state"]
            if state in lifecycle.TERMINAL:
                raise A2AError(
                    "UnsupportedOperation", f"Task {task_id} is in terminal state: {state}", {"taskId": task_id}
                )
            if task_id in self._jobs or state not in lifecycle.INTERRUPTED:
                raise A2AError(
                    "UnsupportedOperation",
                    f"Task {task_id} is still working ({state}); wait for it to ask for input",
                    {"taskId": task_id},
                )
            context = message.get("contextId")
            if context is not None and context != task["contextId"]:
                raise A2AError(
                    "InvalidParams",
                    f"Invalid params: message.contextId does not match task {task_id}",
                    violations=[("message.contextId", f"task {task_id} belongs to another context")],
                )
            job = Job(self, message, owner, task_id, task["contextId"])
            self._jobs[task_id] = job
            return job, copy.deepcopy(task)

    def _continue(self, job: Job) -> None:
        with self._lock:
            task = self._load(str(job.task_id))
            job.message.update(taskId=task["id"], contextId=task["contextId"])
            task["history"] = [*task.get("history", []), job.message]
            self.store.save(task)
            self._subs.setdefault(task["id"], []).append(job.sink)
            job.sink.put({"task": view(task)})

    def _create(self, job: Job) -> dict[str, Any]:
        """The job's task, created SUBMITTED on first use (caller holds the lock or is the only user)."""
        with self._lock:
            if job.task_id is not None:
                return self._load(job.task_id)
            task_id = new_id()
            job.message.update(taskId=task_id, contextId=job.context_id)
            task: dict[str, Any] = {
                "id": task_id,
                "contextId": job.context_id,
                "status": {"state": SUBMITTED, "timestamp": now_iso()},
                "history": [job.message],
                "_owner": job.owner,
            }
            try:
                self.store.insert(task)
            except StoreError as exc:
                raise A2AError("Internal", f"Internal error: {exc}") from exc
            job.task_id = task_id
            self._jobs[task_id] = job
            self._subs[task_id] = [job.sink]
            job.sink.put({"task": view(task)})
            return task

    # ---- job callbacks ------------------------------------------------------------------------------
    def _status(self, job: Job, state: str, parts: list[dict[str, Any]] | None, pending: Any) -> None:
        with self._lock:
            task = self._create(job)
            if job.cancelled and task["status"]["state"] == CANCELED:
                return  # the client canceled; late reports from the work are dropped
            if pending is not None:
                task["_pending"] = pending
            elif state not in lifecycle.INTERRUPTED:
                task.pop("_pending", None)
            self._move(task, state, parts)

    def _artifact(self, job: Job, art: dict[str, Any], append: bool, last_chunk: bool) -> None:
        with self._lock:
            task = self._create(job)
            if task["status"]["state"] in lifecycle.TERMINAL:
                if job.cancelled:
                    return
                raise lifecycle.IllegalTransition(f"task {task['id']} is finished; no more artifacts")
            artifacts = task.setdefault("artifacts", [])
            index = next((i for i, a in enumerate(artifacts) if a["artifactId"] == art["artifactId"]), None)
            if index is None:
                artifacts.append(art)
            elif append:
                artifacts[index] = dict(artifacts[index], parts=[*artifacts[index]["parts"], *art["parts"]])
            else:
                artifacts[index] = art
            self.store.save(task)
            update: dict[str, Any] = {"taskId": task["id"], "contextId": task["contextId"], "artifact": dict(art)}
            if append:
                update["append"] = True
            if last_chunk:
                update["lastChunk"] = True
            self._publish(task["id"], {"artifactUpdate": update})

    def _reply(self, job: Job, parts: list[dict[str, Any]]) -> None:
        with self._lock:
            if job.task_id is not None:
                self._status(job, COMPLETED, parts, None)
                return
            job.replied = True
            job.sink.put({"message": agent_message(parts, job.context_id)})

    def _move(self, task: dict[str, Any], state: str, parts: list[dict[str, Any]] | None) -> None:
        """Apply one transition (lock held), save, and publish the status update."""
        lifecycle.advance(task["status"]["state"], state)
        status: dict[str, Any] = {"state": state}
        if parts:
            msg = agent_message(parts, task["contextId"], task["id"])
            status["message"] = msg
            task["history"] = [*task.get("history", []), msg]
        status["timestamp"] = now_iso()
        task["status"] = status
        self.store.save(task)
        self._publish(
            task["id"], {"statusUpdate": {"taskId": task["id"], "contextId": task["contextId"], "status": status}}
        )
        if state in lifecycle.TERMINAL:
            self._subs.pop(task["id"], None)

    def _publish(self, task_id: str, event: Event) -> None:
        subs = self._subs.get(task_id)
        if not subs:
            return
        for sink in list(subs):
            if sink.qsize() >= MAX_BEHIND:  # a stalled consumer: end its stream rather than grow without bound
                subs.remove(sink)
                sink.put(_END)
                continue
            sink.put(event)

    # ---- running and waiting ----------------------------------------------------------------------
    def _run(self, job: Job, work: Work) -> None:
        try:
            work(job)
        except Exception as exc:
            log.warning("agent work raised %s: %s", type(exc).__name__, exc)
            self._finish(job, f"The agent failed: {exc or type(exc).__name__}")
        else:
            self._finish(job, "The agent stopped without finishing the task")
        finally:
            with self._lock:
                self._ran(job.owner)
                if job.task_id is not None and self._jobs.get(job.task_id) is job:
                    del self._jobs[job.task_id]
            job.sink.put(_END)

    def _ran(self, owner: str) -> None:
        """One of the owner's jobs ended (lock held)."""
        left = self._running.get(owner, 1) - 1
        if left:
            self._running[owner] = left
        else:
            self._running.pop(owner, None)

    def _finish(self, job: Job, why: str) -> None:
        with self._lock:
            if job.replied:
                return
            task = self._create(job)
            if not lifecycle.is_final(task["status"]["state"]):
                self._move(task, FAILED, [text_part(why)])

    def _drain(
        self,
        sink: queue.SimpleQueue[Event],
        job: Job | None,
        done: Callable[[str], bool],
        task_id: str | None = None,
        timeout: float | None = None,
    ) -> Generator[Event, None, None]:
        """Events from one subscriber queue until a status update `done` accepts (or the job ends)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                try:
                    event = sink.get(timeout=KEEPALIVE_S if deadline is None else max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    if deadline is None:
                        # Let the transport write a keep-alive: a client that went away is then
                        # noticed, and this thread does not wait for ever on an idle task.
                        yield KEEPALIVE
                        continue
                    return
                if event is _END:
                    return
                yield event
                if "message" in event:
                    return
                update = event.get("statusUpdate")
                if update is not None and done(update["status"]["state"]):
                    return
        finally:
            with self._lock:
                tid = job.task_id if job is not None else task_id
                subs = self._subs.get(tid or "")
                if subs is not None and sink in subs:
                    subs.remove(sink)

    def _wait(self, job: Job, immediate: bool, history_length: int | None) -> dict[str, Any]:
        events = self._drain(job.sink, job, lifecycle.is_final, timeout=self.wait_timeout)
        try:
            for event in events:
                if "message" in event:
                    return {"message": event["message"]}
                if immediate:
                    break
        finally:
            events.close()
        with self._lock:
            return {"task": view(self._load(str(job.task_id)), history_length)}

    # ---- helpers ----------------------------------------------------------------------------------
    def _load(self, task_id: str) -> dict[str, Any]:
        task = self.store.get(task_id)
        if task is None:
            raise A2AError("TaskNotFound", f"Task {task_id} not found", {"taskId": task_id})
        return task

    def _owned(self, owner: str, params: dict[str, Any], field: str = "id") -> dict[str, Any]:
        task_id = params.get("id")
        if not isinstance(task_id, str) or not task_id:
            raise A2AError(
                "InvalidParams",
                f"Invalid params: {field} must be a non-empty string",
                violations=[(field, "must be a non-empty string")],
            )
        with self._lock:
            task = self.store.get(task_id)
            if task is None or task.get("_owner", "") != owner:
                raise A2AError("TaskNotFound", f"Task {task_id} not found", {"taskId": task_id})
            return task

    def _recover(self) -> None:
        """After a restart no work is running: tasks caught mid-run fail; interrupted ones wait on."""
        with self._lock:
            for task in self.store.unfinished():
                if task["status"]["state"] not in lifecycle.INTERRUPTED:
                    self._move(task, FAILED, [text_part("The server restarted while this task was running")])


def _flag(obj: dict[str, Any], *names: str) -> bool:
    for name in names:
        value = obj.get(name)
        if value is not None:
            if not isinstance(value, bool):
                raise A2AError(
                    "InvalidParams",
                    f"Invalid params: {name} must be a boolean",
                    violations=[(name, "must be a boolean")],
                )
            return value
    return False


def _count(obj: dict[str, Any], *names: str) -> int | None:
    for name in names:
        value = obj.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise A2AError(
                    "InvalidParams",
                    f"Invalid params: {name} must be a non-negative integer",
                    violations=[(name, "must be a non-negative integer")],
                )
            return value
    return None


def _ended(kind: str, task: dict[str, Any]) -> A2AError:
    """The error for an operation a task in a terminal state no longer allows."""
    state = task["status"]["state"]
    return A2AError(kind, f"Task {task['id']} is in terminal state {state}", {"taskId": task["id"]})
