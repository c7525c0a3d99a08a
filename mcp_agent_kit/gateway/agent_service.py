"""gateway.agent_service: agents, sessions and turns behind the agent tools — the one owner of their state.

It holds the configured AgentBackends (A2A and ACP), the sessions (agent_store.AgentSessions), each agent's Lane and the
LiveTurns of this process; with a retention (`max_age` seconds) it sweeps sessions unused that long from
the store at start and every SWEEP_S, never one whose turn runs here. `begin` starts (or, for a retried
`message_id`, finds) a turn; `result` shapes a turn the way invoke_agent returns it (kagent's fields);
`render` shapes it as a task (a running one's statusMessage folded from its stream, never its whole
text). Rules: no MCP methods or tool schemas (gateway.agent_tools); backends only through the
AgentBackend protocol.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from mcp_agent_kit.gateway import agent_backend as ab
from mcp_agent_kit.gateway.a2a_backend import A2ABackend
from mcp_agent_kit.gateway.acp_backend import AcpBackend
from mcp_agent_kit.gateway.agent_store import AgentSessions, StoreFull
from mcp_agent_kit.gateway.agent_turns import WORKING_TEXT, Lane, LiveTurn, seal_id
from mcp_agent_kit.gateway.agents_config import AgentSpec

log = logging.getLogger("mcp_agent_kit.gateway")
REFRESH_S = 30.0
POLL_MS = 1000
ACP_MISSING = "ACP backend not available in this build"
CANCEL_WAIT_S = 10.0
SWEEP_S = 3600.0


def stamp(epoch: float) -> str:
    """An epoch time as the store's timestamps are written (core.task_table.now)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ServiceError(Exception):
    """A service failure the caller sees as an isError tool result."""


class Unavailable:
    """An agent whose kind this build cannot drive yet (ACP): listed, never ready, says why."""

    def __init__(self, spec: AgentSpec, reason: str) -> None:
        self.spec = spec
        self.reason = reason

    def info(self) -> ab.AgentInfo:
        return ab.AgentInfo(self.spec.description, [], False, self.reason)

    def refresh(self) -> None:
        return None

    def new_session(self) -> str:
        raise ServiceError(f"agent {self.spec.ref}: {self.reason}")

    def start_turn(self, session: str, message: str, message_id: str, references: list[str],
                   sink: ab.TurnSink) -> None:
        sink.ended(ab.TurnEnd(ab.FAILED, f"agent {self.spec.ref}: {self.reason}"))

    def answer(self, session: str, turn_id: str, question: ab.Question, action: str, content: dict[str, Any],
               sink: ab.TurnSink) -> None:
        sink.ended(ab.TurnEnd(ab.FAILED, f"agent {self.spec.ref}: {self.reason}"))

    def cancel(self, session: str, turn_id: str) -> None:
        return None

    def fork(self, session: str, through_turn: str) -> str | None:
        return None

    def close(self) -> None:
        return None


# agent kind -> its AgentBackend; a kind this build cannot drive is listed as Unavailable.
KINDS: dict[str, Callable[[AgentSpec], ab.AgentBackend]] = {"a2a": A2ABackend, "acp": AcpBackend}


def make_backend(spec: AgentSpec) -> ab.AgentBackend:
    kind = KINDS.get(spec.kind)
    return kind(spec) if kind is not None else Unavailable(spec, ACP_MISSING)


