"""gateway.agent_backend: the AgentBackend protocol every agent kind behind the gateway implements, and its events.

Two kinds implement it today: gateway.a2a_backend (an A2A v1.0 agent over HTTP) and
gateway.acp_backend (an ACP v1 agent process over stdio), and agent_service.Unavailable stands in
for an agent it cannot drive; gateway.agent_service drives them only through this protocol, so they
are interchangeable. A turn runs off the caller's thread: `start_turn` (and `answer`, resuming a
paused turn) returns at once and reports through a TurnSink — `started`, the reply as it streams
(`streamed`: each new piece, never the text so far), status lines (`progress`), a Question when the
agent pauses (`paused`: the run stays open; or an INPUT_REQUIRED TurnEnd: the run is over and the
answer is a new one), and exactly one TurnEnd. The turn states are A2A TaskState names, the
vocabulary of both kinds. Rules: plain data and protocols only; nothing here knows a wire, a store
or MCP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# The A2A TaskState names are the vocabulary of every backend's turn states (ACP maps onto them).
WORKING = "TASK_STATE_WORKING"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"
CANCELED = "TASK_STATE_CANCELED"
REJECTED = "TASK_STATE_REJECTED"
AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"
ERROR_STATES = frozenset({FAILED, REJECTED, AUTH_REQUIRED})


class SessionRefused(Exception):
    """new_session/fork could not make a session (e.g. the agent process cannot be started); says why."""


@dataclass(frozen=True)
class AgentInfo:
    """What list_agents shows of one agent right now."""

    description: str
    skills: list[dict[str, Any]]
    ready: bool
    reason: str = ""  # why not ready
    can_fork: bool = False  # forks natively (ACP `session/fork`); A2A forks by referenceTaskIds instead


@dataclass(frozen=True)
class Question:
    """The agent paused: `key` is stable for this pause, `message` is readable, `payload` is what the
    backend needs to answer in its own terms (A2A: the HITL request; ACP: the permission options)."""

    key: str
    message: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnEnd:
    """The turn is over (or paused: state INPUT_REQUIRED with a question)."""

    state: str  # an A2A TaskState name
    text: str
    question: Question | None = None


class TurnSink(Protocol):
    """Where a running turn reports; called from the backend's own thread."""

    def started(self, turn_id: str, context_id: str) -> None:
        """The agent accepted the turn: its id (A2A task id / ACP prompt id) and session (contextId)."""

    def streamed(self, text: str) -> None:
        """The next piece of the agent's reply as it streams (only the new text: the whole is the TurnEnd's)."""

    def progress(self, text: str) -> None:
        """A readable status line: the agent's plan, its tool activity or its status message."""

    def paused(self, question: Question) -> None:
        """The agent asks `question` while its turn stays open (ACP: the prompt waits on a permission request):
        the turn keeps running, `answer` hands the reply to the waiting agent, and the same run goes on
        reporting here until its one `ended`. Reported after every update the agent sent before asking."""

    def ended(self, end: TurnEnd) -> None:
        """Exactly once per run (a start_turn, or an answer to an INPUT_REQUIRED end; an answer to a `paused`
        turn goes on in its open run): finished, failed, cancelled, or INPUT_REQUIRED with a question (a pause
        that ends the run: A2A's, whose answer is a new request)."""


class AgentBackend(Protocol):
    """One configured agent. An implementation owns its connection (A2A: HTTP; ACP: the process).

    The ACP implementation (gateway.acp_backend) maps: `new_session` -> `session/new` with the
    configured cwd (and MCP servers to hand on), `start_turn` -> one `session/prompt`, its
    `session/update`s -> `streamed` / `progress`, a `session/request_permission` the policy must ask about ->
    `paused(Question(key, message, {"options": [...]}))` (the prompt stays open, the run goes on),
    `answer` -> the chosen option id handed to the waiting request (decline/cancel -> the reject or
    cancelled outcome), `cancel` -> `session/cancel`, `fork` -> `session/fork` when advertised
    (else SessionRefused). At most one turn per session at a time; `idle` stops the process and the
    next turn respawns it with `session/load`.
    """

    def info(self) -> AgentInfo:
        """Readiness, description and skills now (cheap: cached, refreshed in the background)."""

    def refresh(self) -> None:
        """Fetch the card / probe the process again (may block up to the backend's timeout)."""

    def new_session(self) -> str:
        """A fresh session id (A2A: a new contextId; ACP: `session/new`)."""

    def start_turn(self, session: str, message: str, message_id: str, references: list[str],
                   sink: TurnSink) -> None:
        """Send `message` in `session`; returns at once, the turn reports to `sink`.
        `references`: earlier turn ids the first turn of a fork points at (A2A referenceTaskIds)."""

    def answer(self, session: str, turn_id: str, question: Question, action: str, content: dict[str, Any],
               sink: TurnSink) -> None:
        """Resume a paused turn with the caller's elicitation result (already validated): a `paused` one's open
        run gets it at once and reports on; an ended one's answer is a new run reporting to `sink`."""

    def cancel(self, session: str, turn_id: str) -> None:
        """Ask the agent to stop the turn (A2A CancelTask; ACP `session/cancel`)."""

    def fork(self, session: str, through_turn: str) -> str | None:
        """A native fork of the session as it is now: the new session's id. None: this kind forks another way
        (A2A: a new contextId with referenceTaskIds); SessionRefused: this agent cannot fork, saying why."""

    def close(self) -> None:
        """Stop background work and any process."""
