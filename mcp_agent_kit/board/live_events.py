"""board.live_events: a task's transcript as the live API's notifications, and the gap-free cursor behind them.

`notification(event, task_id)` turns one event of `Board.task_events` into (action, payload): the action
is ACTIONS[kind] (`acp.progress` for `progress`, `acp.log` for `error`), else `task.<kind>`; the payload is
`{"task_id", "seq", "type": kind, "data": {the event's own fields}, "timestamp"}` (SHAPES add the seed's
field names: a progress line's `message`, a log line's `level` and `message`).

`Cursor` follows one task for one subscriber: `catch_up(seq)` sends (through its `emit`) every event after
the last one sent, up to the newest, reading the board's log in pages; it holds its lock while it reads and
sends, so two threads that catch up at once (a board listener and the subscribe that made it) never send an
event twice or skip one, and a `seq` it has reached already costs no read. `stop()` ends it: nothing is
sent after it returns. Rules: no I/O of its own (the emit does it), no protocol framing (board.live's).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from mcp_agent_kit.board import task_fields as tf

__all__ = ["ACTIONS", "PAGE", "Cursor", "last_seq", "notification"]

PAGE = 500  # events read from the board's log at a time
# event kind -> the notification's action (any other kind: "task.<kind>")
ACTIONS: Mapping[str, str] = {"progress": "acp.progress", "error": "acp.log"}
_OWN = frozenset({"seq", "kind", "type"})  # the event's fields that the payload carries outside `data`
# event kind -> the fields its `data` gets beside the event's own (the seed's names)
SHAPES: Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "progress": lambda event: {"message": event.get("text")},
    "error": lambda event: {"level": "error", "message": event.get("text")},
}

Emit = Callable[[str, dict[str, Any]], None]  # (action, payload)


def notification(event: Mapping[str, Any], task_id: str) -> tuple[str, dict[str, Any]]:
    """One transcript event as (action, payload) (see the module's doc)."""
    kind = str(event.get("kind") or event.get("type") or "event")
    shape = SHAPES.get(kind)
    data = {**(shape(event) if shape is not None else {}),
            **{key: value for key, value in event.items() if key not in _OWN}}
    payload = {"task_id": task_id, "seq": event["seq"], "type": kind, "data": data,
               "timestamp": event.get("time") or tf.iso(time.time())}
    return ACTIONS.get(kind, f"task.{kind}"), payload


def last_seq(board: Any, task_id: str, after: int = 0) -> int:
    """The seq of the task's last event (reading on from `after`; `after` when there is none beyond it)."""
    while True:
        page = board.task_events(task_id, after=after, limit=PAGE)
        if not page["events"]:
            return after
        after = page["events"][-1]["seq"]


class Cursor:
    """One subscriber's place in one task's transcript (see the module's doc)."""

    def __init__(self, board: Any, task_id: str, after: int, emit: Emit) -> None:
        self.board, self.task_id, self.emit = board, task_id, emit
        self.sent = after  # the seq of the last event sent (or skipped by the subscriber's `after`)
        self.lock = threading.RLock()  # re-entered when an emit that failed stops its own cursor
        self.stopped = False

    def catch_up(self, seq: int | None = None) -> None:
        """Send every event after the last one sent; `seq` (a change's last seq) reached already: nothing to do."""
        if seq is not None and seq <= self.sent:  # a read of an int: no lock needed to skip
            return
        with self.lock:
            while not self.stopped:
                page = self.board.task_events(self.task_id, after=self.sent, limit=PAGE)
                events = page["events"]
                for event in events:
                    if self.stopped:
                        return
                    if event["seq"] > self.sent:
                        self.emit(*notification(event, self.task_id))
                        self.sent = event["seq"]
                if len(events) < PAGE:
                    return

    def stop(self) -> None:
        """Nothing is sent once this returns (a catch-up running now ends at its next event)."""
        self.stopped = True
        with self.lock:
            pass
