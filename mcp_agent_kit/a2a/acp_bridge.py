"""a2a.acp_bridge: an ACP v1 agent served as an A2A v1.0 agent (`mcp-agent-kit a2a --acp ... -- CMD [ARGS...]`).

The card comes from the agent's `agentInfo`; each A2A contextId is one ACP session (`session/new`
with the configured cwd on its first message). A message without a contextId starts a context whose
id *is* the new ACP session's id; a client-chosen contextId the bridge has not seen is mapped to a new
ACP session (whose own id differs). A message starts a task, which is one `session/prompt` driven by
the one turn engine (turns.engine, the agent's permission policy; this module only says its reports in
A2A terms). The agent's text streams as appends to one artifact; its tool activity becomes WORKING
status messages. A permission request that the `approve` policy does not answer itself pauses the turn:
the task is INPUT_REQUIRED with a question listing the option ids, told after every update the agent
sent before asking, and the job's work returns (a paused turn holds no A2A worker); the next message on
that task answers it (an option id, kind or name) straight to the waiting agent, and its job reports the
rest of the turn. Cancelling the task sends `session/cancel`. A job's work waits on one Event (the turn
paused or ended, or the job was cancelled), never on a poll. Rules: speaks ACP through mcp_agent_kit.acp
and turns only; the A2A side is the engine's Agent/Job API; no sockets here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.a2a.engine import Agent, Job, Work
from mcp_agent_kit.a2a.messages import new_id, text_part
from mcp_agent_kit.a2a.protocol import CANCELED, A2AError
from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.client import AcpAgent
from mcp_agent_kit.acp.client.errors import AcpError
from mcp_agent_kit.acp.client.permissions import PermissionOption, PermissionRequest
from mcp_agent_kit.acp.client.session import Session
from mcp_agent_kit.turns.engine import EngineTurn, TurnEngine, TurnOutcome, asked
from mcp_agent_kit.wire import acp as wire

END_GRACE_S = 60.0  # how long past the turn's timeout a job waits for the turn's end (the session ends it first)


class _Run:
    """One prompt in flight, as a TurnObserver: it reports to the task's current job, and keeps what comes while
    no job holds it (between a pause and the answer's job) for the next one."""

    def __init__(self, bridge: AcpBridge, task_id: str) -> None:
        self.bridge, self.task_id = bridge, task_id
        self.turn: EngineTurn | None = None
        self.question: PermissionRequest | None = None
        self.artifact_id = new_id()
        self.streamed = False
        self._job: Job | None = None
        self._backlog: list[Callable[[Job], bool]] = []
        self.cond = threading.Condition()  # wakes the job's work: it was let go, or cancelled

    def attach(self, job: Job) -> None:
        """`job` reports from now on (what came meanwhile first)."""
        with self.cond:
            self._job = job
            backlog, self._backlog = self._backlog, []
            for report in backlog:
                if report(job):
                    self._job = None
                    break

    def holds(self, job: Job) -> bool:
        return self._job is job

    def nudge(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def _report(self, report: Callable[[Job], bool]) -> None:
        """Report on the current job (or keep it for the next); `report` returns whether the job is let go."""
        with self.cond:
            job = self._job
            if job is None:
                self._backlog.append(report)
            elif report(job):
                self._job = None
                self.cond.notify_all()

    # ---- TurnObserver ----------------------------------------------------------------------------------
    def update(self, event: ev.Event) -> None:
        self._report(lambda job: self._event(job, event))

    def paused(self, question: PermissionRequest) -> None:
        self._report(lambda job: self._ask(job, question))

    def ended(self, end: TurnOutcome) -> None:
        self._report(lambda job: self._end(job, end))

    # ---- in A2A terms (under the lock, on the turn's thread) -----------------------------------------
    def _event(self, job: Job, event: ev.Event) -> bool:
        if isinstance(event, ev.AgentMessageChunk) and event.text:
            job.artifact([text_part(event.text)], artifact_id=self.artifact_id, name="response", append=self.streamed)
            self.streamed = True
        elif isinstance(event, ev.ToolCall) and event.title:
            job.working(f"Tool: {event.title}" + (f" ({event.status})" if event.status else ""))
        return False

    def _ask(self, job: Job, question: PermissionRequest) -> bool:
        self.question = question  # first: the answer may come as soon as the client sees the question
        options = ", ".join(o.option_id for o in question.options)
        job.ask(f"{asked(question)}. Answer with one of: {options}")
        return True

    def _end(self, job: Job, end: TurnOutcome) -> bool:
        self.bridge.forget(self.task_id)
        if end.stop_reason is None:
            job.fail(f"the ACP agent failed: {end.error}")
        elif end.stop_reason == wire.REFUSAL:
            job.fail("the ACP agent refused the prompt")
        elif not job.cancelled:
            job.status(CANCELED) if end.stop_reason == wire.CANCELLED else job.complete()
        return True


def _text(message: dict[str, Any]) -> str:
    parts = message.get("parts") or []
    return "".join(str(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


class AcpBridge(Agent):
    """The A2A face of one running ACP agent (see the module docstring); `turns` is the engine that agent
    was spawned with as its permission policy."""

    def __init__(self, acp: AcpAgent, turns: TurnEngine, cwd: str) -> None:
        info = (acp.info.agent_info if acp.info is not None else None) or {}
        self.name = str(info.get("name") or "acp-agent")
        self.description = str(info.get("title") or f"the ACP agent {self.name}")
        self.version = str(info.get("version") or "0")
        self.acp, self.turns, self.cwd = acp, turns, cwd
        self.contexts: dict[str, Session] = {}
        self.runs: dict[str, _Run] = {}  # A2A task id -> its prompt
        self._lock = threading.Lock()

    def forget(self, task_id: str) -> None:
        with self._lock:
            self.runs.pop(task_id, None)

    # ---- A2A --------------------------------------------------------------------------------------
    def accept(self, message: dict[str, Any], task: dict[str, Any] | None) -> Work:
        text = _text(message)
        if task is None:
            if not text.strip():
                raise A2AError("InvalidParams", detail="the message has no text for the agent")
            return lambda job: self._start(job, text)
        with self._lock:
            run = self.runs.get(str(task["id"]))
        question = run.question if run is not None else None
        if run is None or question is None:
            raise A2AError("UnsupportedOperation", f"Task {task['id']} has no pending permission question "
                                                   f"(the agent may have been restarted)")
        chosen = next((o for o in question.options
                       if text.strip().lower() in (o.option_id.lower(), o.kind.lower(), o.name.lower())), None)
        if chosen is None:
            ids = ", ".join(o.option_id for o in question.options)
            raise A2AError("InvalidParams", detail=f"answer with one of the option ids: {ids}")
        return lambda job: self._answer(job, run, chosen)

    def _session(self, context_id: str) -> Session:
        with self._lock:
            found = self.contexts.get(context_id)
        if found is None:
            found = self.acp.new_session(self.cwd)
            with self._lock:
                self.contexts[context_id] = found
        return found

    def _start(self, job: Job, text: str) -> None:
        try:
            if job.message.get("contextId") is None:  # a new context: its id is the ACP session's own id
                session = self.acp.new_session(self.cwd)
                with self._lock:
                    self.contexts[session.id] = session
                job.context_id = session.id  # the task does not exist yet: job.working() creates it in this context
            session = self._session(job.context_id)
        except AcpError as exc:
            job.fail(f"the ACP agent could not open a session: {exc}")
            return
        job.working()  # creates the task: its id keys the run
        run = _Run(self, str(job.task_id))
        with self._lock:
            self.runs[run.task_id] = run
        run.turn = self.turns.turn(lambda: session, text, run)
        run.attach(job)
        run.turn.start()
        self._follow(job, run)

    def _answer(self, job: Job, run: _Run, chosen: PermissionOption) -> None:
        job.working(f"answered: {chosen.option_id}")
        run.question = None
        run.attach(job)
        assert run.turn is not None
        run.turn.answer(chosen)
        self._follow(job, run)

    def _follow(self, job: Job, run: _Run) -> None:
        """Hold the job while the turn reports on it: until it pauses or ends. A cancel of the task wakes it to
        cancel the turn, whose end then lets the job go. Waits on the run's condition, bounded, never polls."""
        deadline = time.monotonic() + self.turns.timeout + END_GRACE_S
        remove = job.cancel.add_listener(run.nudge)
        cancel_sent = [False]

        def woken() -> bool:
            return not run.holds(job) or (job.cancelled and not cancel_sent[0])

        try:
            while True:
                with run.cond:
                    run.cond.wait_for(woken, max(0.0, deadline - time.monotonic()))
                    held = run.holds(job)
                if not held or time.monotonic() >= deadline:
                    return
                if job.cancelled and not cancel_sent[0] and run.turn is not None:
                    cancel_sent[0] = True
                    run.turn.cancel()  # `session/cancel`; a pending question is answered cancelled
        finally:
            remove()
