"""gateway.agent_turns: one turn while it runs (LiveTurn), the per-agent queue (Lane), sealed task ids.

A LiveTurn is the TurnSink a backend reports to. A turn is a stream: each piece of the reply (`{"text":
piece}`) and each status line (`{"status": line}`; "" is "The agent is working.") is appended to the
turn's event log, and the turn's row is written on state changes only (started, paused, answered,
ended), so the bytes stored and sent grow linearly with the reply. TurnView folds the events into the
task's `statusMessage` while it runs: the latest status line, or the last line of the reply so far, at
most LINE_MAX characters. A LiveTurn wakes whoever waits on it — the completion object a blocking
invoke_agent waits on (a Condition; the waiting worker holds no other resource, and the turn itself runs
on the backend's one reader thread). A pause is a state, not an end: a paused turn is input_required and
keeps its slot. A Lane admits at most `max_concurrent` turns of one agent (running or paused; a slot is
given back once the turn is over) and queues the rest in order, each showing `queued (position N)`.
Task ids are `v1.` + base64url(JSON) + `.` + an HMAC bound to the principal, so a caller cannot forge or
reuse another's. Rules: no MCP methods and no tools here; statuses follow core.task_table.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core.task_table import TERMINAL
from mcp_agent_kit.gateway import agent_backend as ab
from mcp_agent_kit.gateway.agent_store import AgentSessions

# agent end state -> MCP task status
STATUS = {ab.INPUT_REQUIRED: "input_required", ab.COMPLETED: "completed", ab.CANCELED: "cancelled",
          ab.FAILED: "failed", ab.REJECTED: "failed", ab.AUTH_REQUIRED: "failed"}
WORKING_TEXT = "The agent is working."
LINE_MAX = 200  # a statusMessage made of reply text: its last line, at most this long
TAIL_MAX = 4 * LINE_MAX  # how much of the reply's end the view keeps to find that line
EVENTS_PAGE = 1000


class TurnView:
    """What a running turn's task shows, folded from its events (any reader, from any sequence number)."""

    def __init__(self) -> None:
        self.seq = 0  # the last event folded
        self.tail = ""  # the end of the reply so far (bounded)
        self.line: str | None = None  # the statusMessage the events make (None: none yet)

    def fold(self, seq: int, event: dict[str, Any]) -> None:
        """Take event number `seq` into the view (one already folded is skipped; 0 is an event kept nowhere)."""
        if seq and seq <= self.seq:
            return
        self.seq = max(self.seq, seq)
        if isinstance(event.get("status"), str):
            self.line = event["status"] or WORKING_TEXT
        elif isinstance(event.get("text"), str):
            self.tail = (self.tail + event["text"])[-TAIL_MAX:]
            lines = [line for line in self.tail.split("\n") if line.strip()]
            if lines:
                last = lines[-1]
                self.line = last if len(last) <= LINE_MAX else "\u2026" + last[-(LINE_MAX - 1):]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """Strict base64url: the alphabet only, and the one spelling `_b64` writes (an id with extra
    characters or other spare bits is refused, not read as the same id)."""
    data = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    if _b64(data) != text:
        raise ValueError("not canonical base64url")
    return data


def seal_id(secret: bytes, turn_id: str, principal: str | None) -> str:
    body = _b64(json.dumps({"t": turn_id}, separators=(",", ":")).encode())
    mac = hmac.new(secret, f"{body}|{principal or ''}".encode(), hashlib.sha256).digest()[:18]
    return f"v1.{body}.{_b64(mac)}"


