"""board.board: the Board facade — the one object every surface (MCP tools, A2A, CLI, webhooks) calls.

A Board is one repository's board on one store: the tasks (board.tasks), their workspaces
(board.workspaces), the scheduler loop (board.scheduler) and the runs (board.runner). Every method
returns the task object (board.task_fields' plain dict) unless its doc says otherwise and raises the
board.errors family with a message for a person. Storage: `store` None means a sqlite file
`<data_dir>/board.sqlite` that this Board owns; then (and with a `sqlite://` store) the data directory is
locked (one board per data directory: a second one is refused, a `kill -9` frees it), and with its own
file the replica name is stable (derived from the data directory), so the board started again after a
crash interrupts its own running tasks at once (board.tasks' restart rule) instead of a lease later.
`data_dir` None means $XDG_DATA_HOME/mcp-agent-kit/boards/<name>-<hash of the repo path> (never inside
the working tree). `lease_s` is the lease of a run and of the scheduler (default 30 s).

Replicas (board.replicas): Boards on one PostgreSQL store (and, on one machine, one data directory) are
one board. Exactly one schedules (the scheduler's SoleLease; the others take over within the lease when
it dies, and then settle its runs: back to the queue when unchanged, else failed); every one answers
every method: a move or read is the store's, a transcript append is announced to the other replicas'
"task" listeners, an answer given where the task does not run is relayed to the replica that runs it.

Listeners (`add_listener(kind, fn) -> remove`): "event" gets the semantic events of the moves this
process makes ({"id", "type", "time", "task"}: the type is the move's own event, board.states, never
guessed from a state; in order per task, on the thread that moved it); "task" gets every change of a
task ({"task", "seq"}: the store's notification of a move or update, on any replica, and each transcript
event this process appends, `seq` being how far the task's event log goes). Each call is guarded: one
that raises is logged and the others are still called. Listeners must be quick (queue the work).
Webhooks: with `board.webhooks` configured, `start` makes one board.webhooks.WebhookSender whose
`deliver` is an "event" listener (it only queues); `close` closes it after the runs are stopped.
Agent hosts (board.hosts): with `hosts` configured, the Board keeps a HostPool (health checks from `start`
to `close`); the scheduler places tasks with it, a host that comes up wakes the scheduler, one that goes
down has its runs settled (TaskRunner.host_down); `status()` lists the hosts.
Rules: the facade owns the objects and wires them; the decisions live in board.queue, board.states,
board.runner; no protocol knowledge.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_agent_kit.board import task_fields as tf
from mcp_agent_kit.board.config import BoardConfig
from mcp_agent_kit.board.errors import BoardError, TaskInvalid
from mcp_agent_kit.board.host_workspaces import RemoteWorkspaces
from mcp_agent_kit.board.hosts import HostPool
from mcp_agent_kit.board.replicas import (
    EVENTS_CHANNEL,
    SCHEDULER_KEY,
    SCHEDULER_KIND,
    AnswerRelay,
    lock_data_dir,
    lock_mode,
)
from mcp_agent_kit.board.runner import TaskRunner
from mcp_agent_kit.board.scheduler import Scheduler, board_limits
from mcp_agent_kit.board.states import FINAL, STATES, transition
from mcp_agent_kit.board.tasks import CHANNEL, DEFAULT_LEASE_S, BoardTasks, Moved, events_channel
from mcp_agent_kit.board.workspaces import Workspace, WorkspaceError, Workspaces, slugify
from mcp_agent_kit.store.base import Store, StoreError
from mcp_agent_kit.store.leases import SoleLease

if TYPE_CHECKING:
    from mcp_agent_kit.board.webhooks import WebhookSender

__all__ = ["LISTENER_KINDS", "Board", "default_data_dir"]

log = logging.getLogger("mcp_agent_kit.board")
LISTENER_KINDS = ("event", "task")
STORE_FILE = "board.sqlite"
STOPPED = "the replica running this task stopped"
POLL_S = 0.5  # the longest a wait sleeps between two reads when no notification comes (a lost one)
T = TypeVar("T")


def default_data_dir(repo: str | Path) -> Path:
    """$XDG_DATA_HOME (default ~/.local/share)/mcp-agent-kit/boards/<name>-<hash of the repo's resolved path>."""
    root = Path(repo).resolve()
    home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return Path(home) / "mcp-agent-kit" / "boards" / f"{slugify(root.name)}-{digest}"


