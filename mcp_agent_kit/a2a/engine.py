"""engine: runs A2A tasks — creation, continuation, cancellation, listing and event fan-out.

An Agent (a2a.job) decides what a message means (`accept`, which may refuse with an A2AError before any task
exists) and does the work through a Job on a bounded core.worker_pool.WorkerPool (`workers`
threads; more work waits in its queue, its task `submitted`), at most `max_running_per_owner`
jobs per principal at once (more are refused with an Internal error). Every state change passes the lifecycle
table; every event is published under one lock to each subscriber queue of its task, so all streams
of a task see the same events in the same order, and a task outlives its streams. Tasks live in
one repository (a2a.store.TaskStore) on any store.Store; how far they are shared is a strategy
picked once: a TaskStore with a replica id gets a2a.replication (idempotency claims, event logs
every replica tails, leases), one without (the in-memory default) gets OneProcess, where all of
that is a no-op and a restart fails the tasks caught mid-run. Rules: no sockets, no JSON
encoding, no HTTP; results are plain ProtoJSON dicts; a task read from the store is changed only
by assigning new values to its top-level keys (store bodies are immutable).
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
from mcp_agent_kit.a2a.job import Agent, Event, Job, Work
from mcp_agent_kit.a2a.messages import (
    agent_message,
    check_media_types,
    count_param,
    flag_param,
    new_id,
    parse_message,
    text_part,
)
from mcp_agent_kit.a2a.protocol import CANCELED, COMPLETED, FAILED, SUBMITTED, A2AError, now_iso
from mcp_agent_kit.a2a.replication import LAPSED, OneProcess, Replication
from mcp_agent_kit.a2a.store import Conflict, TaskStore, view
from mcp_agent_kit.core.worker_pool import DEFAULT_WORKERS, WorkerPool
from mcp_agent_kit.store.base import StoreError

__all__ = ["KEEPALIVE", "MAX_BEHIND", "Agent", "Job", "TaskEngine", "Work"]
log = logging.getLogger("mcp_agent_kit.a2a")
_END: Event = {}
KEEPALIVE: Event = {}  # yielded by an open-ended stream that has been idle for KEEPALIVE_S
KEEPALIVE_S = 15.0
MAX_BEHIND = 1024  # events one subscriber may have unread; one more and its stream ends (memory stays bounded)
TOO_MANY = "too many unfinished tasks for this principal; try again later"
CAS_TRIES = 20  # compare-and-set rounds against other replicas' writes before giving up


class TaskEngine:
    """Tasks for one agent over one store."""

    def __init__(self, agent: Agent, store: TaskStore | None = None, *, wait_timeout: float = 300.0,
                 workers: int = DEFAULT_WORKERS, max_running_per_owner: int = 1_000) -> None:
        self.agent = agent
        self.store = store if store is not None else TaskStore()
        self.wait_timeout = wait_timeout
        self.pool = WorkerPool(workers, name="a2a-task")
        self.max_running_per_owner = max_running_per_owner
        self._running: dict[str, int] = {}  # owner -> jobs queued or running
        self._lock = threading.RLock()
        self._subs: dict[str, list[queue.SimpleQueue[Event]]] = {}
        self._jobs: dict[str, Job] = {}
        self._latest: dict[str, dict[str, Any]] = {}  # task id -> as this engine last wrote it, while its job runs
        self.replicas: Replication | OneProcess
        if self.store.replica:  # other processes serve these tasks too
            self.store.lease_to(self._jobs)
            self.replicas = Replication(self.store, self._cancels, self._lapsed)
        else:
            self.replicas = OneProcess()
            self._recover()

    def close(self) -> None:
        """Stop the lease thread (on a shared store) and close the store."""
        self.replicas.close()
        self.store.close()

    # ---- public operations (called by the bindings) ------------------------------------------
    def send(self, owner: str, params: dict[str, Any], stream: bool = False) -> dict[str, Any] | Iterator[Event]:
        message = parse_message(params.get("message"))
        config = params.get("configuration")
        config = {} if config is None else config
        if not isinstance(config, dict):
            raise A2AError("InvalidParams", detail="configuration must be an object")
        immediate = flag_param(config, "returnImmediately", "return_immediately")
        history_length = count_param(config, "historyLength", "history_length")
        check_media_types(message, self.agent.accepted_media_types())
        if not self.replicas.claim(owner, message["messageId"]):
            return self._again(owner, message["messageId"], stream, immediate, history_length)
        try:
            with self._lock:
                if self._running.get(owner, 0) >= self.max_running_per_owner:
                    raise A2AError("Internal", detail=TOO_MANY)
                job, snapshot = self._open(owner, message)
                self._running[owner] = self._running.get(owner, 0) + 1
        except BaseException:
            self.replicas.unclaim(owner, message["messageId"])
            raise
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
                    self._latest.pop(job.task_id, None)
            self.replicas.unclaim(owner, message["messageId"])
            raise
        self.pool.submit(lambda: self._run(job, work))  # waiting for a worker, the task stays submitted
        if stream:
            return self._drain(job.sink, job, lifecycle.is_final)
        return self._wait(job, immediate, history_length)

    def get(self, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        history_length = count_param(params, "historyLength", "history_length")
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
            canceled = self._move(task, CANCELED, None)
            if canceled is None:  # another replica finished it first
                raise _ended("TaskNotCancelable", self._load(task["id"]))
            return view(canceled)

    def subscribe(self, owner: str, params: dict[str, Any]) -> Iterator[Event]:
        sink: queue.SimpleQueue[Event] = queue.SimpleQueue()
        with self._lock:
            task = self._owned(owner, params)
            if task["status"]["state"] in lifecycle.TERMINAL:
                raise _ended("UnsupportedOperation", task)
            if self.replicas.shared:
                return self._tail(task, lambda state: state in lifecycle.TERMINAL)
            self._subs.setdefault(task["id"], []).append(sink)
            sink.put({"task": view(task)})
        return self._drain(sink, None, lambda state: state in lifecycle.TERMINAL, task["id"])

    def _tail(self, task: dict[str, Any], done: Callable[[str], bool], timeout: float | None = None,
              history_length: int | None = None) -> Iterator[Event]:
        """Shared store: the task as read, then its logged events from any replica (see replication)."""
        assert isinstance(self.replicas, Replication)
        events = self.replicas.tail(task["id"], task.get("_events", 0), done, KEEPALIVE_S, timeout)

        def stream() -> Generator[Event, None, None]:
            yield {"task": view(task, history_length)}
            for event in events:
                yield KEEPALIVE if event is None else event
        return stream()

    def _again(self, owner: str, message_id: str, stream: bool, immediate: bool,
               history_length: int | None) -> dict[str, Any] | Iterator[Event]:
        """A message some replica received before (same messageId): its outcome, never a second run."""
        assert isinstance(self.replicas, Replication)
        outcome = self.replicas.outcome(owner, message_id, self.wait_timeout)
        if outcome is None:
            raise A2AError("Internal", detail=f"message {message_id} is still being accepted; retry later")
        if "message" in outcome:
            return iter([{"message": outcome["message"]}]) if stream else {"message": outcome["message"]}
        task = self._owned(owner, {"id": outcome["taskId"]})
        if stream:
            return self._tail(task, lifecycle.is_final, history_length=history_length)
        if not immediate and not lifecycle.is_final(task["status"]["state"]):
            for _ in self._tail(task, lifecycle.is_final, self.wait_timeout):
                pass
            task = self._load(task["id"])
        return {"task": view(task, history_length)}

    def list_tasks(self, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            return listing.list_tasks(self.store, owner, params)

    def push_config(self, method: str, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        raise A2AError("PushNotificationNotSupported", "Push notifications are not supported by this agent")

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
            if task_id in self._jobs or task.get("_leased") or state not in lifecycle.INTERRUPTED:
                raise A2AError(
                    "UnsupportedOperation",
                    f"Task {task_id} is still working ({state}); wait for it to ask for input",
                    {"taskId": task_id},
                )
            context = message.get("contextId")
            if context is not None and context != task["contextId"]:
                raise A2AError(
                    "InvalidParams",
                    detail=f"message.contextId does not match task {task_id}",
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
            task["_continuing"] = time.time() + self.store.lease_s  # taken: no other continuation until it moves
            try:
                self.store.save(task)  # on a shared store, this claims the task (a lease) for this replica
            except Conflict:
                raise A2AError("UnsupportedOperation", f"Task {task['id']} is being continued on another replica;"
                               " wait for it to ask for input", {"taskId": task["id"]}) from None
            self.replicas.resolve(job.owner, job.message["messageId"], {"taskId": task["id"]})
            self._latest[task["id"]] = task
            self._subs.setdefault(task["id"], []).append(job.sink)
            job.sink.put({"task": view(task)})

    def _create(self, job: Job) -> dict[str, Any]:
        """The job's task, created SUBMITTED on first use (caller holds the lock or is the only user).
        Its latest copy here may be stale (another replica wrote since): saves are compare-and-set."""
        with self._lock:
            if job.task_id is not None:
                return self._latest.get(job.task_id) or self._load(job.task_id)
            task_id = new_id()
            job.message.update(taskId=task_id, contextId=job.context_id)
            task: dict[str, Any] = {
                "id": task_id,
                "contextId": job.context_id,
                "status": {"state": SUBMITTED, "timestamp": now_iso()},
                "history": [job.message],
                "_owner": job.owner,
            }
            self._jobs[task_id] = job  # first: a shared store leases the task to this replica at once
            try:
                self.store.insert(task)
            except StoreError as exc:
                del self._jobs[task_id]
                raise A2AError("Internal", detail=f"{exc}") from exc
            job.task_id = task_id
            self._latest[task_id] = task
            self.replicas.resolve(job.owner, job.message["messageId"], {"taskId": task_id})
            self._subs[task_id] = [job.sink]
            job.sink.put({"task": view(task)})
            return task

    # ---- job callbacks ------------------------------------------------------------------------------
    def _status(self, job: Job, state: str, parts: list[dict[str, Any]] | None, pending: Any) -> None:
        with self._lock:
            task = self._create(job)
            if _ended_elsewhere(job, task):
                return  # canceled (or failed: our lease had lapsed); late reports from the work are dropped
            job.reported = state
            if state in lifecycle.INTERRUPTED and self._jobs.get(task["id"]) is job:
                # asking is the job's last act: the task is free for its answer the moment the question is out,
                # not only once the work has returned (a fast client answers in between)
                del self._jobs[task["id"]]
                self._latest.pop(task["id"], None)
            self._move(task, state, parts, pending)

    def _artifact(self, job: Job, art: dict[str, Any], append: bool, last_chunk: bool) -> None:
        with self._lock:
            task = self._create(job)
            if _ended_elsewhere(job, task):
                return
            if task["status"]["state"] in lifecycle.TERMINAL:
                raise lifecycle.IllegalTransition(f"task {task['id']} is finished; no more artifacts")

            def change(task: dict[str, Any]) -> Event:
                artifacts = task["artifacts"] = list(task.get("artifacts", ()))  # a new list: bodies are immutable
                index = next((i for i, a in enumerate(artifacts) if a["artifactId"] == art["artifactId"]), None)
                if index is None:
                    artifacts.append(art)
                elif append:
                    artifacts[index] = dict(artifacts[index], parts=[*artifacts[index]["parts"], *art["parts"]])
                else:
                    artifacts[index] = art
                update: dict[str, Any] = {"taskId": task["id"], "contextId": task["contextId"], "artifact": dict(art)}
                if append:
                    update["append"] = True
                if last_chunk:
                    update["lastChunk"] = True
                return {"artifactUpdate": update}
            self._commit(task, change)

    def _reply(self, job: Job, parts: list[dict[str, Any]]) -> None:
        with self._lock:
            if job.task_id is not None:
                self._status(job, COMPLETED, parts, None)
                return
            job.replied = True
            reply = agent_message(parts, job.context_id)
            self.replicas.resolve(job.owner, job.message["messageId"], {"message": reply})
            job.sink.put({"message": reply})

    def _move(self, task: dict[str, Any], state: str, parts: list[dict[str, Any]] | None, pending: Any = None,
              retry: bool = True) -> dict[str, Any] | None:
        """Apply one transition (lock held), save, and publish the status update; the task as saved,
        or None when another replica finished it first."""
        def change(task: dict[str, Any]) -> Event:
            lifecycle.advance(task["status"]["state"], state)
            task.pop("_continuing", None)
            if pending is not None:
                task["_pending"] = pending
            elif state not in lifecycle.INTERRUPTED:
                task.pop("_pending", None)
            status: dict[str, Any] = {"state": state}
            if parts:
                msg = agent_message(parts, task["contextId"], task["id"])
                status["message"] = msg
                task["history"] = [*task.get("history", []), msg]
            status["timestamp"] = now_iso()
            task["status"] = status
            return {"statusUpdate": {"taskId": task["id"], "contextId": task["contextId"], "status": status}}
        saved = self._commit(task, change, retry)
        if state in lifecycle.TERMINAL:
            self._subs.pop(task["id"], None)
        return saved

    def _commit(self, task: dict[str, Any], change: Callable[[dict[str, Any]], Event],
                retry: bool = True) -> dict[str, Any] | None:
        """Apply `change` to the task, save it and publish the event it returns (lock held). The save
        is compare-and-set: when another replica wrote first, the change is applied again to a
        fresh copy (with `retry`), or dropped (None) when that write finished the task."""
        for _ in range(CAS_TRIES):
            event = change(task)
            task["_events"] = task.get("_events", 0) + 1  # the subscriber's start point: events logged so far
            try:
                self.store.save(task)
            except Conflict:
                self._latest.pop(task["id"], None)  # changed here but not saved: read again when next needed
                fresh = self.store.get(task["id"])
                if fresh is None or fresh["status"]["state"] in lifecycle.TERMINAL or not retry:
                    job = self._jobs.get(task["id"])
                    if job is not None and (fresh is None or fresh["status"]["state"] in lifecycle.TERMINAL):
                        job.cancel.set()
                    return None
                task = fresh
                continue
            if task["id"] in self._jobs:
                self._latest[task["id"]] = task
            self.replicas.publish(task["id"], event, task["status"]["state"] in lifecycle.TERMINAL)
            self._publish(task["id"], event)
            return task
        raise StoreError(f"task {task['id']} keeps changing on other replicas")

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
                    self._latest.pop(job.task_id, None)
            job.sink.put(_END)
            log.debug("task %s: its job ended%s", job.task_id, " (canceled)" if job.cancel.is_set() else "")

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
            # a job that asked for input is done: the task may already be continued elsewhere
            if not lifecycle.is_final(task["status"]["state"]) and not lifecycle.is_final(job.reported):
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
                detail=f"{field} must be a non-empty string",
                violations=[(field, "must be a non-empty string")],
            )
        with self._lock:
            task = self.store.get(task_id)
            if task is None or task.get("_owner", "") != owner:
                raise A2AError("TaskNotFound", f"Task {task_id} not found", {"taskId": task_id})
            return task

    def _cancels(self) -> dict[str, threading.Event]:
        """The jobs this replica runs (no lock: called from the store's notification thread)."""
        return {task_id: job.cancel for task_id, job in self._jobs.copy().items()}

    def _lapsed(self, task: dict[str, Any]) -> None:
        """Another replica's lease on the task ran out: fail it (once, whichever replica is first)."""
        with self._lock:
            self._move(task, FAILED, [text_part(LAPSED)], retry=False)

    def _recover(self) -> None:
        """After a restart no work is running: tasks caught mid-run fail; interrupted ones wait on."""
        with self._lock:
            for task in self.store.unfinished():
                if task["status"]["state"] not in lifecycle.INTERRUPTED:
                    self._move(task, FAILED, [text_part("The server restarted while this task was running")])


def _ended_elsewhere(job: Job, task: dict[str, Any]) -> bool:
    """The task is finished but not by the job's own report: canceled by a client, or failed by
    another replica (our lease lapsed). The job is told to stop; its further reports are dropped."""
    if task["status"]["state"] not in lifecycle.TERMINAL or (job.reported in lifecycle.TERMINAL
                                                              and not job.cancelled):
        return False
    job.cancel.set()
    return True


def _ended(kind: str, task: dict[str, Any]) -> A2AError:
    """The error for an operation a task in a terminal state no longer allows."""
    state = task["status"]["state"]
    return A2AError(kind, f"Task {task['id']} is in terminal state {state}", {"taskId": task["id"]})
