"""turns.engine: one ACP prompt turn driven for any surface — running ⇄ paused(question) → ended.

A TurnEngine is the permission policy of one AcpAgent (given as `policy=` when it is spawned; a
permissions.LaterPolicy: asked with a reply callback, it answers later without holding a thread) and makes the
turns on that agent's sessions: `engine.turn(open_session, text, sink)` then `turn.start()` runs one
`session/prompt` and reports to the sink, in the order the agent sent them: each `session/update` (`update`), a
permission request the `approve` setting does not answer itself (`paused`), and exactly one `ended`. A pause is
a state, not an end: the prompt stays open, the turn keeps whatever slot its surface gave it and records the
question's reply callback, and the agent's request stays unanswered (a line_peer Deferred of the connection)
until `turn.answer(option)` hands it the choice; a cancel of the turn (or its deadline, or its end) answers it
cancelled. The question travels through the session's own event stream (ev.PermissionAsked), so the sink hears
it after every update the agent sent before asking, and a question settled before it is told (cancelled
meanwhile) is never told. Questions are put one at a time: one asked while another is open waits its turn.

A turn is driven by callbacks, never by a thread of its own (acp.client.session's `Session.send`):
  - start: one short-lived thread opens the session (that may spawn the agent and wait for its answers,
    and start() may be called on the connection's reader thread) and sends `session/prompt`; it ends then.
  - running: the agent's updates reach the sink on the connection's reader thread, in the order it sent
    them; what a request records (a permission decision, a file written) on that request's handler thread.
    Sink calls are serialised per turn (one at a time) and none follows `ended`.
  - paused: nothing waits. The agent's `session/request_permission` handler returned at once (its reply is
    deferred); the reply callback is all the turn keeps. An answer, a cancel or the end hands the reply to the
    shared clock thread (turns.clock), which writes the agent's answer, delivers the decision (`update`) and
    puts the next waiting question: never on the caller's thread, which may hold a lock of its surface that a
    sink call takes (a lock-order inversion with the sink calls of the reader thread).
  - the deadline, and the cancel grace after a cancel, are entries on the one shared clock thread
    (turns.clock); the deadline cancels the turn (its open question is answered cancelled); only an agent
    that ignores `session/cancel` past the grace gets a short-lived thread that stops its process.
  - ended: reported on the thread that settles the prompt (the reader, on the agent's answer; whoever
    closed the connection otherwise).
So per turn: no thread while it runs or is paused, and none per pause either (the one clock thread serves every
turn). Rules: speaks ACP through mcp_agent_kit.acp only; knows no surface (MCP, A2A), no store.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.errors import AcpError, AgentCrashed
from mcp_agent_kit.acp.client.permissions import SELF_APPROVES, PermissionOption, PermissionRequest, Reply
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
        self._saying = threading.RLock()  # one sink call at a time (reentrant: a sink may cancel the turn)
        self._state = RUNNING
        self._question: PermissionRequest | None = None
        self._reply: Reply | None = None  # the open question's: it answers the agent
        self._waiting: deque[tuple[PermissionRequest, Reply]] = deque()  # asked while a question is open
        self._asking = False  # a question is open, or its answer is on its way and the next not yet put
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
            if self._state != PAUSED or self._reply is None:
                return False
            reply, self._reply, self._question, self._state = self._reply, None, None, RUNNING
        self.engine.clock.at(time.monotonic(), lambda: self._answered(reply, option))
        return True

    def cancel(self) -> None:
        """`session/cancel`; a pending question is answered cancelled. The turn still ends once, as the agent says."""
        with self._lock:
            if self._state == ENDED:
                return
            self._cancelled = True
            sent, replies = self._sent, self._drop_questions()
        self._refuse(replies)
        if sent is not None:
            sent.cancel()

    # ---- the agent's side: its permission request, from the connection's handler thread ----------------
    def ask(self, request: PermissionRequest, reply: Reply) -> None:
        """Pause the turn with `request` (or queue it behind the open question) and return at once; `reply`
        is called once: with the answer, or None on a cancel, the deadline or the end."""
        session = self.session
        with self._lock:
            refused = self._state == ENDED or self._cancelled or session is None \
                or time.monotonic() >= self._deadline
            if not refused and self._asking:
                self._waiting.append((request, reply))
                return
            if not refused:
                self._asking = True
                self._question, self._reply, self._state = request, reply, PAUSED
        if refused or session is None:
            reply(None)
            return
        self._tell(session, request)

    def _tell(self, session: Session, request: PermissionRequest) -> None:
        # through the session's own stream, not straight to the sink: it serialises the question with the
        # updates, every one the agent sent before asking reaching the sink first
        session.deliver(ev.PermissionAsked(request.session_id, "permission_asked", request.raw, request))

    def _answered(self, reply: Reply, option: PermissionOption | None) -> None:
        """On the clock thread: answer the agent, then put the next waiting question (if any)."""
        try:
            reply(option)
        finally:
            with self._lock:
                session, ended = self.session, self._state == ENDED
                nxt = self._waiting.popleft() if self._waiting and not ended else None
                if nxt is None:
                    self._asking = False
                else:
                    self._question, self._reply, self._state = nxt[0], nxt[1], PAUSED
            if nxt is not None and session is not None:
                self._tell(session, nxt[0])

    def _drop_questions(self) -> list[Reply]:
        """(Under the lock) take the open question and the waiting ones: they are to be answered cancelled."""
        replies = [reply for _, reply in self._waiting]
        if self._reply is not None:
            replies.insert(0, self._reply)
        self._waiting.clear()
        self._reply = self._question = None
        self._asking = False
        if self._state == PAUSED:
            self._state = RUNNING
        return replies

    def _refuse(self, replies: list[Reply]) -> None:
        """Answer `replies` cancelled, on the clock thread (never the caller's: see the module docstring)."""
        def refuse() -> None:
            for reply in replies:
                try:
                    reply(None)
                except Exception as exc:  # one failing reply must not keep the others' agents waiting
                    log.warning("answering a permission question cancelled failed: %r", exc)

        if replies:
            self.engine.clock.at(time.monotonic(), refuse)

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
        """`session/cancel` went out (a cancel or the deadline): open questions are answered cancelled, and an
        agent still silent after the grace is stopped."""
        with self._lock:
            if self._state == ENDED:
                return
            self._cancelled = True
            sent, replies = self._sent, self._drop_questions()
            if sent is not None:
                self._timers.append(self.engine.clock.after(sent.cancel_grace, lambda: self._escalate(sent)))
        self._refuse(replies)

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
            replies = self._drop_questions()
            self._state = ENDED
            timers, self._timers = self._timers, []
        for drop in timers:
            drop()
        self._refuse(replies)
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

    def decide_later(self, request: PermissionRequest, reply: Reply) -> None:
        """The agent's permission request (a permissions.LaterPolicy: acp.client calls it on the request's handler
        thread, which it does not hold): answered at once when `approve` decides it, else the turn of its
        session pauses on it; a request of no turn of ours is rejected."""
        if SELF_APPROVES[self.approve](request):
            reply(request.allow())
            return
        with self._lock:
            found = next((t for t in self._turns if t.session is not None and t.session.id == request.session_id),
                         None)
        if found is None:
            reply(request.reject())
        else:
            found.ask(request, reply)
