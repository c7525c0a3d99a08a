"""acp.client.session: one ACP session of a spawned agent — its prompt turns, their events and their result.

`Session.prompt(text)` sends `session/prompt` and yields typed events as the agent streams them;
the turn ends when the agent answers, and `session.result` then holds a `TurnResult` (stop
reason, text, tool calls, permission answers, files written). `Session.send(text, ...)` starts the
same turn with no thread to run it: its events and its end arrive on callbacks (SentPrompt), and
the caller keeps its deadline (turns.engine does, on one shared timer). Events that arrive between turns
are kept in `background`, those replayed by `session/load` in `replayed`. A turn is bounded: past
its deadline, or on `cancel()`, the session answers pending permission questions `cancelled`,
sends `session/cancel`, and if the agent has not answered within the grace period its process is
stopped (stdin closed, SIGTERM, SIGKILL of the group). Rules: speaks through the agent object's
connection only; imports `wire` and the acp modules below it (acp.client.client is seen through a Protocol).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.errors import AcpError, AgentCrashed, NotSupported, TurnTimeout
from mcp_agent_kit.acp.client.files import Roots
from mcp_agent_kit.acp.connection import Connection, ConnectionClosed
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError

MAX_BACKGROUND = 10_000


class Timeouts(Protocol):
    @property
    def turn(self) -> float: ...
    @property
    def cancel_grace(self) -> float: ...


class AcpAgent(Protocol):
    """What a session needs of its agent (acp.client.client.AcpAgent is the one implementation)."""

    generation: int

    @property
    def connection(self) -> Connection: ...
    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def running(self) -> bool: ...
    def log(self, message: str) -> None: ...
    def ensure_running(self, session: Session) -> None: ...
    def check_prompt(self, blocks: Sequence[dict[str, Any]]) -> None: ...
    def stop_process(self, reason: str) -> None: ...
    def call(self, method: str, params: Any) -> Any: ...
    def session_capability(self, name: str) -> bool: ...
    def forget(self, session: Session) -> None: ...


@dataclass
class TurnResult:
    """What one prompt turn produced (the `acp prompt --json` object is `to_json()`)."""

    session_id: str
    stop_reason: str
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    files_written: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # set when the agent broke the protocol (e.g. answered a cancel with end_turn)

    def to_json(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "stopReason": self.stop_reason, "text": self.text,
                "toolCalls": self.tool_calls, "permissions": self.permissions, "files_written": self.files_written}


class _OpenTurn:
    """The bookkeeping of the running turn; `cond` wakes its reader on an event, the answer or a cancel."""

    def __init__(self, listener: Callable[[ev.Event], None] | None = None,
                 cancel_listeners: Sequence[Callable[[], None]] = ()) -> None:
        self.listener = listener  # set for a prompt started with Session.send: events go to it, not the queue
        self.events: deque[ev.Event] = deque()
        self.cond = threading.Condition()
        self.text: list[str] = []
        self.tool_calls: dict[str, dict[str, Any]] = {}
        self.started: set[str] = set()
        self.permissions: list[dict[str, Any]] = []
        self.files_written: list[str] = []
        self.cancelled = threading.Event()
        self.cancel_listeners: list[Callable[[], None]] = list(cancel_listeners)
        self.cancel_sent_at: float | None = None
        self.answered = False  # the session/prompt answer is in (or the connection failed it)
        self.timed_out = False
        self.stopped = False

    def wake(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def on_answer(self) -> None:
        with self.cond:
            self.answered = True
            self.cond.notify_all()


class Session:
    """A session of `agent`; create it with `agent.new_session(...)` or `agent.load_session(...)`."""

    def __init__(self, agent: AcpAgent, session_id: str, cwd: str, *, mcp_servers: Sequence[dict[str, Any]] = (),
                 additional_directories: Sequence[str] = ()) -> None:
        self.agent, self.id, self.cwd = agent, session_id, cwd
        self.mcp_servers = list(mcp_servers)
        self.additional_directories = list(additional_directories)
        self.roots = Roots(cwd, additional_directories)
        self.generation = agent.generation
        self.modes: dict[str, Any] | None = None
        self.config_options: list[dict[str, Any]] | None = None
        self.models: dict[str, Any] | None = None  # the legacy `models` object some agents still send
        self.commands: list[dict[str, Any]] = []
        self.plan: list[dict[str, Any]] = []
        self.tool_calls: dict[str, dict[str, Any]] = {}
        self._started: set[str] = set()
        self.title: str | None = None
        self.usage: ev.Usage | None = None
        self.replayed: list[ev.Event] = []
        self.background: list[ev.Event] = []
        self.respawned: str | None = None  # "loaded" or "new" after the agent was restarted under this session
        self.result: TurnResult | None = None
        self._loading = False
        self._turn: _OpenTurn | None = None
        self._lock = threading.Lock()

    # -- what the agent tells us ---------------------------------------------------------------
    def apply_setup(self, result: Any) -> None:
        """Take modes, configOptions and the legacy models object from a session/new|load|resume result."""
        if not isinstance(result, dict):
            return
        if isinstance(result.get("modes"), dict):
            self.modes = result["modes"]
        if isinstance(result.get("configOptions"), list):
            self.config_options = result["configOptions"]
        if isinstance(result.get("models"), dict):
            self.models = result["models"]

    def deliver(self, event: ev.Event) -> None:
        """Record one event: update the session's state, then hand it to the turn, the replay or the background."""
        self._track(event)
        turn = self._turn
        if turn is not None:
            self._track_turn(turn, event)
            if turn.listener is not None:  # a sent prompt: straight on, on the thread that delivers it
                turn.listener(event)
                return
            with turn.cond:
                turn.events.append(event)
                turn.cond.notify_all()
        elif self._loading:
            self.replayed.append(event)
        elif len(self.background) < MAX_BACKGROUND:
            self.background.append(event)
        else:
            self.agent.log(f"session {self.id}: dropped a {event.kind} event (over {MAX_BACKGROUND} between turns)")

    def _track(self, event: ev.Event) -> None:
        handlers: dict[type[ev.Event], Callable[[Any], None]] = {
            ev.AvailableCommands: lambda e: setattr(self, "commands", e.commands),
            ev.Plan: lambda e: setattr(self, "plan", e.entries),
            ev.ConfigOptions: lambda e: setattr(self, "config_options", e.options),
            ev.ModeChanged: self._mode_changed,
            ev.SessionInfo: lambda e: setattr(self, "title", e.title if e.title is not None else self.title),
            ev.Usage: lambda e: setattr(self, "usage", e),
            ev.ToolCall: lambda e: merge_tool_call(self.tool_calls, self._started, e),
            ev.ToolCallUpdate: lambda e: merge_tool_call(self.tool_calls, self._started, e),
        }
        handler = handlers.get(type(event))
        if handler is not None:
            handler(event)

    def _mode_changed(self, event: ev.ModeChanged) -> None:
        if self.modes is not None:
            self.modes = {**self.modes, "currentModeId": event.mode_id}

    @staticmethod
    def _track_turn(turn: _OpenTurn, event: ev.Event) -> None:
        if isinstance(event, ev.AgentMessageChunk):
            turn.text.append(event.text)
        elif isinstance(event, ev.ToolCall):
            merge_tool_call(turn.tool_calls, turn.started, event)
        elif isinstance(event, ev.PermissionDecision):
            turn.permissions.append({"toolCallId": event.tool_call_id, "outcome": event.outcome,
                                     "optionId": event.option_id})
        elif isinstance(event, ev.FileWritten) and event.error is None:
            turn.files_written.append(event.path)

    @property
    def cancelling(self) -> threading.Event | None:
        """Set once the running turn is being cancelled (permission questions then answer `cancelled`)."""
        return self._turn.cancelled if self._turn is not None else None

    def on_cancel(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` once when the running turn is cancelled (by `cancel()`, or its deadline): at once
        when it already is; never between turns. Returns the function that removes it again."""
        turn = self._turn
        if turn is None:
            return lambda: None
        with turn.cond:
            fire = turn.cancelled.is_set()
            if not fire:
                turn.cancel_listeners.append(listener)
        if fire:
            listener()

        def remove() -> None:
            with turn.cond, contextlib.suppress(ValueError):
                turn.cancel_listeners.remove(listener)

        return remove

    # -- turns -------------------------------------------------------------------------------
    def prompt(self, content: str | Sequence[dict[str, Any]], *, timeout: float | None = None) -> Iterator[ev.Event]:
        """Run one turn, yielding its events; `self.result` holds the TurnResult once the iterator ends.

        Raises AgentCrashed when the agent dies during the turn (it is respawned on the next use),
        TurnTimeout when the turn outlives `timeout` (default: the agent's turn timeout), AcpError
        when the agent answers the prompt with an error. Waits on the turn's condition (an event, the
        answer, a cancel, or the next deadline wake it), never on a poll.
        """
        turn = _OpenTurn()
        blocks = self._open(content, turn)
        pending = self.agent.connection.send_request(wire.SESSION_PROMPT, {"sessionId": self.id, "prompt": blocks})
        pending.add_done_callback(turn.on_answer)
        deadline = time.monotonic() + (timeout if timeout is not None else self.agent.timeouts.turn)
        try:
            while True:
                event = self._next(turn, deadline)  # also while events keep coming: a flood must not outlive it
                if turn.stopped and turn.answered:
                    self._drop_rest(turn)
                    break
                if event is not None:
                    yield event
                elif turn.answered:
                    break
        finally:
            if not turn.answered:  # the caller stopped iterating: the turn must not run on unseen
                self.cancel()
                while not turn.answered:
                    self._next(turn, deadline, events=False)
            self._turn = None
        self.result = self._finish(turn, pending)

    def run(self, content: str | Sequence[dict[str, Any]], *, timeout: float | None = None,
            on_event: Callable[[ev.Event], None] | None = None) -> TurnResult:
        """Run one turn to its end (calling `on_event` for each event) and return its TurnResult."""
        for event in self.prompt(content, timeout=timeout):
            if on_event is not None:
                on_event(event)
        assert self.result is not None
        return self.result

    def send(self, content: str | Sequence[dict[str, Any]], *, on_event: Callable[[ev.Event], None],
             on_end: Callable[[SentPrompt], None], on_cancel: Callable[[], None] | None = None) -> SentPrompt:
        """Start one turn that no thread runs: `session/prompt` is sent and this returns at once.

        Each event goes to `on_event` on the thread that delivers it (the connection's reader for the
        agent's updates, in the order it sent them; a request's handler thread for what a request records),
        `on_cancel()` once when the turn is cancelled, and `on_end(prompt)` once when the answer is in (or
        the connection failed it), on the thread that settles it; `prompt.outcome()` then holds the
        TurnResult or raises as `prompt()` would. The caller keeps the turn's time: `expire()` at its
        deadline, `stop()` once the cancel grace has passed. Raises AcpError when the session is busy.
        """
        turn = _OpenTurn(on_event, [on_cancel] if on_cancel is not None else [])
        blocks = self._open(content, turn)
        sent = SentPrompt(self, turn, on_end)
        try:
            sent.pending = self.agent.connection.send_request(wire.SESSION_PROMPT,
                                                              {"sessionId": self.id, "prompt": blocks})
        except BaseException:
            self._turn = None
            raise
        sent.pending.add_done_callback(sent.answered)
        return sent

    def _open(self, content: str | Sequence[dict[str, Any]], turn: _OpenTurn) -> list[dict[str, Any]]:
        """Make `turn` this session's one open turn (the agent running, the prompt checked); its blocks."""
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        with self._lock:
            if self._turn is not None:
                raise AcpError(f"session {self.id} is already running a turn; wait for it or cancel it")
            self.agent.ensure_running(self)
            self.agent.check_prompt(blocks)
            self._turn = turn
        self.result = None
        return blocks

    def _next(self, turn: _OpenTurn, deadline: float, events: bool = True) -> ev.Event | None:
        """The next event (None: the turn was answered, or a deadline passed and was acted on)."""
        with turn.cond:
            while not (events and turn.events) and not turn.answered:
                wake_at = self._wake_at(turn, deadline)
                left = None if wake_at is None else wake_at - time.monotonic()
                if left is not None and left <= 0:
                    break
                turn.cond.wait(left)
            event = turn.events.popleft() if events and turn.events else None
        self._watch(turn, deadline)
        return event

    def _wake_at(self, turn: _OpenTurn, deadline: float) -> float | None:
        """When the turn's next escalation is due: its deadline, then the end of the cancel grace."""
        if turn.cancel_sent_at is None:
            return deadline
        return None if turn.stopped else turn.cancel_sent_at + self.agent.timeouts.cancel_grace

    def _drop_rest(self, turn: _OpenTurn) -> None:
        with turn.cond:
            dropped = len(turn.events)
            turn.events.clear()
        if dropped:
            self.agent.log(f"session {self.id}: {dropped} events queued when the agent was stopped were not delivered")

    def _watch(self, turn: _OpenTurn, deadline: float) -> None:
        now = time.monotonic()
        if turn.cancel_sent_at is None and now > deadline:
            turn.timed_out = True
            self.cancel()
        elif turn.cancel_sent_at is not None and not turn.stopped \
                and now > turn.cancel_sent_at + self.agent.timeouts.cancel_grace:
            turn.stopped = True
            self.agent.stop_process(f"it did not answer session/cancel within {self.agent.timeouts.cancel_grace:g} s")

    def cancel(self) -> None:
        """Cancel the running turn (a no-op between turns): see the module docstring for the escalation."""
        turn = self._turn
        if turn is None:
            return
        with turn.cond:
            if turn.cancel_sent_at is not None:
                return
            turn.cancelled.set()
            turn.cancel_sent_at = time.monotonic()
            listeners, turn.cancel_listeners = turn.cancel_listeners, []
            turn.cond.notify_all()  # the grace starts now: its reader computes the next wake
        with contextlib.suppress(ConnectionClosed):  # the agent is gone already: the turn ends on its own
            self.agent.connection.notify(wire.SESSION_CANCEL, {"sessionId": self.id})
        for listener in listeners:
            listener()

    def _finish(self, turn: _OpenTurn, pending: Any) -> TurnResult:
        try:
            response = pending.wait(0)
        except ConnectionClosed as exc:
            if turn.timed_out:
                raise TurnTimeout(f"the turn ran past its deadline; the agent ignored session/cancel and was "
                                  f"stopped ({exc})") from None
            if turn.stopped:
                return self._result(turn, wire.CANCELLED, {},
                                    f"the agent ignored session/cancel and was stopped: {exc}")
            raise AgentCrashed(f"the agent died during the turn: {exc}") from None
        except RpcError as exc:
            raise AcpError(f"session/prompt failed: {exc}") from None
        raw = response if isinstance(response, dict) else {}
        stop = raw.get("stopReason")
        if not isinstance(stop, str):
            raise AcpError(f"session/prompt answered without a stopReason: {str(response)[:200]}")
        if turn.timed_out:
            raise TurnTimeout(f"the turn ran past its deadline and was cancelled (the agent answered {stop!r})")
        note: str | None = None
        if turn.cancelled.is_set() and stop != wire.CANCELLED:
            note = f"the agent answered session/cancel with stopReason {stop!r} instead of 'cancelled'"
            stop = wire.CANCELLED
        elif stop not in wire.STOP_REASONS:
            note = f"the agent sent an unknown stopReason {stop!r}"
        return self._result(turn, stop, raw, note)

    def _result(self, turn: _OpenTurn, stop: str, raw: dict[str, Any], note: str | None) -> TurnResult:
        if note:
            self.agent.log(f"session {self.id}: {note}")
        tool_calls = [{"toolCallId": tid, "title": call.get("title"), "kind": call.get("kind"),
                       "status": call.get("status")} for tid, call in turn.tool_calls.items()]
        return TurnResult(self.id, stop, "".join(turn.text), tool_calls, turn.permissions, turn.files_written,
                          raw, note)

    # -- session methods ---------------------------------------------------------------------
    def set_config_option(self, config_id: str, value: Any) -> list[dict[str, Any]]:
        """Set a config option (`session/set_config_option`); falls back to `session/set_mode` for a
        `mode` option of an agent that offers modes but no config options. Returns the options now."""
        if self.config_options is None:
            if config_id == "mode" and self.modes is not None:
                self.set_mode(str(value))
                return []
            raise NotSupported(f"session {self.id} offers no config options (the agent sent no configOptions)")
        self.agent.ensure_running(self)
        result = self.agent.call(wire.SESSION_SET_CONFIG_OPTION,
                                 {"sessionId": self.id, "configId": config_id, "value": value})
        if isinstance(result, dict) and isinstance(result.get("configOptions"), list):
            self.config_options = result["configOptions"]
        return self.config_options or []

    def set_mode(self, mode_id: str) -> None:
        """`session/set_mode` (deprecated by ACP in favour of config options; only when the agent sent modes)."""
        if self.modes is None:
            raise NotSupported(f"session {self.id} has no modes (the agent sent no modes)")
        self.agent.ensure_running(self)
        self.agent.call(wire.SESSION_SET_MODE, {"sessionId": self.id, "modeId": mode_id})
        self.modes = {**self.modes, "currentModeId": mode_id}

    def close(self) -> None:
        """`session/close` where the agent advertises it; forgets the session either way."""
        try:
            if self.agent.session_capability("close") and self.agent.running:
                self.agent.call(wire.SESSION_CLOSE, {"sessionId": self.id})
        finally:
            self.agent.forget(self)


class SentPrompt:
    """A turn started with Session.send: its answer arrives on a callback, its time is kept by the caller."""

    def __init__(self, session: Session, turn: _OpenTurn, on_end: Callable[[SentPrompt], None]) -> None:
        self.session, self._turn, self._on_end = session, turn, on_end
        self.pending: Any = None
        self._result: TurnResult | None = None
        self._error: Exception | None = None

    @property
    def open(self) -> bool:
        """Whether the answer is still to come."""
        return not self._turn.answered

    @property
    def cancel_grace(self) -> float:
        return self.session.agent.timeouts.cancel_grace

    def answered(self) -> None:
        """The prompt's done callback: fold the answer and tell `on_end` (once)."""
        turn = self._turn
        with turn.cond:
            if turn.answered:
                return
            turn.answered = True
        if self.session._turn is turn:
            self.session._turn = None
        try:
            self._result = self.session.result = self.session._finish(turn, self.pending)
        except Exception as exc:  # AgentCrashed, TurnTimeout, AcpError, or an answer we cannot fold
            self._error = exc
        self._on_end(self)

    def outcome(self) -> TurnResult:
        """The TurnResult once answered; raises what `Session.prompt` would have raised."""
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise AcpError(f"session {self.session.id}: the turn has not ended yet")
        return self._result

    def cancel(self) -> None:
        """`session/cancel` of this turn (nothing once it has ended)."""
        if self.session._turn is self._turn:
            self.session.cancel()

    def expire(self) -> None:
        """The turn's deadline has passed: cancel it, and its end says it timed out (unless cancelled already)."""
        turn = self._turn
        with turn.cond:
            if turn.answered or turn.cancel_sent_at is not None:
                return
            turn.timed_out = True
        self.cancel()

    def stop(self) -> None:
        """The cancel grace has passed without an answer: stop the agent's process (the end follows). Blocks."""
        turn = self._turn
        with turn.cond:
            if turn.answered or turn.stopped:
                return
            turn.stopped = True
        self.session.agent.stop_process(f"it did not answer session/cancel within {self.cancel_grace:g} s")


def merge_tool_call(calls: dict[str, dict[str, Any]], started: set[str], event: ev.ToolCall) -> None:
    """Fold a tool_call / tool_call_update into `calls` (toolCallId -> fields), whatever order they came in.

    An update may arrive before its tool_call: the later tool_call then fills only the fields no
    update has set, so a `completed` status is never turned back into `pending`. A tool_call for an
    id that was already started (an agent reusing ids in a later turn) starts it afresh.
    """
    fields = {key: value for key, value in event.raw.items() if key not in ("sessionUpdate", "toolCallId")}
    existing = calls.get(event.tool_call_id)
    if isinstance(event, ev.ToolCallUpdate):
        if existing is None:
            calls[event.tool_call_id] = {"status": None, **fields}
        else:
            existing.update(fields)
        return
    fields.setdefault("status", "pending")
    if existing is None or event.tool_call_id in started:
        calls[event.tool_call_id] = fields
    else:
        for key, value in fields.items():
            if existing.get(key) is None:
                existing[key] = value
    started.add(event.tool_call_id)
