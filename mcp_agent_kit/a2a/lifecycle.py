"""lifecycle: the A2A task state machine as one transition table.

Every state change of every task goes through `advance`, so an illegal transition (anything out
of a terminal state, UNSPECIFIED, a typo) cannot happen. Rules: pure; no tasks, no stores.
"""

from __future__ import annotations

from typing import Final

from mcp_agent_kit.a2a.protocol import (
    AUTH_REQUIRED,
    CANCELED,
    COMPLETED,
    FAILED,
    INPUT_REQUIRED,
    REJECTED,
    SUBMITTED,
    WORKING,
)

TERMINAL: Final = frozenset({COMPLETED, FAILED, CANCELED, REJECTED})
INTERRUPTED: Final = frozenset({INPUT_REQUIRED, AUTH_REQUIRED})

# state -> states it may move to. WORKING -> WORKING is a progress update (a new status message).
TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    SUBMITTED: frozenset({WORKING}) | TERMINAL | INTERRUPTED,
    WORKING: frozenset({WORKING}) | TERMINAL | INTERRUPTED,
    INPUT_REQUIRED: frozenset({WORKING}) | TERMINAL | INTERRUPTED,
    AUTH_REQUIRED: frozenset({WORKING}) | TERMINAL | INTERRUPTED,
    COMPLETED: frozenset(),
    FAILED: frozenset(),
    CANCELED: frozenset(),
    REJECTED: frozenset(),
}
STATES: Final = frozenset(TRANSITIONS)


class IllegalTransition(RuntimeError):
    """A state change the table forbids (an agent bug, or a race with CancelTask)."""


def can_move(current: str, target: str) -> bool:
    return target in TRANSITIONS.get(current, frozenset())


def advance(current: str, target: str) -> str:
    """The new state, or IllegalTransition."""
    if not can_move(current, target):
        raise IllegalTransition(f"task state {current} cannot move to {target}")
    return target


def is_final(state: str) -> bool:
    """Terminal or interrupted: where a blocking send returns and a stream closes."""
    return state in TERMINAL or state in INTERRUPTED
