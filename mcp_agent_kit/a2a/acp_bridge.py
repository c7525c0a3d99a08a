"""a2a.acp_bridge: an ACP v1 agent served as an A2A v1.0 agent (`mcp-agent-kit a2a --acp ... -- CMD [ARGS...]`).

The card comes from the agent's `agentInfo`; each A2A contextId is one ACP session (`session/new`
with the configured cwd on its first message). A message without a contextId starts a context whose
id *is* the new ACP session's id; a client-chosen contextId the bridge has not seen is mapped to a new
ACP session (whose own id differs). A message starts a task, which is one
`session/prompt`. The agent's text streams as appends to one artifact; its plan and tool activity
become WORKING status messages. A `session/request_permission` that the `approve` policy does not
answer itself makes the task INPUT_REQUIRED with a question listing the option ids; the next
message on that task answers it (an option id, kind or name). Cancelling the task sends
`session/cancel`. Rules: speaks ACP through mcp_agent_kit.acp only; the A2A side is the engine's
Agent/Job API; no sockets here.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any

from mcp_agent_kit.a2a.engine import Agent, Job, Work
from mcp_agent_kit.a2a.messages import new_id, text_part
from mcp_agent_kit.a2a.protocol import CANCELED, A2AError
from mcp_agent_kit.acp import events as ev
from mcp_agent_kit.acp.client import AcpAgent
from mcp_agent_kit.acp.errors import AcpError
from mcp_agent_kit.acp.permissions import SELF_APPROVES, PermissionOption, PermissionRequest
from mcp_agent_kit.acp.session import Session
from mcp_agent_kit.wire import acp as wire

POLL_S = 0.1


@dataclass
class _Run:
    """One prompt in flight: what it reported (a queue the task's current job drains) and its pending question."""

    session: Session
    signals: queue.Queue[tuple[str, Any]] = field(default_factory=queue.Queue)
    answered: threading.Event = field(default_factory=threading.Event)
    choice: PermissionOption | None = None
    question: PermissionRequest | None = None
    artifact_id: str = field(default_factory=new_id)
    streamed: bool = False


def _text(message: dict[str, Any]) -> str:
    parts = message.get("parts") or []
    return "".join(str(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


class AcpBridge(Agent):
    """The A2A face of one running ACP agent (see the module docstring)."""

    def __init__(self, acp: AcpAgent, cwd: str, approve: str, turn_timeout: float = 1800.0) -> None:
        info = (acp.info.agent_info if acp.info is not None else None) or {}
        self.name = str(info.get("name") or "acp-agent")
        self.description = str(info.get("title") or f"the ACP agent {self.name}")
        self.version = str(info.get("version") or "0")
        self.acp, self.cwd, self.approve, self.turn_timeout = acp, cwd, approve, turn_timeout
        self.contexts: dict[str, Session] = {}
        self.runs: dict[str, _Run] = {}  # A2A task id -> its prompt
        self._lock = threading.Lock()
        acp.policy = self

    # ---- permission policy (acp.client's thread) ---------------------------------------------------
    def decide(self, request: PermissionRequest) -> PermissionOption | None:
        if SELF_APPROVES[self.approve](request):
            return request.allow()
        with self._lock:
            run = next((r for r in self.runs.values() if r.session.id == request.session_id), None)
        if run is None:
            return request.reject()
        run.choice, run.question = None, request
        run.answered.clear()
        # through the session's own stream, not straight to the job: every update the agent sent before
        # asking is still queued there, and must reach the A2A client before INPUT_REQUIRED does
        run.session.deliver(ev.PermissionAsked(request.session_id, "permission_asked", request.raw, request))
        run.answered.wait(self.turn_timeout)
        return run.choice

    # ---- A2A --------------------------------------------------------------------------------------
    def accept(self, message: dict[str, Any], task: dict[str, Any] | None) -> Work:
        text = _text(message)
        if task is None:
            if not text.strip():
                raise A2AError("InvalidParams", detail="the message has no text for the agent")
            return lambda job: self._start(job, text)
        with self._lock:
            run = self.runs.get(str(task["id"]))
        if run is None or run.question is None:
            raise A2AError("UnsupportedOperation", f"Task {task['id']} has no pending permission question "
                                                   f"(the agent may have been restarted)")
        chosen = next((o for o in run.question.options
                       if text.strip().lower() in (o.option_id.lower(), o.kind.lower(), o.name.lower())), None)
        if chosen is None:
            ids = ", ".join(o.option_id for o in run.question.options)
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
            run = _Run(self._session(job.context_id))
        except AcpError as exc:
            job.fail(f"the ACP agent could not open a session: {exc}")
            return
        job.working()  # creates the task: its id keys the run
        with self._lock:
            self.runs[str(job.task_id)] = run
        threading.Thread(target=self._prompt, args=(run, text), name="acp-bridge-turn", daemon=True).start()
        self._pump(job, run)

    def _answer(self, job: Job, run: _Run, chosen: PermissionOption) -> None:
        job.working(f"answered: {chosen.option_id}")
        run.question, run.choice = None, chosen
        run.answered.set()
        self._pump(job, run)

    def _prompt(self, run: _Run, text: str) -> None:
        try:
            result = run.session.run(text, timeout=self.turn_timeout, on_event=lambda e: run.signals.put(
                ("ask", e.request) if isinstance(e, ev.PermissionAsked) else ("event", e)))
            run.signals.put(("end", result.stop_reason))
        except AcpError as exc:
            run.signals.put(("failed", str(exc)))

    def _pump(self, job: Job, run: _Run) -> None:
        """Report the prompt's signals on this job until it ends or asks (then the next message resumes)."""
        cancel_sent = False
        while True:
            if job.cancelled and not cancel_sent:
                cancel_sent = True
                run.session.cancel()  # `session/cancel`; a pending question is answered cancelled
                run.answered.set()
            try:
                kind, value = run.signals.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if kind == "event":
                self._event(job, run, value)
            elif kind == "ask":
                options = ", ".join(o.option_id for o in value.options)
                job.ask(f"The agent asks permission for: {value.title or 'a tool call'}. "
                        f"Answer with one of: {options}")
                return
            else:
                self._end(job, run, kind, value)
                return

    def _event(self, job: Job, run: _Run, event: ev.Event) -> None:
        if isinstance(event, ev.AgentMessageChunk) and event.text:
            job.artifact([text_part(event.text)], artifact_id=run.artifact_id, name="response", append=run.streamed)
            run.streamed = True
        elif isinstance(event, ev.ToolCall) and event.title:
            job.working(f"Tool: {event.title}" + (f" ({event.status})" if event.status else ""))

    def _end(self, job: Job, run: _Run, kind: str, value: str) -> None:
        with self._lock:
            self.runs.pop(str(job.task_id), None)
        if kind == "failed":
            job.fail(f"the ACP agent failed: {value}")
        elif value == wire.REFUSAL:
            job.fail("the ACP agent refused the prompt")
        elif not job.cancelled:
            job.status(CANCELED) if value == wire.CANCELLED else job.complete()
