"""gateway.acp_backend: an ACP v1 agent as an AgentBackend — a session is an ACP session, a turn one `session/prompt`.

One agent process per configured entry, spawned on first use (`AcpAgent.spawn` + `initialize`), stopped
once it has been idle for the entry's `idle` seconds, and started again by the next turn (acp.client
respawns it and restores the session with `session/load` where the agent supports it); an entry with a
`url` connects to that remote agent instead (ACP's network transport), reconnecting the same way. The turns are
driven by the one turn engine (turns.engine, which is also the agent's permission policy); this module
only says them in the gateway's terms: each message chunk as it came (never the text so far: the whole
is the turn's end), its plan and tool activity as status lines; a permission request the entry's
`approve` policy (`all`, `reads`, `ask`) does not answer itself pauses the turn (`paused`) with a
Question whose payload is the permission options, told after every update the agent sent before asking;
the prompt stays open, reporting to the same sink, until the answer (handed straight to the waiting
request), a cancel or the turn's timeout. An agent that dies mid-turn (paused or not) fails that turn
with a clear message; the next turn starts a fresh process. Rules: speaks ACP through mcp_agent_kit.acp
and turns only; knows no MCP, no store.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.client import AcpAgent, Timeouts
from mcp_agent_kit.acp.client.errors import AcpError
from mcp_agent_kit.acp.client.permissions import PermissionOption, PermissionRequest
from mcp_agent_kit.acp.client.session import Session
from mcp_agent_kit.gateway import agent_backend as ab
from mcp_agent_kit.gateway.agents_config import AgentSpec, remote_headers
from mcp_agent_kit.gateway.config import ConfigError
from mcp_agent_kit.turns.clock import CLOCK
from mcp_agent_kit.turns.engine import EngineTurn, TurnEngine, TurnOutcome, asked
from mcp_agent_kit.wire import acp as wire

log = logging.getLogger("mcp_agent_kit.gateway")
# ACP stopReason -> the turn's A2A state (anything else the agent ends with is a completed turn)
STOP_STATES = {wire.CANCELLED: ab.CANCELED, wire.REFUSAL: ab.REJECTED}


def _option_json(option: PermissionOption) -> dict[str, str]:
    return {"optionId": option.option_id, "name": option.name, "kind": option.kind}


def _question(request: PermissionRequest) -> ab.Question:
    """The pause a permission request makes: its options are the question's payload."""
    return ab.Question(key=f"permission-{request.tool_call_id or uuid.uuid4()}", message=asked(request),
                       payload={"options": [_option_json(o) for o in request.options]})


def progress_of(event: ev.Event, calls: dict[str, dict[str, Any]]) -> str | None:
    """A status line for one update that is not reply text (None: nothing worth telling); `calls` are the
    session's merged tool calls."""
    if isinstance(event, ev.Plan):
        marks = {"completed": "[x]", "in_progress": "[>]"}
        return "Plan: " + "; ".join(f"{marks.get(str(e.get('status')), '[ ]')} {e.get('content', '')}"
                                    for e in event.entries)
    if isinstance(event, ev.ToolCall):
        merged = calls.get(event.tool_call_id, {})
        what, status = event.title or merged.get("title") or f"tool call {event.tool_call_id}", merged.get("status")
        return f"Tool: {what}" + (f" ({status})" if status else "")
    return None


def _headers(spec: AgentSpec) -> dict[str, str]:
    """A remote entry's headers (its token read from the environment now); AcpError when it is unset."""
    try:
        return remote_headers(spec, os.environ)
    except ConfigError as exc:
        raise AcpError(str(exc)) from None