def open_id(secret: bytes, task_id: Any, principal: str | None) -> str | None:
    """The turn id inside a sealed task id, or None if it is malformed, forged or someone else's."""
    if not (isinstance(task_id, str) and task_id.isascii() and task_id.startswith("v1.") and task_id.count(".") == 2):
        return None
    _, body, mac = task_id.split(".")
    want = hmac.new(secret, f"{body}|{principal or ''}".encode(), hashlib.sha256).digest()[:18]
    try:
        if not hmac.compare_digest(want, _unb64(mac)):
            return None
        payload = json.loads(_unb64(body))  # parsed only once the MAC says we wrote it
    except (ValueError, binascii.Error):
        return None
    if not isinstance(payload, dict):
        return None
    turn = payload.get("t")
    return turn if isinstance(turn, str) else None


class LiveTurn:
    """One turn in this process: the backend's sink, the store's writer, the waiters' condition."""

    def __init__(self, store: AgentSessions, row: dict[str, Any],
                 on_run_end: Callable[[LiveTurn], None], on_change: Callable[[LiveTurn], None] | None = None) -> None:
        """on_run_end: the run ended or paused; on_change: anything a tasks/get would show changed (written)."""
        self.store = store
        self.id: str = row["id"]
        self.principal: str | None = row["principal"] or None
        self.session_id: str = row["session_id"]
        self.agent_task_id: str = row["agent_task_id"]
        self.status: str = row["status"]
        self.on_run_end = on_run_end
        self.on_change = on_change
        self.question: ab.Question | None = None
        self.end: ab.TurnEnd | None = None
        self.cond = threading.Condition()
        self.seq = 0  # the last event of the turn's log this process appended
        self.view = TurnView()
        self.queued = False
        self.slot = False  # it holds one of its agent's max_concurrent slots (a paused turn keeps it)

    # ---- TurnSink ----------------------------------------------------------------------------------
    def started(self, turn_id: str, context_id: str) -> None:
        self.store.update_turn(self.id, agent_task_id=turn_id)
        with self.cond:
            self.agent_task_id = turn_id
            self.cond.notify_all()

    def streamed(self, text: str) -> None:
        self._event({"text": text})

    def progress(self, text: str) -> None:
        self._event({"status": text})

    def note(self, text: str) -> None:
        """A status line of the gateway's own (queued, answered) on the turn's stream; nobody is pushed."""
        self._event({"status": text}, push=False)

    def _event(self, event: dict[str, Any], push: bool = True) -> None:
        seq = self.store.append_event(self.id, event)
        with self.cond:
            self.seq = max(self.seq, seq)
            self.view.fold(seq, event)
            self.cond.notify_all()
        if push:
            self.changed()

    def paused(self, question: ab.Question) -> None:
        """The agent asks while its run stays open: the task is input_required, the run (and its slot) goes on."""
        self._settle(ab.TurnEnd(ab.INPUT_REQUIRED, question.message, question))

    def ended(self, end: ab.TurnEnd) -> None:
        """The run is over (or paused as A2A pauses: its run over); a turn already finished (cancelled here)
        stays as it is, but its run's end still counts (the slot it held is given back)."""
        if not self.finished:
            self._settle(end)
        self.on_run_end(self)

    def _settle(self, end: ab.TurnEnd) -> None:
        status = STATUS.get(end.state, "completed")
        question = end.question if status == "input_required" else None
        payload = None if question is None else {"key": question.key, "message": question.message,
                                                 "payload": question.payload}
        self.store.update_turn(self.id, status=status, state=end.state, text=end.text, message=end.text,
                               question=payload)
        with self.cond:
            self.status, self.end, self.question = status, end, question
            self.cond.notify_all()
        self.changed()

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    # ---- waiting -----------------------------------------------------------------------------------
    def resume(self) -> bool:
        """The answer is on its way: working again. False (nothing changed) unless the turn was paused."""
        with self.cond:
            if self.status != "input_required":
                return False
            self.status, self.end, self.question = "working", None, None
        answered = "The answer was sent to the agent."
        self.store.update_turn(self.id, status="working", state=ab.WORKING, message=answered, question=None)
        self.note(answered)
        self.changed()
        return True

    def status_line(self, stored: str) -> str:
        """The running turn's statusMessage: what its stream says now, else `stored` (its row's message)."""
        return self.view.line if self.view.line is not None else (stored or WORKING_TEXT)

    def catch_up(self) -> None:
        """Fold the events other replicas appended to this turn's log since the view's last one."""
        while True:
            events = self.store.turn_events(self.id, self.view.seq, EVENTS_PAGE)
            with self.cond:
                for seq, event in events:
                    self.view.fold(seq, event)
            if len(events) < EVENTS_PAGE:
                return

    def wait(self, timeout: float, progress: Callable[[str], None], stop: Callable[[], bool], after: int = 0,
             on_stop: Callable[[Callable[[], None]], Callable[[], None]] | None = None,
             ) -> tuple[ab.TurnEnd | None, int]:
        """Block until this run ends (or pauses), `stop()` is true or `timeout` passes: (its end or None, the last
        event told). progress() gets each event after `after` in order — a piece of the reply, or a status line
        ("" as WORKING_TEXT) — replayed from the turn's log, on the waiting thread and outside the lock.
        `on_stop(wake)` registers `wake` to be called once stop() turns true (a request's cancel listener) and
        returns its remover; the wait is woken by events, the end, that, or the deadline, and never polls."""
        import time

        deadline = time.monotonic() + timeout
        told = after

        def wake() -> None:
            with self.cond:
                self.cond.notify_all()

        remove = on_stop(wake) if on_stop is not None else None
        try:
            while True:
                seen = told

                def woken() -> bool:
                    return self.seq > seen or self.end is not None or stop()  # noqa: B023 (read at once, in the loop)

                with self.cond:
                    self.cond.wait_for(woken, max(0.0, deadline - time.monotonic()))
                    end, seq = self.end, self.seq
                while told < seq:
                    events = self.store.turn_events(self.id, told, EVENTS_PAGE)
                    for number, event in events:
                        told = number
                        said = event.get("text", event.get("status"))
                        if isinstance(said, str):
                            progress(said or WORKING_TEXT)
                    if not events:  # the store dropped them (it is closing): nothing more to tell
                        told = seq
                if end is not None or time.monotonic() >= deadline or stop():
                    return end, told
        finally:
            if remove is not None:
                remove()

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


