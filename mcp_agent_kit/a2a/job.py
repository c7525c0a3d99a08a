"""job: what an agent is (`Agent`: its card facts and `accept`) and the handle its work reports through (`Job`).

The engine runs a Job's work on a worker; every report (status, artifact, reply) goes back to the
engine, which owns the task. A job's `cancel` is a CancelSignal: an Event whose listeners hear it set (work
that waits on something else registers one instead of polling the flag). Rules: no tasks, no stores, no
locks but the signal's own; knows the engine only as a Reporter.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

from mcp_agent_kit.a2a.messages import new_id, text_part
from mcp_agent_kit.a2a.protocol import COMPLETED, FAILED, INPUT_REQUIRED, WORKING, A2AError

Event = dict[str, Any]
Work = Callable[["Job"], None]


class Reporter(Protocol):
    """The engine, as a job sees it."""

    def _status(self, job: Job, state: str, parts: list[dict[str, Any]] | None, pending: Any) -> None: ...
    def _artifact(self, job: Job, art: dict[str, Any], append: bool, last_chunk: bool) -> None: ...
    def _reply(self, job: Job, parts: list[dict[str, Any]]) -> None: ...


class Agent:
    """What an A2A server does with messages. Subclass and override; `accept` returns the work."""

    name = "agent"
    description = "An A2A agent"
    version = "0.1.0"
    input_modes: tuple[str, ...] = ("text/plain", "application/json")
    output_modes: tuple[str, ...] = ("text/plain", "application/json")
    push_notifications = False  # the card's capability: whether its service takes push notification configs

    def skills(self) -> list[dict[str, Any]]:
        return []

    def extensions(self) -> list[dict[str, Any]]:
        return []

    def accepted_media_types(self) -> frozenset[str]:
        modes = set(self.input_modes)
        for skill in self.skills():
            modes.update(skill.get("inputModes", ()))
        return frozenset(mode.lower() for mode in modes)

    def accept(self, message: dict[str, Any], task: dict[str, Any] | None) -> Work:
        """Check a message (a new one, or one continuing `task`) and return the work to run."""
        raise A2AError("UnsupportedOperation", "this agent accepts no messages")


class CancelSignal(threading.Event):
    """A threading.Event that also calls the listeners added with `add_listener` once it is set."""

    def __init__(self) -> None:
        super().__init__()
        self._listeners: list[Callable[[], None]] = []
        self._guard = threading.Lock()

    def set(self) -> None:
        super().set()
        with self._guard:
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` once when set (at once if it already is); returns the function that removes it."""
        with self._guard:
            fire = self.is_set()
            if not fire:
                self._listeners.append(listener)
        if fire:
            listener()

        def remove() -> None:
            with self._guard:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove


class Job:
    """The handle an agent's work uses to report on one message: statuses, artifacts, or a direct reply."""

    def __init__(
        self, engine: Reporter, message: dict[str, Any], owner: str, task_id: str | None, context_id: str
    ) -> None:
        self.engine = engine
        self.message = message
        self.owner = owner
        self.task_id = task_id
        self.context_id = context_id
        self.cancel = CancelSignal()
        self.replied = False
        self.reported = ""  # the last state the work reported
        self.sink: queue.SimpleQueue[Event] = queue.SimpleQueue()

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    def status(self, state: str, parts: list[dict[str, Any]] | str | None = None, pending: Any = None) -> None:
        """Move the task to `state`, with an optional status message (text or parts)."""
        if isinstance(parts, str):
            parts = [text_part(parts)]
        self.engine._status(self, state, parts, pending)

    def working(self, text: str | None = None) -> None:
        self.status(WORKING, text)

    def complete(self, parts: list[dict[str, Any]] | str | None = None) -> None:
        self.status(COMPLETED, parts)

    def fail(self, parts: list[dict[str, Any]] | str) -> None:
        self.status(FAILED, parts)

    def ask(self, parts: list[dict[str, Any]] | str, pending: Any = None) -> None:
        """INPUT_REQUIRED with a question; `pending` is kept (privately) for the continuation."""
        self.status(INPUT_REQUIRED, parts, pending)

    def artifact(
        self,
        parts: list[dict[str, Any]],
        *,
        name: str | None = None,
        artifact_id: str | None = None,
        append: bool = False,
        last_chunk: bool = False,
        description: str | None = None,
    ) -> str:
        """Add an artifact (or, with append, more parts to an existing one); returns its id."""
        art: dict[str, Any] = {"artifactId": artifact_id or new_id()}
        if name:
            art["name"] = name
        if description:
            art["description"] = description
        art["parts"] = list(parts)
        self.engine._artifact(self, art, append, last_chunk)
        return str(art["artifactId"])

    def reply(self, parts: list[dict[str, Any]] | str) -> None:
        """Answer with a Message and no task (or complete the task with it if one exists already)."""
        if isinstance(parts, str):
            parts = [text_part(parts)]
        self.engine._reply(self, parts)
