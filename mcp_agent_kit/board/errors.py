"""board.errors: the board's one error family — every refusal the board makes is a BoardError.

A surface (MCP tool, A2A handler, CLI) catches BoardError and shows its message, which is one line
naming the problem and, where there is one, the fix. Rules: imports nothing; messages name the task,
the state and what is allowed instead, never a Python type.
"""

from __future__ import annotations

from collections.abc import Sequence


class BoardError(Exception):
    """The board refused or could not do what was asked; the message says what and why."""


class TaskNotFound(BoardError):
    """No task has this id."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"no task {task_id!r} on this board (list_tasks shows the ids)")
        self.task_id = task_id


class TaskInvalid(BoardError, ValueError):
    """A task's input is malformed (unknown priority, empty prompt, unknown blocker, over-long field, ...)."""


class TaskConflict(BoardError):
    """The task changed meanwhile (another replica or request moved it first): read it again."""


class TaskExists(TaskConflict, TaskInvalid):
    """A task with the id a caller chose exists already (a conflict first, and an invalid input too)."""


class TransitionRefused(BoardError):
    """An action the task's state does not allow; `allowed` lists the actions it does."""

    def __init__(self, state: str, action: str, allowed: Sequence[str], task_id: str | None = None,
                 shown: Sequence[str] | None = None) -> None:
        who = f"task {task_id}" if task_id else "the task"
        offer = list(shown if shown is not None else allowed)
        then = f"; allowed now: {', '.join(offer)}" if offer else "; nothing more can be done with it"
        super().__init__(f"{who} is {state}: cannot {action} it{then}")
        self.state, self.action, self.allowed, self.task_id = state, action, tuple(allowed), task_id
