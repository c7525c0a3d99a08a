"""gateway.agent_turns: one turn while it runs (LiveTurn), the per-agent queue (Lane), sealed task ids.

A LiveTurn is the TurnSink a backend reports to: it writes each change to the store and wakes
whoever waits on it — the completion object a blocking invoke_agent waits on (a Condition; the
waiting worker holds no other resource, and the turn itself runs on the backend's one reader
thread). A Lane admits at most `max_concurrent` runs of one agent (a run: a turn's start, or its
resumption after an answer) and queues the rest in order, each showing `queued (position N)`.
Task ids are `v1.` + base64url(JSON) + `.` + an HMAC bound to the principal, so a caller cannot
forge or reuse another's. Rules: no MCP methods and no tools here; statuses follow core.task_table.
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
from mcp_agent_kit.gateway.agent_sessions import SessionStore
from mcp_agent_kit.gateway.agent_store import SharedSessionStore

# agent end state -> MCP task status
STATUS = {ab.INPUT_REQUIRED: "input_required", ab.COMPLETED: "completed", ab.CANCELED: "cancelled",
          ab.FAILED: "failed", ab.REJECTED: "failed", ab.AUTH_REQUIRED: "failed"}
WORKING_TEXT = "The agent is working."


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

    def __init__(self, store: SessionStore | SharedSessionStore, row: dict[str, Any],
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
        self.progress_seq = 0  # how many progress texts arrived
        self.progress_text = ""  # the latest
        self.queued = False

    # ---- TurnSink ----------------------------------------------------------------------------------
    def started(self, turn_id: str, context_id: str) -> None:
        self.store.update_turn(self.id, agent_task_id=turn_id)
        with self.cond:
            self.agent_task_id = turn_id
            self.cond.notify_all()

    def progress(self, text: str) -> None:
        self.store.update_turn(self.id, message=text)
        with self.cond:
            self.progress_seq += 1
            self.progress_text = text
            self.cond.notify_all()
        self.changed()

    def ended(self, end: ab.TurnEnd) -> None:
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
        self.on_run_end(self)

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    # ---- waiting -----------------------------------------------------------------------------------
    def resume(self) -> None:
        with self.cond:
            self.status, self.end, self.question = "working", None, None
        self.store.update_turn(self.id, status="working", state=ab.WORKING, message="The answer was sent to the agent.",
                               question=None)
        self.changed()

    def wait(self, timeout: float, progress: Callable[[str], None], stop: Callable[[], bool]) -> ab.TurnEnd | None:
        """Block until this run ends (or pauses); progress() gets the latest progress text (updates that came
        faster than the caller took them are coalesced), on the waiting thread and outside the lock."""
        import time

        deadline = time.monotonic() + timeout
        told = 0
        while True:
            with self.cond:
                if self.progress_seq == told and self.end is None:
                    self.cond.wait(min(0.25, max(0.0, deadline - time.monotonic())))
                end, seq, text = self.end, self.progress_seq, self.progress_text
            if seq != told:
                told = seq
                progress(text)
            if end is not None or time.monotonic() >= deadline or stop():
                return end

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


class Lane:
    """One agent's admission: at most `limit` runs at once, the rest in FIFO order."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0
        self.waiting: deque[tuple[LiveTurn, Callable[[], None]]] = deque()
        self.lock = threading.Lock()

    def submit(self, turn: LiveTurn, run: Callable[[], None]) -> None:
        with self.lock:
            if self.running < self.limit:
                self.running += 1
                start = True
            else:
                self.waiting.append((turn, run))
                turn.queued = True
                start = False
        if start:
            run()
        else:
            self._announce()

    def done(self) -> None:
        """A run ended (or paused): start the next waiting one."""
        with self.lock:
            nxt = self.waiting.popleft() if self.waiting else None
            if nxt is None:
                self.running = max(0, self.running - 1)
            else:
                nxt[0].queued = False
        if nxt is not None:
            nxt[0].store.update_turn(nxt[0].id, message="")  # no longer queued: "The agent is working."
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
            turn.store.update_turn(turn.id, message=f"queued (position {position})")