class AgentService:
    """See the module docstring."""

    def __init__(self, specs: dict[str, AgentSpec], store: AgentSessions,
                 backends: dict[str, ab.AgentBackend] | None = None, *, max_age: float | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        """max_age: seconds a session may go unused before `sweep` deletes it (None: kept); clock: epoch now."""
        self.specs = specs
        self.max_age, self.clock = max_age, clock
        self.store = store
        self.backends = backends if backends is not None else {ref: make_backend(s) for ref, s in specs.items()}
        self.lanes = {ref: Lane(spec.max_concurrent) for ref, spec in specs.items()}
        self.live: dict[str, LiveTurn] = {}
        self._changed_listeners: list[Callable[[LiveTurn], None]] = []  # add_listener("turn_changed", ...)
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def start(self, *, follow: bool = True) -> None:
        """Fetch every card now (concurrently), then refresh them in the background."""
        if self.backends:
            with ThreadPoolExecutor(max_workers=min(16, len(self.backends))) as pool:
                list(pool.map(lambda b: b.refresh(), self.backends.values()))
        self.sweep()
        if follow:
            threading.Thread(target=self._follow, name="mcp-gateway-agents", daemon=True).start()

    def _follow(self) -> None:
        swept = time.monotonic()
        while not self._closed.wait(REFRESH_S):
            for backend in self.backends.values():
                backend.refresh()
            if time.monotonic() - swept >= SWEEP_S:
                swept = time.monotonic()
                self.sweep()

    def sweep(self) -> list[str]:
        """Delete the sessions unused for max_age (with their turns, checkpoints and keys); their ids."""
        if self.max_age is None:
            return []
        with self._lock:
            running = {live.session_id for live in self.live.values()}
        gone = self.store.sweep(stamp(self.clock() - self.max_age), running)
        if gone:
            log.info("deleted %d agent session(s) unused for %g days", len(gone), self.max_age / 86400)
        return gone

    def close(self) -> None:
        self._closed.set()
        for backend in self.backends.values():
            backend.close()

    # ---- lookups ----------------------------------------------------------------------------------
    def backend(self, ref: str) -> ab.AgentBackend:
        found = self.backends.get(ref)
        if found is None:
            raise ServiceError(f"unknown agent {ref}; list_agents shows the agents")
        return found

    def session(self, session_id: Any, principal: str | None) -> dict[str, Any]:
        row = self.store.session(session_id, principal)
        if row is None:
            raise ServiceError(f"unknown session {session_id!r}; list_sessions shows yours")
        return row

    # ---- turns --------------------------------------------------------------------------------------
    def _live(self, row: dict[str, Any]) -> LiveTurn:
        """The turn's LiveTurn; kept while the turn is unfinished, a throwaway view of a finished one."""
        with self._lock:
            live = self.live.get(row["id"])
            if live is None:
                live = LiveTurn(self.store, row, self._run_ended, self._changed)
                question = row.get("question")
                if question:
                    live.question = ab.Question(**json.loads(question))
                if not live.finished:
                    self.live[row["id"]] = live
            return live

    def add_listener(self, kind: str, listener: Callable[[LiveTurn], None]) -> Callable[[], None]:
        """Call `listener(live)` whenever a turn's task view changes ("turn_changed", the one kind:
        agent_tools pushes notifications/tasks); returns the function that removes it again."""
        if kind != "turn_changed":
            raise ValueError(f"unknown listener kind {kind!r}; use turn_changed")
        self._changed_listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):  # removed already
                self._changed_listeners.remove(listener)

        return remove

    def _changed(self, live: LiveTurn) -> None:
        for listener in tuple(self._changed_listeners):
            try:
                listener(live)
            except Exception as exc:  # a push is best effort: the turn goes on, the other listeners hear
                log.warning("pushing task %s failed: %r", live.id, exc)

    def _run_ended(self, live: LiveTurn) -> None:
        """A run ended: a finished turn gives back its slot; a paused one (A2A's pause ends its run) keeps it."""
        if live.finished:
            with self._lock:
                self.live.pop(live.id, None)
            self._release(live)

    def _release(self, live: LiveTurn) -> None:
        session = self.store.session_any(live.session_id)
        if session is not None:
            self.lanes[session["agent"]].release(live)

    def _cancelled_here(self, live: LiveTurn, message: str) -> None:
        """Record a cancel here (the turn was queued, or paused: an A2A pause has no run to report it) and give
        back its slot (an ACP run's own cancelled end then changes nothing)."""
        self.store.update_turn(live.id, status="cancelled", state=ab.CANCELED, message=message, question=None)
        with live.cond:
            live.status, live.question, live.end = "cancelled", None, ab.TurnEnd(ab.CANCELED, message)
            live.cond.notify_all()
        self._changed(live)
        with self._lock:
            self.live.pop(live.id, None)
        self._release(live)

    def begin(self, principal: str | None, arguments: dict[str, Any]) -> LiveTurn:
        """Start the turn invoke_agent asks for (or find the one a retried message_id started)."""
        try:
            return self._begin(principal, arguments)
        except (StoreFull, ab.SessionRefused) as exc:
            raise ServiceError(str(exc)) from None

    def _begin(self, principal: str | None, arguments: dict[str, Any]) -> LiveTurn:
        message = arguments.get("message")
        agent, session_id = arguments.get("agent"), arguments.get("session_id")
        if not isinstance(message, str) or not message.strip():
            raise ServiceError("message is required")
        if (agent is None) == (session_id is None):
            raise ServiceError("give exactly one of agent ({namespace, name}) or session_id")
        message_id = arguments.get("message_id")
        if agent is not None:
            ref = f"{agent.get('namespace') or 'default'}/{agent.get('name')}"
            backend = self.backend(ref)
            key = f"msg:{ref}:{message_id}" if message_id else None
            session, created = self.store.create_session(principal, ref, backend.new_session, key)
        else:
            session, created = self.session(session_id, principal), False
            backend = self.backend(session["agent"])
        if message_id and not created:
            earlier = self.store.turn_by_message(session["id"], message_id)
            if earlier is not None:
                return self._live(earlier)  # the retry of a call that already started its turn
        head = self.store.head(session["id"])
        if head is not None and head["status"] in ("working", "input_required"):
            raise ServiceError(f"session {session['id']} already has a turn in progress (task {head['agent_task_id']}"
                               f", {head['status']}); wait for it, answer it or cancel it first")
        refs = self.store.take_refs(session["id"])
        row = self.store.add_turn(session["id"], principal, message_id or str(uuid.uuid4()))
        live = self._live(row)
        mid = row["message_id"]
        self.lanes[session["agent"]].submit(
            live, lambda: backend.start_turn(session["id"], message, mid, refs, live))
        return live

    def resume(self, live: LiveTurn, action: str, content: dict[str, Any]) -> None:
        """Hand the answer to the paused turn's agent at once: the turn kept its slot, so nothing queues it (a
        turn paused before this process held it, after a restart, takes a slot like a start). A second
        answer to the same pause changes nothing."""
        session = self.store.session_any(live.session_id)
        assert session is not None
        question, backend = live.question, self.backend(session["agent"])
        if question is None or not live.resume():
            return
        answer = partial(backend.answer, session["id"], live.agent_task_id, question, action, content, live)
        if live.slot:
            answer()
        else:
            self.lanes[session["agent"]].submit(live, answer)

    def cancel(self, live: LiveTurn) -> None:
        session = self.store.session_any(live.session_id)
        assert session is not None
        if self.lanes[session["agent"]].withdraw(live):  # it held no slot: nothing to give back
            self._cancelled_here(live, "cancelled before it started")
            return
        with live.cond:  # a turn the agent has not yet accepted has no id to cancel: wait for it, bounded
            live.cond.wait_for(lambda: bool(live.agent_task_id) or live.end is not None, timeout=CANCEL_WAIT_S)
        if live.end is not None and live.status != "input_required":
            return  # it ended meanwhile
        paused = live.status == "input_required"
        try:
            self.backend(session["agent"]).cancel(session["id"], live.agent_task_id)
        except Exception as exc:
            raise ServiceError(f"the agent could not cancel the turn: {exc}") from exc
        if paused:  # nothing is reading this task: record the cancel ourselves
            self._cancelled_here(live, "cancelled")

    def paused_turn(self, turn_id: Any, principal: str | None) -> LiveTurn:
        """The caller's turn an input_required round is about (its id came back sealed in requestState)."""
        row = self.store.turn(turn_id, principal) if isinstance(turn_id, str) else None
        if row is None:
            raise ServiceError("the paused turn of this round is gone")
        return self._live(row)

    def find(self, turn_id: str, principal: str | None) -> tuple[dict[str, Any], LiveTurn]:
        row = self.store.turn(turn_id, principal)
        if row is None:
            raise ServiceError("unknown task")
        live = self._live(row)
        if row["status"] == "working":
            live.catch_up()  # what the replica running it (this one or another) streamed since we last looked
        return row, live

    # ---- shapes ----------------------------------------------------------------------------------
    def structured(self, row: dict[str, Any]) -> dict[str, Any]:
        return {"session_id": row["session_id"], "task_id": row["agent_task_id"], "context_id": row["session_id"],
                "state": row["state"], "text": row["text"]}

    def result(self, row: dict[str, Any]) -> dict[str, Any]:
        """The CallToolResult of a finished turn (the same for a blocking call and a task's result)."""
        body = self.structured(row)
        return {"content": [{"type": "text", "text": json.dumps(body)}], "structuredContent": body,
                "isError": row["state"] in ab.ERROR_STATES}

    def render(self, row: dict[str, Any], principal: str | None, live: LiveTurn | None = None) -> dict[str, Any]:
        """The turn as a task; a running turn's statusMessage is what `live` (its stream folded) says now."""
        from mcp_agent_kit.gateway.agent_questions import elicitation

        message = row["message"] or WORKING_TEXT
        if live is not None and row["status"] == "working":
            message = live.status_line(row["message"])

        task: dict[str, Any] = {
            "taskId": seal_id(self.store.secret, row["id"], principal), "status": row["status"],
            "createdAt": row["created"], "lastUpdatedAt": row["updated"], "ttlMs": None, "pollIntervalMs": POLL_MS,
            "statusMessage": message,
        }
        if row["status"] == "input_required" and row.get("question"):
            question = ab.Question(**json.loads(row["question"]))
            task["inputRequests"] = {question.key: elicitation(question)}
        elif row["status"] in ("completed", "failed"):
            task["result"] = self.result(row)
            if row["status"] == "failed":
                task["error"] = {"code": -32603, "message": row["text"] or "the agent's turn failed"}
        return task

    def agent_entry(self, ref: str) -> dict[str, Any]:
        spec, info = self.specs[ref], self.backend(ref).info()
        running, queued = self.lanes[ref].counts()
        entry: dict[str, Any] = {"namespace": spec.namespace, "name": spec.name, "description": info.description,
                                 "skills": info.skills, "ready": info.ready, "running": running, "queued": queued}
        if not info.ready:
            entry["reason"] = info.reason
        return entry