class ObservedTasks(BoardTasks):
    """BoardTasks whose every move (the board's, a person's, recover's and the lease keeper's) is told to `on_moved`."""

    def __init__(self, store: Store, *, on_moved: Callable[[Moved], None], **kwargs: Any) -> None:
        super().__init__(store, **kwargs)
        self._on_moved = on_moved

    def move(self, task_id: str, action: str, fields: Mapping[str, Any] | None = None, *,
             version: int | None = None) -> Moved:
        moved = super().move(task_id, action, fields, version=version)
        self._on_moved(moved)
        return moved


class Board:
    """One repository's board (see the module docstring)."""

    def __init__(self, config: BoardConfig, repo: str | Path, *, store: Store | None = None,
                 data_dir: str | Path | None = None, replica: str | None = None,
                 lease_s: float | None = None) -> None:
        self.config = config
        self.data_dir = Path(data_dir if data_dir is not None else default_data_dir(repo)).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        own = store is None
        mode = lock_mode(store)
        self.replicated = mode != "exclusive"  # other Board processes may share the store (board.replicas)
        self._lock_fd = lock_data_dir(self.data_dir, mode) if mode is not None else None
        if own:
            digest = hashlib.sha256(str(self.data_dir).encode("utf-8", "surrogateescape")).hexdigest()[:12]
            replica = replica or f"{socket.gethostname()}-{digest}"
        try:
            ws = config.workspace
            self.workspaces = Workspaces(repo, self.data_dir, base=ws.base, copy=ws.copy, setup=ws.setup,
                                         setup_timeout=ws.setup_timeout, mode=ws.mode)
            if store is None:
                from mcp_agent_kit.store.sqlite import SqliteStore

                store = SqliteStore(f"sqlite:///{self.data_dir / STORE_FILE}")
        except BaseException:
            self._unlock()
            raise
        self.store = store
        lease = DEFAULT_LEASE_S if lease_s is None else lease_s
        self.hosts = HostPool(config.hosts, config.agents, on_change=self._host_changed)
        agents = list(dict.fromkeys([*config.agents, *self.hosts.declared_agents()]))
        self.tasks = ObservedTasks(store, on_moved=self._moved, replica=replica, agents=agents,
                                   default_agent=config.default_agent, own_store=own, lease_s=lease,
                                   leading=self._leading, abandoned=self._abandoned)
        self.replica = self.tasks.replica
        self.remote = RemoteWorkspaces(self.hosts, self.workspaces, config.repo_url)
        self.runner = TaskRunner(self.tasks, self.workspaces, config, self._tell_appended, self.remote)
        self.leader = SoleLease(store, SCHEDULER_KIND, SCHEDULER_KEY, self.replica, lease,
                                on_change=self._leadership, name="board-scheduler-lease")
        self.relay = AnswerRelay(self.tasks, self._await)
        self.scheduler = Scheduler(self.tasks, self.runner, lambda: board_limits(config, self.runner, self.hosts),
                                   leading=self._leading, deliver=self._deliver if self.replicated else None)
        self._listeners: dict[str, dict[int, Callable[[dict[str, Any]], None]]] = {k: {} for k in LISTENER_KINDS}
        self._listen_lock = threading.Lock()
        self._next_listener = 0
        self._seqs: dict[str, int] = {}  # task id -> the last transcript seq known here
        self._appended: dict[str, int] = {}  # task id -> the last seq told as an append (here or announced)
        self._changed = threading.Condition()
        self._generation = 0
        self._started = self._closed = False
        self._webhooks: WebhookSender | None = None  # while started with board.webhooks configured
        self._unsubscribe = store.subscribe(self._notified)

    # ---- life -------------------------------------------------------------------------------------
    def _unlock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the flock

    def start(self) -> None:
        """Stop the agents and interrupt the tasks the last run of this board left running (BoardTasks.recover),
        re-attach the workspaces of unfinished tasks (not those a live replica runs), keep this replica's
        leases, take the scheduler's lease when it is free, start the scheduler."""
        if self._started:
            return
        self._started = True
        if self.config.webhooks:
            from mcp_agent_kit.board.webhooks import WebhookSender

            sender = self._webhooks = WebhookSender(self.config.webhooks)

            def deliver(event: dict[str, Any]) -> None:
                sender.deliver(event)  # it only queues: the move that told it is never held up

            self.add_listener("event", deliver)
        for task_id in self.runner.stop_orphans():
            log.warning("board: stopped the agent of task %s left running by the board's previous process", task_id)
        self.tasks.recover()
        for task in self.tasks.list():
            if task.get("workspace") and task["state"] not in FINAL and not self.tasks.live_elsewhere(task["id"]) \
                    and not self.remote.kept(task):
                self._reattach(task)
        self.tasks.leases()
        self.leader.keep()  # the first replica schedules from its first round on
        self.leader.start()
        self.hosts.start()
        self.scheduler.start()

    def _reattach(self, task: dict[str, Any]) -> None:
        found = self.workspaces.find(task["id"])
        try:
            if found is None:
                raise WorkspaceError(f"no workspace record for task {task['id']} at {task['workspace']}")
            self.workspaces.attach(found)
        except WorkspaceError as exc:
            log.warning("board: task %s: %s", task["id"], exc)
            self.tasks.append(task["id"], {"type": "error", "kind": "error", "text": f"after the restart: {exc}"})

    def close(self) -> None:
        """Stop scheduling and every running agent; the tasks keep their state (the next start settles them)."""
        if self._closed:
            return
        self._closed = True
        self.scheduler.close()
        self.hosts.close()
        self.leader.close()  # released: another replica schedules at once
        self.runner.close()
        if self.replicated and self._started:  # the other replicas carry on with this one's tasks at once
            try:
                self.tasks.hand_back(STOPPED)
            except (BoardError, StoreError, OSError) as exc:  # then their leases run out: the same, later
                log.warning("board: handing this replica's tasks back failed: %s", exc)
        self._unsubscribe()
        with self._changed:
            self._generation += 1
            self._changed.notify_all()
        if self._webhooks is not None:
            self._webhooks.close()
        self.tasks.close()
        self._unlock()

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- tasks ------------------------------------------------------------------------------------
    def create_task(self, prompt: str, *, title: str | None = None, agent: str | None = None,
                    priority: str = "normal", blocked_by: Sequence[str] = (), base: str | None = None,
                    hold: bool = False, owner: str | None = None, metadata: Mapping[str, Any] | None = None,
                    task_id: str | None = None, labels: Sequence[str] | None = None) -> dict[str, Any]:
        """A new task. owner: the principal creating it (None without authentication); metadata: the
        caller's JSON object; task_id: an id the caller chose (TaskExists when it is taken); labels: what an
        agent host running it must have (board.hosts)."""
        return self.tasks.create(prompt, title=title, agent=agent, priority=priority, blocked_by=blocked_by,
                                 base=base, hold=hold, owner=owner, metadata=metadata, task_id=task_id,
                                 labels=labels)

    def set_priority(self, task_id: str, priority: str) -> dict[str, Any]:
        """Change the task's priority (it orders the queue: board.queue)."""
        return self.tasks.update(task_id, {"priority": priority})

    def status(self) -> dict[str, Any]:
        """{"running": the scheduler runs, "max_concurrent", "agents": [{"id", "ready", "why"}], and with hosts
        configured "hosts": [{"id", "url", "live", "why", "capacity", "labels", "agents", "mounted"}]} as now."""
        agents = [{"id": agent_id, "ready": ready, "why": why or None}
                  for agent_id, (ready, why) in ((a, self.runner.ready(a)) for a in self.config.agents)]
        return {"running": self._started and not self._closed, "max_concurrent": self.config.max_concurrent,
                "agents": agents, **({"hosts": self.hosts.describe()} if self.hosts.hosts else {})}

    def release_task(self, task_id: str) -> dict[str, Any]:
        return self.tasks.move(task_id, "release").task

    def list_tasks(self, state: str | None = None, agent: str | None = None) -> list[dict[str, Any]]:
        return self.tasks.list(state, agent)

    def get_task(self, task_id: str) -> dict[str, Any]:
        return self.tasks.get(task_id)

    def prompt_task(self, task_id: str, message: str) -> dict[str, Any]:
        """A follow-up: the task goes back to queued with `message` as its prompt (same session, same workspace)."""
        return self.tasks.move(task_id, "prompt", {"prompt": message}).task

    def answer_task(self, task_id: str, answer: str | dict[str, Any]) -> dict[str, Any]:
        """The answer goes straight to the agent waiting on the task's question: for a permission question an
        option id (or {"optionId": id}); for its ask_user question (kind "question", board.task_scope) an option
        id, or content matching the question's schema (TaskInvalid names the mismatch). A task another replica
        runs gets it through that replica (board.replicas.AnswerRelay)."""
        if self.replicated and self.runner.run_of(task_id) is None:
            return self.relay.send(task_id, answer)
        return self._answer_here(task_id, answer)

    def _answer_here(self, task_id: str, answer: Any) -> dict[str, Any]:
        question = self.tasks.get(task_id).get("question") or {}
        if question.get("kind") == "question":
            return self.runner.scope.answer(task_id, answer)
        return self.runner.answer(task_id, answer)

    def cancel_task(self, task_id: str) -> dict[str, Any]:
        """Cancel: a turn running here gets `session/cancel` first; one on another replica is stopped there."""
        cancelled = self.runner.cancel(task_id)
        return cancelled if cancelled is not None else self.tasks.move(task_id, "cancel").task

    # ---- review -----------------------------------------------------------------------------------
    def _workspace(self, task: dict[str, Any]) -> Workspace:
        found = self.workspaces.find(task["id"])
        if found is None:
            raise TaskInvalid(f"task {task['id']} has no workspace (it has not started, or it was discarded)")
        return found

    def task_diff(self, task_id: str) -> dict[str, Any]:
        """{"files": [{"path", "status", "added", "removed", "binary"}], "patch"} against the task's base commit."""
        task = self.tasks.get(task_id)
        if self.remote.kept(task):
            return self.remote.diff(task)
        diff = self.workspaces.diff(self._workspace(task))
        return {"files": [dict(change) for change in diff["files"]], "patch": diff["patch"]}

    def accept_task(self, task_id: str, merge: bool = False) -> dict[str, Any]:
        """Commit the workspace's changes on the task branch ("<title> (task <id>)"), with `merge` also into the
        base branch (refused, nothing changed, when that could touch uncommitted work); then the task is done."""
        task = self.tasks.get(task_id)
        transition(task["state"], "accept", task_id)
        message = f"{task['title']} (task {task_id})"
        accepted = (self.remote.accept(task, message, self.config.author, merge) if self.remote.kept(task) else
                    self.workspaces.accept(self._workspace(task), message, author=self.config.author, merge=merge))
        merged = f"; merged into {accepted['merged']}" if accepted["merged"] else ""
        self.tasks.append(task_id, {"type": "progress", "kind": "progress", "accepted": dict(accepted),
                                    "text": f"accepted: {accepted['commit'][:12]} on {accepted['branch']}{merged}"})
        return self.tasks.move(task_id, "accept").task

    def discard_task(self, task_id: str) -> dict[str, Any]:
        """Remove the task's worktree and delete its branch (the work goes), then the task is discarded."""
        task = self.tasks.get(task_id)
        transition(task["state"], "discard", task_id)
        found = self.workspaces.find(task_id)
        if self.remote.kept(task):
            self.remote.discard(task)
        elif found is not None:
            self.workspaces.discard(found)
        return self.tasks.move(task_id, "discard").task

    # ---- the transcript and waiting ---------------------------------------------------------------
    def task_events(self, task_id: str, after: int = 0, limit: int = 500) -> dict[str, Any]:
        """{"events": [{"seq", "kind", ...}], "next"}: the transcript after `after` (at most `limit` events)."""
        self.tasks.get(task_id)
        events, next_seq = self.tasks.events(task_id, after, limit)
        return {"events": [{**event, "kind": event.get("kind", event.get("type"))} for event in events],
                "next": next_seq}

    def wait_task(self, task_id: str, states: Collection[str], timeout: float) -> dict[str, Any]:
        """Block until the task is in one of `states` or `timeout` seconds passed; the task as it is then."""
        wanted = {states} if isinstance(states, str) else set(states)
        unknown = sorted(wanted - set(STATES))
        if unknown or not wanted:
            raise TaskInvalid(f"wait for one or more of the states {', '.join(STATES)}, not {unknown or 'none'}")
        found = self._await(lambda: task if (task := self.tasks.get(task_id))["state"] in wanted else None, timeout)
        return found if found is not None else self.tasks.get(task_id)

    def _await(self, probe: Callable[[], T | None], timeout: float) -> T | None:
        """What `probe` finds (not None), read again on each store notification, within `timeout` seconds;
        None when it found nothing in time (or the board closed)."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            with self._changed:
                seen = self._generation
            found = probe()
            left = deadline - time.monotonic()
            if found is not None or left <= 0 or self._closed:
                return found
            with self._changed:
                if self._generation == seen:
                    self._changed.wait(min(left, POLL_S))

    # ---- listeners --------------------------------------------------------------------------------
    def add_listener(self, kind: str, fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `fn` for every "event" (semantic) or "task" (any change) from now on; returns the remover."""
        if kind not in LISTENER_KINDS:
            raise TaskInvalid(f"unknown listener kind {kind!r}: use one of {', '.join(LISTENER_KINDS)}")
        with self._listen_lock:
            token = self._next_listener
            self._next_listener += 1
            self._listeners[kind][token] = fn

        def remove() -> None:
            with self._listen_lock:
                self._listeners[kind].pop(token, None)
        return remove

    def _fire(self, kind: str, payload: dict[str, Any]) -> None:
        with self._listen_lock:
            listeners = list(self._listeners[kind].values())
        for fn in listeners:
            try:
                fn(payload)
            except Exception:  # one broken listener must not stop the others, nor the move that told it
                log.exception("board: a %r listener failed", kind)

    def _has(self, kind: str) -> bool:
        with self._listen_lock:
            return bool(self._listeners[kind])

    def _moved(self, moved: Moved) -> None:
        """Every move this process made: its semantic event (when the action has one) to the "event" listeners."""
        if moved.event is not None and self._has("event"):
            self._fire("event", {"id": uuid.uuid4().hex, "type": moved.event, "time": tf.iso(time.time()),
                                 "task": moved.task})

    def _notified(self, channel: str, payload: str) -> None:
        """A store notification (here or from another replica), by channel (NOTIFIED)."""
        handle = NOTIFIED.get(channel)
        if handle is not None:
            handle(self, payload)

    def _task_changed(self, payload: str) -> None:
        """A task was created, moved or updated."""
        self.scheduler.wake()
        with self._changed:
            self._generation += 1
            self._changed.notify_all()
        if payload and self._has("task"):
            task = self.tasks.find(payload)
            if task is not None:
                self._fire("task", {"task": task, "seq": self._last_seq(payload)})

    def _last_seq(self, task_id: str) -> int:
        """The last seq of the task's event log, read on from the one known here (linear in the events, in all)."""
        with self._listen_lock:
            known = self._seqs.get(task_id, 0)
        while True:
            found = self.store.events(events_channel(task_id), known, 1000)
            if not found:
                break
            known = found[-1][0]
        with self._listen_lock:
            known = self._seqs[task_id] = max(known, self._seqs.get(task_id, 0))
        return known

    def _tell_appended(self, task: dict[str, Any], seq: int) -> None:
        """The runner appended transcript event `seq`: the "task" listeners hear of it (and, with replicas,
        those of the other replicas, through EVENTS_CHANNEL)."""
        with self._listen_lock:
            self._seqs[task["id"]] = max(seq, self._seqs.get(task["id"], 0))
            self._appended[task["id"]] = max(seq, self._appended.get(task["id"], 0))
        if self.replicated:
            self.store.notify(EVENTS_CHANNEL, f"{task['id']} {seq}")
        if self._has("task"):
            self._fire("task", {"task": task, "seq": seq})

    def _events_grew(self, payload: str) -> None:
        """Another replica appended to a task's transcript: the "task" listeners here hear of each append once,
        in order (a move's notification may have told a later seq already: listeners take seqs as hints)."""
        task_id, _, number = payload.rpartition(" ")
        if not task_id or not number.isdigit() or not self._has("task"):
            return
        seq = int(number)
        with self._listen_lock:
            if seq <= self._appended.get(task_id, 0):
                return  # appended here (its own notification came back), or told already
            self._appended[task_id] = seq
            self._seqs[task_id] = max(seq, self._seqs.get(task_id, 0))
        task = self.tasks.find(task_id)
        if task is not None:
            self._fire("task", {"task": task, "seq": seq})

    def _host_changed(self, host: str, live: bool) -> None:
        """An agent host came up (the queue may move) or went down (its runs here are settled)."""
        if not live:
            self.runner.host_down(host)
        self.scheduler.wake()

    # ---- replicas (board.replicas) -----------------------------------------------------------------
    def _leading(self) -> bool:
        """Does this replica schedule (hold the scheduler's lease)?"""
        return self.leader.held()

    def _leadership(self, held: bool) -> None:
        log.info("board: replica %s %s", self.replica, "schedules now" if held else "no longer schedules")
        if held:
            self.scheduler.wake()

    def _deliver(self, here: list[str]) -> None:
        self.relay.deliver(here, self._answer_here)

    def _abandoned(self, task: dict[str, Any]) -> bool:
        """A dead replica's run of `task`: stop its agent if it was on this machine; is the workspace unchanged
        (never made, or no changes against its base)? Unknown (not on this machine, unreadable) is changed."""
        self.runner.stop_orphans({task["id"]})
        if not task.get("workspace"):
            return True
        found = self.workspaces.find(task["id"])
        if found is None:
            return False
        try:
            return not self.workspaces.diff(found)["files"]
        except (WorkspaceError, OSError) as exc:
            log.warning("board: task %s: cannot read its workspace's changes: %s", task["id"], exc)
            return False


# a store notification's channel -> what the Board does with its payload
NOTIFIED: Mapping[str, Callable[[Board, str], None]] = {
    CHANNEL: Board._task_changed,
    EVENTS_CHANNEL: Board._events_grew,
    SCHEDULER_KIND: lambda board, payload: board.leader.wake(),  # released: take it now
}
