"""turns.engine: one ACP prompt turn driven for any surface — running ⇄ paused(question) → ended.

A TurnEngine is the permission policy of one AcpAgent (given as `policy=` when it is spawned; it is
`inline`: asked on the request's own handler thread) and makes the turns on that agent's sessions:
`engine.turn(open_session, text, sink)` then `turn.start()` runs one `session/prompt` and reports to the
sink, in the order the agent sent them: each `session/update` (`update`), a permission request the
`approve` setting does not answer itself (`paused`), and exactly one `ended`. A pause is a state, not
an end: the prompt stays open, the turn keeps whatever slot its surface gave it, and the agent's request
waits on an Event bounded by the turn's deadline until `turn.answer(option)` hands it the choice; a
cancel of the turn (or its deadline) wakes it too, answered cancelled. The question travels through the
session's own event stream (ev.PermissionAsked), so the sink hears it after every update the agent sent
before asking, and a question settled before it is told (cancelled meanwhile) is never told.

A turn is driven by callbacks, never by a thread of its own (acp.client.session's `Session.send`):
  - start: one short-lived thread opens the session (that may spawn the agent and wait for its answers,
    and start() may be called on the connection's reader thread) and sends `session/prompt`; it ends then.
  - running: the agent's updates reach the sink on the connection's reader thread, in the order it sent
    them; what a request records (a permission decision, a file written) on that request's handler thread.
    Sink calls are serialised per turn (one at a time) and none follows `ended`.
  - paused: the agent's `session/request_permission` occupies one of the connection's request-handler
    threads (the connection answers requests from handler threads), waiting on an Event that the answer,
    a cancel or the deadline sets; the turn itself holds no thread.
  - the deadline, and the cancel grace after a cancel, are entries on the one shared clock thread
    (turns.clock); only an agent that ignores `session/cancel` past the grace gets a short-lived thread that
    stops its process.
  - ended: reported on the thread that settles the prompt (the reader, on the agent's answer; whoever
    closed the connection otherwise).
So per turn: no thread while it runs or is paused; per pause: one connection handler thread (the agent's
request). Rules: speaks ACP through mcp_agent_kit.acp only; knows no surface (MCP, A2A), no store.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.errors import AcpError, AgentCrashed
from mcp_agent_kit.acp.client.permissions import SELF_APPROVES, PermissionOption, PermissionRequest
from mcp_agent_kit.acp.client.session import SentPrompt, Session
from mcp_agent_kit.turns.clock import CLOCK, Clock

log = logging.getLogger("mcp_agent_kit.turns")
RUNNING, PAUSED, ENDED = "running", "paused", "ended"


@dataclass(frozen=True)
class TurnOutcome:
    """How a turn ended: the agent's stopReason, or None with `error` when it failed."""

    stop_reason: str | None
    text: str
    error: str = ""
    crashed: bool = False  # the agent died during the turn (its next use starts it again)


class TurnObserver(Protocol):
    """Where a turn reports, one call at a time, from the thread that delivered it (see the module docstring)."""

    def update(self, event: ev.Event) -> None:
        """One `session/update` of the turn (and the session's own records: permission decisions, files)."""

    def paused(self, question: PermissionRequest) -> None:
        """The agent asks: the turn waits for `EngineTurn.answer` (or a cancel) with its prompt open."""

    def ended(self, end: TurnOutcome) -> None:
        """Exactly once: the prompt's answer, or why the turn failed."""


def asked(request: PermissionRequest) -> str:
    """The question a permission request puts, in words (every surface says it the same way)."""
    return f"The agent asks permission for: {request.title or 'a tool call'}"


