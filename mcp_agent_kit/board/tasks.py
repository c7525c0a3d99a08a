"""board.tasks: the board's tasks — one repository over `store.Store`, safe for any number of replicas.

Records of kind `board_tasks` (key = task id, body = the task object of board.task_fields, `state` and
`group` = the task's state and agent, for filtered queries; `order` = the creation time inverted, so
the store's greatest-first listing is creation order, oldest first). Every change is a compare-and-set
on the record's version: `move` applies one action of board.states' table against the task as stored
now (another replica's move in between is re-read, and a move it made impossible is TransitionRefused),
or, given the `version` the caller read, against exactly that one (TaskConflict when it changed). So two
replicas never both start, answer or end the same task. A move appends a `state` entry to the task's
event log (with the record's version, so readers order moves even when two replicas' appends cross),
carrying the semantic event of board.states when the action has one, and notifies CHANNEL with the
task id (a wake-up hint for schedulers and streams on every replica).

Each task's transcript is the event log `board_tasks:<id>` (`append`: gap-free sequence numbers;
`events(id, after)` -> (events, next)). Appends do not check the task exists (one delta, one write).

Leases and restarts: `start` leases the record to this replica (`holder`, `lease_until`); moves within
running ⇄ needs_input keep the holder (an answer may arrive on any replica), leaving them clears it.
`recover()`, run when a board starts, interrupts (running|needs_input → failed, RESTARTED, keeping
`sessionId`, `workspace` and `branch`, so the next follow-up prompt resumes the same agent session with
`session/load` in the same worktree) every task whose lease ran out and every task held under this
replica's own name that this process does not run (its previous life died: give a replica the same
name across restarts and its tasks come back at once, not a lease later); a live lease of another
replica is never touched. While the board runs, `leases()` (store.leases.LeaseKeeper) renews this
replica's leases and interrupts tasks whose replica died (LAPSED). Why failed and not queued: the run
was cut short at an unknown point, maybe half-way through an edit; re-sending its prompt by itself
could repeat work, so a person (or the caller) decides, and a follow-up prompt continues it.
With replicas (board.board), two hooks refine this: `leading()` says whether this replica schedules
(only the scheduling one hands on lapsed runs; default: always), and `abandoned(task)` stops what is
left of a dead replica's run here and says whether its workspace is unchanged: then the task goes
back to the queue (`requeue`) instead of failing, since nothing was cut half-way. Either way the
transcript gets an `error` event naming the replica that stopped. `lost(ids)` tells a replica which
of its runs the store no longer has running under its name (cancelled elsewhere, or taken over after
a stall), so it stops them. `vanished(id, ...)` settles the same way a run of this replica whose agent host
vanished (board.hosts), the caller saying whether it changed anything; a requeue clears the task's `host`.

Rules: plain dicts in and out (copies: mutating one never changes the store); inputs checked by
board.task_fields (TaskInvalid); no protocol and no I/O beyond the store; `clock` is wall-clock seconds.
"""

from __future__ import annotations

import builtins
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, NamedTuple

from mcp_agent_kit.board import task_fields as tf
from mcp_agent_kit.board.errors import TaskConflict, TaskExists, TaskInvalid, TaskNotFound
from mcp_agent_kit.board.states import ACTIVE, HELD, QUEUED, STATES, semantic_event, transition
from mcp_agent_kit.store.base import Record, Store
from mcp_agent_kit.store.leases import LAPSED, LeaseKeeper

__all__ = ["CHANNEL", "KIND", "RESTARTED", "BoardTasks", "Moved", "events_channel"]

KIND = "board_tasks"
CHANNEL = "board_tasks"  # notifications: payload = the id of a task created or moved
RESTARTED = ("interrupted: the board stopped while this task was running; prompt it to continue "
             "(the same agent session and workspace)")
DEFAULT_LEASE_S = 30.0
CAS_TRIES = 50
_ALL = 1_000_000
_TOP = 10**20


def events_channel(task_id: str) -> str:
    """The event-log channel of one task's transcript."""
    return f"{KIND}:{task_id}"


class Moved(NamedTuple):
    """What a move did: the task as now stored, the state it left, the semantic event (None: none)."""

    task: dict[str, Any]
    previous: str
    event: str | None


def _ended(now: str) -> dict[str, Any]:
    return {"question": None, "endedAt": now, "waiting": None}


