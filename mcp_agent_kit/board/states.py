"""board.states: a board task's states, the one transition table, and what each transition tells the world.

TRANSITIONS is the only place that says which action moves a task from which state to which:

    held ──release──▶ queued ──start──▶ running ◀──answer── needs_input
                                          │ └────────ask────────▶ │
                                          └──finish──▶ review ◀───┘ (a turn may end while a question waits)
    review ──accept──▶ done          review | failed | cancelled ──discard──▶ discarded
    review | failed | cancelled ──prompt──▶ queued   (a follow-up, same agent session and workspace)
    held | queued | running | needs_input ──fail──▶ failed, ──cancel──▶ cancelled
    running | needs_input ──interrupt──▶ failed      (the process running it died: board.tasks.recover)
    running | needs_input ──requeue──▶ queued        (its replica died before it changed anything)

`done` and `discarded` are final. Person actions (what a surface offers a person: release, answer,
accept, discard, prompt, cancel) and board actions (start, ask, finish, fail, interrupt, requeue: what
the scheduler and the turn runner do) share the table; a refused action raises TransitionRefused naming
the state and, for a person action, the person actions allowed there.

Semantic events (SEMANTIC_EVENTS: task.needs_input, task.review, task.failed, task.done,
task.cancelled) are keyed by the action that happened, never by the state reached: a task that is
`failed` after a restart was interrupted (task.failed), one reaching `running` again after an answer
tells nobody. `discard`, `release`, `start`, `answer`, `prompt` and `requeue` emit none.

A2A_STATES maps each board state to an A2A v1.0 TaskState (the A2A face's one table):

    board state   A2A TaskState               why
    held          TASK_STATE_SUBMITTED        accepted, not started (a person must release it)
    queued        TASK_STATE_SUBMITTED        accepted, waiting for capacity or blockers
    running       TASK_STATE_WORKING
    needs_input   TASK_STATE_INPUT_REQUIRED   the agent asked; a message with the taskId answers
    review        TASK_STATE_INPUT_REQUIRED   the turn ended; a message with the taskId prompts again,
                                              accept/discard decide (interrupted, not terminal: a
                                              blocking SendMessage returns here with the result)
    done          TASK_STATE_COMPLETED        accepted
    discarded     TASK_STATE_CANCELED         the person threw the work away (not REJECTED: that is the
                                              agent declining a task)
    failed        TASK_STATE_FAILED           terminal for A2A (a message with the taskId is refused there;
    cancelled     TASK_STATE_CANCELED         a follow-up through MCP or the CLI re-queues it, and A2A
                                              clients then see it start again)

Rules: pure data and pure functions; imports only board.errors.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp_agent_kit.board.errors import TaskInvalid, TransitionRefused

__all__ = ["A2A_STATES", "ACTIONS", "ACTIVE", "BOARD_ACTIONS", "CANCELLED", "DISCARDED", "DONE", "FAILED", "FINAL",
           "HELD", "LIVE", "NEEDS_INPUT", "PERSON_ACTIONS", "QUEUED", "REVIEW", "RUNNING", "SEMANTIC_EVENTS", "STATES",
           "TRANSITIONS", "allowed", "semantic_event", "transition"]

HELD, QUEUED, RUNNING, NEEDS_INPUT = "held", "queued", "running", "needs_input"
REVIEW, DONE, DISCARDED, FAILED, CANCELLED = "review", "done", "discarded", "failed", "cancelled"

# state -> {action: next state}: the one transition table
TRANSITIONS: Mapping[str, Mapping[str, str]] = {
    HELD: {"release": QUEUED, "fail": FAILED, "cancel": CANCELLED},
    QUEUED: {"start": RUNNING, "fail": FAILED, "cancel": CANCELLED},
    RUNNING: {"ask": NEEDS_INPUT, "finish": REVIEW, "fail": FAILED, "interrupt": FAILED, "requeue": QUEUED,
              "cancel": CANCELLED},
    NEEDS_INPUT: {"answer": RUNNING, "finish": REVIEW, "fail": FAILED, "interrupt": FAILED, "requeue": QUEUED,
                  "cancel": CANCELLED},
    REVIEW: {"accept": DONE, "discard": DISCARDED, "prompt": QUEUED},
    FAILED: {"prompt": QUEUED, "discard": DISCARDED},
    CANCELLED: {"prompt": QUEUED, "discard": DISCARDED},
    DONE: {},
    DISCARDED: {},
}
STATES: tuple[str, ...] = tuple(TRANSITIONS)
LIVE = frozenset({HELD, QUEUED, RUNNING, NEEDS_INPUT})  # not yet ended: fail and cancel apply
ACTIVE = frozenset({RUNNING, NEEDS_INPUT})  # a run holds a slot and a lease (a paused turn keeps its slot)
FINAL = frozenset({DONE, DISCARDED})  # nothing more happens

PERSON_ACTIONS = ("release", "answer", "prompt", "accept", "discard", "cancel")
BOARD_ACTIONS = ("start", "ask", "finish", "fail", "interrupt", "requeue")
ACTIONS: tuple[str, ...] = PERSON_ACTIONS + BOARD_ACTIONS

# action -> the semantic event it emits (derived from what happened, never from a state)
SEMANTIC_EVENTS: Mapping[str, str] = {
    "ask": "task.needs_input",
    "finish": "task.review",
    "fail": "task.failed",
    "interrupt": "task.failed",
    "accept": "task.done",
    "cancel": "task.cancelled",
}

A2A_STATES: Mapping[str, str] = {
    HELD: "TASK_STATE_SUBMITTED",
    QUEUED: "TASK_STATE_SUBMITTED",
    RUNNING: "TASK_STATE_WORKING",
    NEEDS_INPUT: "TASK_STATE_INPUT_REQUIRED",
    REVIEW: "TASK_STATE_INPUT_REQUIRED",
    DONE: "TASK_STATE_COMPLETED",
    DISCARDED: "TASK_STATE_CANCELED",
    FAILED: "TASK_STATE_FAILED",
    CANCELLED: "TASK_STATE_CANCELED",
}


def _known_state(state: str) -> Mapping[str, str]:
    moves = TRANSITIONS.get(state)
    if moves is None:
        raise TaskInvalid(f"unknown task state {state!r}: use one of {', '.join(STATES)}")
    return moves


def allowed(state: str) -> tuple[str, ...]:
    """The actions a task in `state` takes, in the order of ACTIONS."""
    moves = _known_state(state)
    return tuple(action for action in ACTIONS if action in moves)


def transition(state: str, action: str, task_id: str | None = None) -> str:
    """The state `action` moves a task in `state` to; TransitionRefused when the table has no such move
    (naming the state and what is allowed), TaskInvalid for an unknown state or action."""
    moves = _known_state(state)
    if action not in ACTIONS:
        raise TaskInvalid(f"unknown task action {action!r}: use one of {', '.join(ACTIONS)}")
    new = moves.get(action)
    if new is None:
        everything = allowed(state)
        shown = [a for a in everything if a in PERSON_ACTIONS] if action in PERSON_ACTIONS else everything
        raise TransitionRefused(state, action, everything, task_id, shown)
    return new


def semantic_event(action: str) -> str | None:
    """The semantic event the action emits when it happens (None: it emits none)."""
    return SEMANTIC_EVENTS.get(action)