class EngineTurn:
    """One prompt on one session (see the module docstring); made by TurnEngine.turn."""

    def __init__(self, engine: TurnEngine, open_session: Callable[[], Session], content: str, sink: TurnObserver,
                 timeout: float) -> None:
        self.id = str(uuid.uuid4())
        self.engine, self.sink, self.timeout = engine, sink, timeout
        self.session: Session | None = None
        self._open, self._content = open_session, content
        self._deadline = time.monotonic() + timeout
        self._lock = threading.Lock()
        self._asking = threading.Lock()  # one question at a time: a second waits for the first to be settled
        self._saying = threading.RLock()  # one sink call at a time (reentrant: a sink may cancel the turn)
        self._state = RUNNING
        self._question: PermissionRequest | None = None
        self._answered = threading.Event()
        self._choice: PermissionOption | None = None
        self._cancelled = False
        self._sent: SentPrompt | None = None
        self._timers: list[Callable[[], None]] = []  # the clock entries to drop at the end
        self._told_end = False

    @property
    def state(self) -> str:
        return self._state

    @property
    def question(self) -> PermissionRequest | None:
        """The pending question while paused."""
        return self._question

    def start(self) -> EngineTurn:
        """Open the session and send the prompt on a short-lived thread (opening may start the agent and wait on
        its answers; the caller may be the connection's reader); everything after arrives on callbacks."""
        self._deadline = time.monotonic() + self.timeout
        threading.Thread(target=self._begin, name="acp-turn-start", daemon=True).start()
        return self

    def answer(self, option: PermissionOption | None) -> bool:
        """Hand the waiting agent `option` (None: cancelled); False when no question is pending."""
        with self._lock:
            if self._state != PAUSED:
                return False
            self._choice, self._state = option, RUNNING
            self._answered.set()
        return True

    def cancel(self) -> None:
        """`session/cancel`; a pending question is answered cancelled. The turn still ends once, as the agent says."""
        with self._lock:
            if self._state == ENDED:
                return
            self._cancelled = True
            sent, self._choice = self._sent, None
            if self._state == PAUSED:
                self._state = RUNNING
            self._answered.set()
        if sent is not None:
            sent.cancel()

    # ---- the agent's side: its permission request, on the connection's handler thread ----------------
    def ask(self, request: PermissionRequest) -> PermissionOption | None:
        """Pause the turn with `request` and wait (bounded by the turn's deadline) for the answer or a cancel."""
        with self._asking:
            session = self.session
            with self._lock:
                if self._state == ENDED or self._cancelled or session is None:
                    return None
                answered = self._answered = threading.Event()
                self._question, self._choice, self._state = request, None, PAUSED
            remove = session.on_cancel(answered.set)
            try:
                # through the session's own stream, not straight to the sink: it serialises the question
                # with the updates, every one the agent sent before asking reaching the sink first
                session.deliver(ev.PermissionAsked(request.session_id, "permission_asked", request.raw, request))
                answered.wait(max(0.0, self._deadline - time.monotonic()))
            finally:
                remove()
                with self._lock:
                    choice = self._choice if answered.is_set() else None
                    self._question = None
                    if self._state == PAUSED:
                        self._state = RUNNING
            return choice

    # ---- the start (its own short-lived thread) and the callbacks --------------------------------------
    def _begin(self) -> None:
        try:
            session = self._open()
            with self._lock:
                self.session = session
                cancelled = self._cancelled
            if cancelled:
                self._end(TurnOutcome(None, "", "the turn was cancelled before it started"))
                return
            sent = session.send(self._content, on_event=self._event, on_end=self._answer_in,
                                on_cancel=self._cancel_sent)
        except Exception as exc:
            self._end(_failed(exc))
            return
        with self._lock:
            self._sent = sent
            cancelled, ended = self._cancelled, self._state == ENDED
            if not ended:
                self._timers.append(self.engine.clock.at(self._deadline, sent.expire))
        if cancelled and not ended:
            sent.cancel()  # cancelled while the prompt was being sent

    def _cancel_sent(self) -> None:
        """`session/cancel` went out (a cancel or the deadline): an agent still silent after the grace is stopped."""
        with self._lock:
            sent = self._sent
            if sent is None or self._state == ENDED:
                return
            self._timers.append(self.engine.clock.after(sent.cancel_grace, lambda: self._escalate(sent)))

    @staticmethod
    def _escalate(sent: SentPrompt) -> None:
        if sent.open:  # stopping the process blocks: not on the shared clock's thread
            threading.Thread(target=sent.stop, name="acp-turn-stop", daemon=True).start()

    def _answer_in(self, sent: SentPrompt) -> None:
        try:
            result = sent.outcome()
            end = TurnOutcome(result.stop_reason, result.text)
        except Exception as exc:
            end = _failed(exc)
        self._end(end)

    def _end(self, end: TurnOutcome) -> None:
        with self._lock:
            self._state, self._question = ENDED, None
            self._answered.set()
            timers, self._timers = self._timers, []
        for drop in timers:
            drop()
        self.engine.forget(self)
        with self._saying:
            if self._told_end:
                return
            self._told_end = True
            self.sink.ended(end)

    def _event(self, event: ev.Event) -> None:
        with self._saying:
            if self._told_end:
                return
            if isinstance(event, ev.PermissionAsked):
                with self._lock:  # one settled before it got here (a cancel, its deadline) is never told
                    pending = self._state == PAUSED and event.request is self._question
                if pending:
                    self.sink.paused(event.request)
            else:
                self.sink.update(event)


def _failed(exc: Exception) -> TurnOutcome:
    """Why a turn failed, from what opening, sending or its answer raised."""
    if isinstance(exc, AgentCrashed):
        return TurnOutcome(None, "", str(exc), crashed=True)
    if not isinstance(exc, AcpError):  # an agent that sends something we cannot fold: the turn fails, we go on
        log.warning("an ACP turn failed: %r", exc)
    return TurnOutcome(None, "", str(exc) or type(exc).__name__)


class TurnEngine:
    """The turns of one ACP agent and its permission policy (see the module docstring)."""

    inline = True  # decide() waits only on the turn's own Event, which a cancel of the turn wakes

    def __init__(self, approve: str = "ask", timeout: float = 1800.0, clock: Clock = CLOCK) -> None:
        """approve: `all` allows every request itself, `reads` the read-only tool kinds, `ask` none
        (acp.client.permissions.SELF_APPROVES); timeout: a turn's default bound in seconds; clock: the timer thread
        the turns' deadlines run on (the process's one, shared)."""
        self.approve, self.timeout, self.clock = approve, timeout, clock
        self._turns: list[EngineTurn] = []
        self._lock = threading.Lock()

    def turn(self, open_session: Callable[[], Session], content: str, sink: TurnObserver,
             timeout: float | None = None) -> EngineTurn:
        """A turn of the session `open_session()` returns (called on the start's thread); `start()` runs it."""
        made = EngineTurn(self, open_session, content, sink, self.timeout if timeout is None else timeout)
        with self._lock:
            self._turns.append(made)
        return made

    def forget(self, turn: EngineTurn) -> None:
        with self._lock:
            if turn in self._turns:
                self._turns.remove(turn)

    @property
    def busy(self) -> bool:
        """Whether a turn is running or paused."""
        with self._lock:
            return bool(self._turns)

    def decide(self, request: PermissionRequest) -> PermissionOption | None:
        """The agent's permission request (acp.client calls it on the request's handler thread)."""
        if SELF_APPROVES[self.approve](request):
            return request.allow()
        with self._lock:
            found = next((t for t in self._turns if t.session is not None and t.session.id == request.session_id),
                         None)
        return request.reject() if found is None else found.ask(request)