class Lane:
    """One agent's admission: at most `limit` turns hold a slot at once (running or paused), the rest wait
    in FIFO order."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0
        self.waiting: deque[tuple[LiveTurn, Callable[[], None]]] = deque()
        self.lock = threading.Lock()

    def submit(self, turn: LiveTurn, run: Callable[[], None]) -> None:
        with self.lock:
            if self.running < self.limit:
                self.running += 1
                turn.slot = start = True
            else:
                self.waiting.append((turn, run))
                turn.queued = True
                start = False
        if start:
            run()
        else:
            self._announce()

    def release(self, turn: LiveTurn) -> None:
        """The turn is over: give back the slot it held (if any, once) to the next waiting turn."""
        with self.lock:
            if not turn.slot:
                return
            turn.slot = False
            nxt = self.waiting.popleft() if self.waiting else None
            if nxt is None:
                self.running = max(0, self.running - 1)
            else:
                nxt[0].queued, nxt[0].slot = False, True
        if nxt is not None:
            nxt[0].note("")  # no longer queued: "The agent is working."
            self._announce()
            nxt[1]()

    def withdraw(self, turn: LiveTurn) -> bool:
        """Take a queued turn out (cancelled before it started); False if it was not waiting."""
        with self.lock:
            for item in list(self.waiting):
                if item[0] is turn:
                    self.waiting.remove(item)
                    turn.queued = False
                    break
            else:
                return False
        self._announce()
        return True

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return self.running, len(self.waiting)

    def _announce(self) -> None:
        with self.lock:
            queued = [turn for turn, _ in self.waiting]
        for position, turn in enumerate(queued, 1):
            turn.note(f"queued (position {position})")