class AcpBackend:
    """One ACP agent (see the module docstring)."""

    def __init__(self, spec: AgentSpec) -> None:
        self.spec = spec
        self.agent: AcpAgent | None = None
        self.error: str | None = None
        self.sessions: dict[str, Session] = {}  # gateway session id -> its ACP session (whose id may change)
        self.turns: dict[str, EngineTurn] = {}  # gateway session id -> its running (or paused) turn
        self.engine = TurnEngine(spec.approve, spec.timeout)
        self.last_used = time.monotonic()
        self._lock = threading.Lock()
        self._closed = False
        self._idle_timer: Callable[[], None] | None = None  # drops the pending idle check (None: none pending)

    # ---- the process ---------------------------------------------------------------------------
    def _command_found(self) -> bool:
        if self.spec.url:
            return True  # a remote agent: reachable or not, its first use tells
        command = self.spec.command
        return os.path.isfile(command) if os.sep in command else shutil.which(command) is not None

    def _agent(self) -> AcpAgent:
        """The running agent, spawned and initialized on first use (a dead one is respawned by acp.client)."""
        with self._lock:
            self.last_used = time.monotonic()
            if self.agent is not None:
                self._arm_idle()
                return self.agent
            try:
                timeouts = Timeouts(turn=self.spec.timeout, permission=self.spec.timeout)
                if self.spec.url:
                    agent = AcpAgent.connect(self.spec.url, _headers(self.spec), cwd=self.spec.cwd,
                                             policy=self.engine, log=log.info, timeouts=timeouts)
                else:
                    agent = AcpAgent.spawn(self.spec.command, self.spec.args, env={**os.environ, **self.spec.env},
                                           cwd=self.spec.cwd, policy=self.engine, log=log.info,
                                           sandbox=self.spec.sandbox, timeouts=timeouts)
                try:
                    agent.initialize()
                    self._check_servers(agent)
                except AcpError:
                    agent.close()
                    raise
            except AcpError as exc:
                self.error = f"agent {self.spec.ref} could not be started: {exc}"
                raise AcpError(self.error) from None
            self.agent, self.error = agent, None
            self._arm_idle()
            return agent

    def _check_servers(self, agent: AcpAgent) -> None:
        """An http/sse `mcpServers` entry the agent's mcpCapabilities do not allow is a ready error naming it."""
        for server in self.spec.mcp_servers:
            kind = server.get("type")
            if kind is not None and agent.capability("mcpCapabilities", str(kind)) is not True:
                raise AcpError(f"acp mcpServers entry {server['name']!r} is {kind}, but the agent does not advertise "
                               f"mcpCapabilities.{kind}; remove the entry or give a stdio server instead")

    def _arm_idle(self) -> None:
        """(Under the lock) check for idleness when the last use is `idle` seconds old, on the turns' one clock;
        a use meanwhile moves the check on, a turn's end arms it again. No thread waits for it."""
        if self._idle_timer is None and not self._closed and self.agent is not None:
            self._idle_timer = CLOCK.at(self.last_used + self.spec.idle, self._idle_check)

    def _idle_check(self) -> None:
        with self._lock:
            self._idle_timer = None
            agent = self.agent
            due = time.monotonic() >= self.last_used + self.spec.idle
            if self.engine.busy or agent is None:  # the turn's end arms it again
                return
            if not due:
                self._arm_idle()
                return
        if agent.running:
            log.info("agent %s idle for %gs: stopping its process", self.spec.ref, self.spec.idle)
            # the next turn respawns it and loads the session; stopping blocks: not on the shared clock
            threading.Thread(target=agent.close, name=f"acp-idle-{self.spec.ref}", daemon=True).start()

    def refresh(self) -> None:
        return None  # spawned lazily: readiness is whether the command can be started

    def info(self) -> ab.AgentInfo:
        agent, error = self.agent, self.error
        described = agent.info.agent_info if agent is not None and agent.info is not None else None
        description = self.spec.description or str((described or {}).get("title") or "")
        can_fork = agent is not None and agent.session_capability("fork")
        if error is None and agent is None and not self._command_found():
            error = f"agent {self.spec.ref}: command {self.spec.command!r} not found"
        return ab.AgentInfo(description, [], error is None, error or "", can_fork)

    # ---- sessions ------------------------------------------------------------------------------
    def _cwd(self) -> str:
        return self.spec.cwd or os.getcwd()

    def new_session(self) -> str:
        try:
            session = self._agent().new_session(self._cwd(), self.spec.mcp_servers)
        except AcpError as exc:
            raise ab.SessionRefused(str(exc)) from None
        with self._lock:
            self.sessions[session.id] = session
        return session.id

    def _session(self, gateway_id: str) -> Session:
        """The ACP session behind a gateway session (after a gateway restart: loaded where supported)."""
        agent = self._agent()
        with self._lock:
            found = self.sessions.get(gateway_id)
        if found is not None:
            return found
        if agent.capability("loadSession") is True:
            session = agent.load_session(gateway_id, self._cwd(), self.spec.mcp_servers)
        else:
            raise AcpError(f"agent {self.spec.ref} lost session {gateway_id} (it was restarted and does not "
                           f"support session/load); start a new session")
        with self._lock:
            self.sessions[gateway_id] = session
        return session

    # ---- turns ---------------------------------------------------------------------------------
    def start_turn(self, session: str, message: str, message_id: str, references: list[str],
                   sink: ab.TurnSink) -> None:
        turn = self.engine.turn(lambda: self._session(session), message, _Said(self, session, sink))
        with self._lock:
            self.turns[session] = turn
        sink.started(turn.id, session)
        turn.start()

    def _ended(self, gateway_id: str, sink: ab.TurnSink, end: TurnOutcome) -> None:
        with self._lock:
            if self.turns.get(gateway_id) is not None and self.turns[gateway_id].state == "ended":
                del self.turns[gateway_id]
            self.last_used = time.monotonic()
            self._arm_idle()
        if end.stop_reason is not None:
            said = ab.TurnEnd(STOP_STATES.get(end.stop_reason, ab.COMPLETED), end.text)
        elif end.crashed:
            said = ab.TurnEnd(ab.FAILED, f"agent {self.spec.ref} died during the turn ({end.error}); the next turn "
                                         f"starts it again")
        else:
            said = ab.TurnEnd(ab.FAILED, f"agent {self.spec.ref} failed: {end.error}")
        sink.ended(said)  # also one that ended while paused (the agent died, the question timed out)

    def answer(self, session: str, turn_id: str, question: ab.Question, action: str, content: dict[str, Any],
               sink: ab.TurnSink) -> None:
        """The choice goes straight to the permission request the paused turn's agent waits on; the turn's own
        run reports on (to the sink it started with, which is this one)."""
        with self._lock:
            turn = self.turns.get(session)
        if turn is None or turn.id != turn_id:  # its run ended (and said so) or ran in another process
            sink.ended(ab.TurnEnd(ab.FAILED, f"agent {self.spec.ref}: the paused turn is gone (the agent or the "
                                             f"gateway was restarted)"))
            return
        options = {str(o.get("optionId")): PermissionOption(str(o.get("optionId")), str(o.get("name")),
                                                            str(o.get("kind")))
                   for o in question.payload.get("options", []) if isinstance(o, dict)}
        reject = next((o for o in options.values() if o.kind in (wire.REJECT_ONCE, wire.REJECT_ALWAYS)), None)
        choices = {"accept": options.get(str(content.get("response"))), "decline": reject, "cancel": None}
        turn.answer(choices[action])

    def cancel(self, session: str, turn_id: str) -> None:
        with self._lock:
            turn = self.turns.get(session)
        if turn is not None and turn.id == turn_id:
            turn.cancel()  # `session/cancel`; a pending permission question is answered cancelled

    def fork(self, session: str, through_turn: str) -> str | None:
        """`session/fork` of the session as it is now (the tools fork at checkpoint time, see agent_tools)."""
        try:
            agent = self._agent()
            if not agent.session_capability("fork"):
                raise ab.SessionRefused(f"agent {self.spec.ref} cannot fork sessions: it does not advertise "
                                        f"session/fork (agentCapabilities.sessionCapabilities.fork)")
            source = self._session(session)
            agent.ensure_running(source)  # a stopped (idle) process is started again and the source loaded
            forked = agent.fork_session(source)
        except AcpError as exc:
            raise ab.SessionRefused(f"agent {self.spec.ref} could not fork session {session}: {exc}") from None
        with self._lock:
            self.sessions[forked.id] = forked
        return forked.id

    def close(self) -> None:
        with self._lock:
            self._closed = True
            drop, self._idle_timer = self._idle_timer, None
            agent, self.agent = self.agent, None
        if drop is not None:
            drop()
        if agent is not None:
            agent.close()


class _Said:
    """One turn's reports in the gateway's terms (a turns.engine TurnObserver over an ab.TurnSink)."""

    def __init__(self, backend: AcpBackend, gateway_id: str, sink: ab.TurnSink) -> None:
        self.backend, self.gateway_id, self.sink = backend, gateway_id, sink

    def update(self, event: ev.Event) -> None:
        if isinstance(event, ev.AgentMessageChunk):
            if event.text:
                self.sink.streamed(event.text)
            return
        with self.backend._lock:
            session = self.backend.sessions.get(self.gateway_id)
        said = progress_of(event, session.tool_calls if session is not None else {})
        if said:
            self.sink.progress(said)

    def paused(self, question: PermissionRequest) -> None:
        self.sink.paused(_question(question))

    def ended(self, end: TurnOutcome) -> None:
        self.backend._ended(self.gateway_id, self.sink, end)