# action -> the fields it sets itself (given the time as text); applied over the caller's fields
EFFECTS: Mapping[str, Callable[[str], dict[str, Any]]] = {
    "release": lambda now: {"waiting": None},
    "start": lambda now: {"startedAt": now, "endedAt": None, "waiting": None, "error": None},
    "ask": lambda now: {},
    "answer": lambda now: {"question": None},
    "finish": lambda now: {"question": None, "endedAt": now},
    "accept": lambda now: {},
    "discard": lambda now: {},
    "fail": _ended,
    "interrupt": _ended,
    "cancel": _ended,
    "requeue": lambda now: {"question": None, "waiting": None, "host": None},
    "prompt": lambda now: {"endedAt": None, "error": None, "question": None, "waiting": None},
}
# action -> the caller's fields it needs
REQUIRED: Mapping[str, tuple[str, ...]] = {"ask": ("question",), "fail": ("error",), "prompt": ("prompt",)}
_MOVE_ONLY = {"prompt": tf.check_prompt}  # a follow-up prompt replaces `prompt` (the transcript keeps every one)


class BoardTasks:
    """The tasks of one board on `store`; `replica` names this process among those sharing the store."""

    def __init__(self, store: Store, *, replica: str | None = None, lease_s: float = DEFAULT_LEASE_S,
                 agents: Collection[str] | None = None, default_agent: str | None = None,
                 clock: Callable[[], float] = time.time, own_store: bool = False,
                 leading: Callable[[], bool] | None = None,
                 abandoned: Callable[[dict[str, Any]], bool] | None = None) -> None:
        """agents: the agent ids a task may name (None: any); default_agent: the one a task gets when it names
        none; leading and abandoned: the replicas' hooks (see the module's doc)."""
        if lease_s <= 0:
            raise ValueError("the task lease must be positive")
        self.store, self.lease_s, self.clock, self._own_store = store, lease_s, clock, own_store
        self.leading = leading or (lambda: True)
        self.abandoned = abandoned
        self.replica = replica or f"board-{uuid.uuid4().hex[:12]}"
        self.agents = None if agents is None else frozenset(agents)
        self.default_agent = default_agent
        self._lock = threading.Lock()
        self._running: set[str] = set()  # tasks this process started and still runs
        self._last_order = 0
        self._keeper: LeaseKeeper | None = None

    def close(self) -> None:
        if self._keeper is not None:
            self._keeper.close()
        if self._own_store:
            self.store.close()

    # ---- creating and reading ----------------------------------------------------------------------
    def create(self, prompt: str, *, title: str | None = None, agent: str | None = None,
               priority: str | None = None, blocked_by: Iterable[str] | None = None, base: str | None = None,
               hold: bool = False, task_id: str | None = None, owner: str | None = None,
               metadata: Mapping[str, Any] | None = None, labels: Iterable[str] | None = None) -> dict[str, Any]:
        """A new task, `queued` (or `held` with hold=True); TaskInvalid names a bad input (a blocker must
        exist; an id taken already is TaskExists). `owner`: the principal creating it; `metadata`: the
        caller's JSON object; `labels`: what a host running it must have (board.task_fields)."""
        prompt = tf.check_prompt("prompt", prompt)
        title = tf.derive_title(prompt) if title is None or not str(title).strip() else tf.check_title("title", title)
        agent = self._agent(agent)
        priority = tf.check_priority("priority", tf.DEFAULT_PRIORITY if priority is None else priority)
        blockers = tf.check_blockers(blocked_by)
        base = None if base is None else tf.check_ref("base", base)
        given = None if task_id is None else tf.check_id("id", task_id)
        owner = None if owner is None else tf.check_owner("owner", owner)
        extra = {} if metadata is None else tf.check_metadata("metadata", metadata)
        resumed = tf.resumed_session(extra)
        wanted = [] if labels is None else tf.check_labels("labels", labels)
        if given is not None and given in blockers:
            raise TaskInvalid(f"task {given} cannot be blocked by itself")
        self._check_blockers(given, blockers)
        created = self.clock()
        for _ in range(CAS_TRIES):
            new_id = given or uuid.uuid4().hex[:10]
            task = tf.new_task(new_id, prompt, title, agent, priority, HELD if hold else QUEUED, blockers, base,
                               created, owner, extra, wanted)
            if resumed is not None:
                task["sessionId"] = resumed  # the first turn loads it (board.runner)
            if self.store.insert(self._record(task, order=self._order())):
                self.store.notify(CHANNEL, new_id)
                return task
            if given is not None:
                raise TaskExists(f"a task {given!r} exists already: choose another id")
        raise TaskConflict("could not find a free task id")  # pragma: no cover (2**40 ids)

    def _agent(self, agent: str | None) -> str:
        if agent is None or not str(agent).strip():
            if self.default_agent is None:
                known = f" ({', '.join(sorted(self.agents))})" if self.agents else ""
                raise TaskInvalid(f"agent: name the agent that works on the task{known}")
            agent = self.default_agent
        agent = tf.check_agent("agent", agent)
        if self.agents is not None and agent not in self.agents:
            raise TaskInvalid(f"unknown agent {agent!r}: this board has {', '.join(sorted(self.agents)) or 'none'}")
        return agent

    def _check_blockers(self, task_id: str | None, blockers: list[str]) -> None:
        """Every blocker exists, and (defensively: blockers are fixed at creation) none leads back to `task_id`."""
        seen: set[str] = set()
        todo = list(blockers)
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            record = self.store.get(KIND, current)
            if record is None:
                if current in blockers:
                    raise TaskInvalid(f"blockedBy: no task {current!r} on this board")
                continue
            later = list(record.body.get("blockedBy") or [])
            if task_id is not None and task_id in later:
                raise TaskInvalid(f"blockedBy: task {current} waits for {task_id} already (a cycle)")
            todo.extend(later)

    def find(self, task_id: str) -> dict[str, Any] | None:
        """The task, or None."""
        record = self.store.get(KIND, task_id) if isinstance(task_id, str) else None
        return None if record is None else tf.completed(record.body)

    def get(self, task_id: str) -> dict[str, Any]:
        """The task; TaskNotFound when there is none."""
        return self.read(task_id)[0]

    def read(self, task_id: str) -> tuple[dict[str, Any], int]:
        """The task and its version (for `move(..., version=)` / `update(..., version=)`)."""
        record = self._stored(task_id)
        return tf.completed(record.body), record.version

    def list(self, state: str | Iterable[str] | None = None, agent: str | None = None) -> list[dict[str, Any]]:
        """The tasks in creation order (stable), filtered by state(s) and agent."""
        states = None if state is None else [state] if isinstance(state, str) else list(state)
        for name in states or ():
            if name not in STATES:
                raise TaskInvalid(f"unknown state {name!r}: use one of {', '.join(STATES)}")
        page = self.store.query(KIND, group=agent, states=states, limit=_ALL)
        return [tf.completed(record.body) for record in page.records]

    # ---- changing ------------------------------------------------------------------------------------
    def move(self, task_id: str, action: str, fields: Mapping[str, Any] | None = None, *,
             version: int | None = None) -> Moved:
        """Apply `action` (board.states) with `fields` (board.task_fields.UPDATABLE, plus `prompt` for a
        follow-up); TransitionRefused when the task's state does not take it, TaskConflict when `version`
        is given and the task is no longer at it."""
        changes = tf.checked(fields, _MOVE_ONLY if action == "prompt" else None)
        missing = [name for name in REQUIRED.get(action, ()) if changes.get(name) is None]
        if missing:
            raise TaskInvalid(f"{action} needs {', '.join(missing)}")
        for _ in range(CAS_TRIES):
            record = self._stored(task_id)
            if version is not None and record.version != version:
                raise self._conflict(task_id, version, record.version)
            new_state = transition(record.state, action, task_id)
            now = tf.iso(self.clock())
            body = {**record.body, **changes, **EFFECTS[action](now), "state": new_state}
            written = self.store.update(self._moved_record(record, body, action), expect_version=record.version)
            if written is not None:
                return self._after_move(record, written, action)
            if version is not None:
                raise self._conflict(task_id, version, None)
        raise TaskConflict(f"task {task_id} keeps changing on other replicas; try again")

    def _moved_record(self, record: Record, body: dict[str, Any], action: str) -> Record:
        state = body["state"]
        if state not in ACTIVE:
            holder, until = None, None
        elif action == "start":
            holder, until = self.replica, self.clock() + self.lease_s
        else:
            holder, until = record.holder, record.lease_until
        return record._replace(body=body, state=state, group=body["agent"], holder=holder, lease_until=until)

    def _after_move(self, old: Record, new: Record, action: str) -> Moved:
        task_id, state = new.key, new.body["state"]
        with self._lock:
            if action == "start":
                self._running.add(task_id)
            elif state not in ACTIVE:
                self._running.discard(task_id)
        event = semantic_event(action)
        self.store.append(events_channel(task_id), {
            "type": "state", "action": action, "from": old.state, "state": state, "event": event,
            "version": new.version, "time": tf.iso(self.clock())})
        self.store.notify(CHANNEL, task_id)
        return Moved(tf.completed(new.body), old.state, event)

    def update(self, task_id: str, fields: Mapping[str, Any], *, version: int | None = None) -> dict[str, Any]:
        """Set fields other than the state (board.task_fields.UPDATABLE); nothing is written when nothing
        changes. TaskConflict when `version` is given and the task is no longer at it."""
        changes = tf.checked(fields)
        for _ in range(CAS_TRIES):
            record = self._stored(task_id)
            if version is not None and record.version != version:
                raise self._conflict(task_id, version, record.version)
            body = {**record.body, **changes}
            if body == record.body:
                return tf.completed(body)
            if self.store.update(record._replace(body=body), expect_version=record.version) is not None:
                self.store.notify(CHANNEL, task_id)
                return tf.completed(body)
            if version is not None:
                raise self._conflict(task_id, version, None)
        raise TaskConflict(f"task {task_id} keeps changing on other replicas; try again")

    # ---- transcript ------------------------------------------------------------------------------------
    def append(self, task_id: str, event: Mapping[str, Any]) -> int:
        """Add one event (an object with a text `type`) to the task's transcript; its sequence number."""
        if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
            raise TaskInvalid("a task event is an object with a text 'type'")
        return self.store.append(events_channel(task_id), dict(event))

    def events(self, task_id: str, after: int = 0, limit: int = 1000) -> tuple[builtins.list[dict[str, Any]], int]:
        """The transcript's events after sequence number `after` (each with its `seq`), and the `next`
        number to ask from (the last one's, or `after` when there were none)."""
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise TaskInvalid("after must be a sequence number (0 for the start)")
        found = self.store.events(events_channel(task_id), after, max(1, min(limit, 1000)))
        events = [{"seq": seq, **event} for seq, event in found]
        return events, (found[-1][0] if found else after)

    # ---- leases and restarts -----------------------------------------------------------------------------
    def running(self) -> builtins.list[str]:
        """The tasks this process started and still runs (their leases are renewed)."""
        with self._lock:
            return sorted(self._running)

    def forget(self, task_id: str) -> None:
        """This process no longer runs the task (its run ended elsewhere, e.g. cancelled on another replica)."""
        with self._lock:
            self._running.discard(task_id)

    def recover(self) -> builtins.list[dict[str, Any]]:
        """Interrupt the tasks whose run died (see the module's doc); the tasks interrupted here."""
        now = self.clock()
        interrupted = []
        for record in self.store.query(KIND, states=sorted(ACTIVE), limit=_ALL).records:
            with self._lock:
                ours_now = record.key in self._running
            lapsed = record.lease_until is None or record.lease_until < now
            if ours_now or not (lapsed or record.holder == self.replica):
                continue
            own = record.holder == self.replica
            moved = self._interrupt(record, RESTARTED) if own else self._lapsed(record, LAPSED)
            if moved is not None:
                interrupted.append(moved.task)
        return interrupted

    def _interrupt(self, record: Record, why: str) -> Moved | None:
        """Interrupt the task as `record` saw it; None when it moved meanwhile (someone else handled it)."""
        try:
            return self.move(record.key, "interrupt", {"error": why}, version=record.version)
        except TaskConflict:
            return None

    def lost(self, task_ids: Collection[str]) -> builtins.list[str]:
        """Of `task_ids` (runs of this process), those the store no longer has running under this replica."""
        if not task_ids:
            return []
        page = self.store.query(KIND, states=sorted(ACTIVE), limit=_ALL)
        ours = {record.key for record in page.records if record.holder == self.replica}
        return sorted(set(task_ids) - ours)

    def live_elsewhere(self, task_id: str, replica: str | None = None) -> bool:
        """Is the task running under another live replica (its lease not run out; that one, `replica`, if given)?"""
        record = self.store.get(KIND, task_id) if isinstance(task_id, str) else None
        if record is None or record.state not in ACTIVE or record.holder in (None, self.replica):
            return False
        return (replica is None or record.holder == replica) and (record.lease_until or 0.0) >= self.clock()

    def leases(self, *, start: bool = True) -> LeaseKeeper:
        """The lease keeper of this replica's running tasks (started on its own thread unless start=False;
        closed with the repository)."""
        if self._keeper is None:
            self._keeper = LeaseKeeper(self.store, KIND, self.replica, self.lease_s, states=sorted(ACTIVE),
                                       held=self.running, on_lapsed=self._handed, clock=self.clock,
                                       name="board-task-leases")
            if start:
                self._keeper.start()
        return self._keeper

    def hand_back(self, reason: str) -> builtins.list[dict[str, Any]]:
        """This replica stops (its runs were stopped): settle each of its runs as a dead replica's would be
        (`_lapsed`), so another replica carries on at once instead of a lease later; the tasks settled."""
        settled = []
        for task_id in self.running():
            record = self.store.get(KIND, task_id)
            if record is not None and record.state in ACTIVE and record.holder == self.replica:
                moved = self._lapsed(record, reason)
                if moved is not None:
                    settled.append(moved.task)
            self.forget(task_id)
        return settled

    def _handed(self, record: Record, reason: str) -> None:
        """The lease keeper's hand-on: only the scheduling replica settles a dead replica's runs."""
        if self.leading():
            self._lapsed(record, reason)

    def vanished(self, task_id: str, reason: str, stopped: str, unchanged: bool) -> Moved | None:
        """A run of this process lost what ran its agent (an agent host: board.hosts): settled like a dead
        replica's run (`_lapsed`), back to the queue when `unchanged`, else interrupted with `reason`;
        `stopped` says in the transcript who stopped. None when the task is no longer running."""
        record = self.store.get(KIND, task_id)
        if record is None or record.state not in ACTIVE:
            return None
        return self._lapsed(record, reason, stopped, unchanged)

    def _lapsed(self, record: Record, reason: str, stopped: str | None = None,
                unchanged: bool | None = None) -> Moved | None:
        """Settle the run of a dead replica: back to the queue when `abandoned` finds its workspace unchanged
        (or the caller knows it is: `unchanged`), else interrupted; the transcript says which replica (or,
        `stopped`, what) stopped. None when it moved meanwhile."""
        task = tf.completed(record.body)
        requeue = unchanged if unchanged is not None else self.abandoned is not None and self.abandoned(task)
        try:
            if requeue:
                moved = self.move(record.key, "requeue", version=record.version)
            else:
                why = f"interrupted: {reason}; prompt it to continue (the same agent session and workspace)"
                moved = self.move(record.key, "interrupt", {"error": why}, version=record.version)
        except TaskConflict:
            return None
        then = ("the task is back in the queue (its workspace had no changes)" if requeue
                else "the task failed (it may have changed its workspace); prompt it to continue")
        who = stopped or f"the replica {record.holder or '?'} running this task stopped"
        self.append(record.key, {"type": "error", "kind": "error", "replica": record.holder, "text": f"{who}: {then}"})
        return moved

    # ---- helpers -------------------------------------------------------------------------------------------
    def _stored(self, task_id: str) -> Record:
        record = self.store.get(KIND, task_id) if isinstance(task_id, str) else None
        if record is None:
            raise TaskNotFound(str(task_id))
        return record

    def _conflict(self, task_id: str, expected: int, found: int | None) -> TaskConflict:
        now = f" (now {found})" if found is not None else ""
        return TaskConflict(f"task {task_id} changed meanwhile: version {expected} is gone{now}; read it again")

    def _order(self) -> str:
        """The creation order of a new task: the clock in nanoseconds, strictly increasing in this process,
        inverted (the store lists greatest first)."""
        with self._lock:
            ns = max(int(self.clock() * 1e9), self._last_order + 1)
            self._last_order = ns
        return f"{_TOP - ns:020d}"

    def _record(self, task: dict[str, Any], *, order: str) -> Record:
        return Record(KIND, task["id"], task, group=task["agent"], state=task["state"], order=order)
