"""Waits on tasks are event-driven: each change that ends a wait notifies it (nothing is polled).

Each test starts a wait on another thread, makes sure it is really waiting (the table's condition
is a watched one, or the handler has started), then makes one change from this thread and expects
the wait to end within a generous bound. The waits' only timeout is a safety bound far above it
(task_table.SAFETY_WAIT_S), so a change that forgot to notify fails the test instead of being
picked up by a tick.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from mcp_agent_kit import Context, Server
from mcp_agent_kit.core import task_table
from mcp_agent_kit.core.context import CancelFlag
from mcp_agent_kit.core.dispatcher import Connection
from mcp_agent_kit.core.task_table import TaskCancelled, TaskRecord, TaskTable, task_tool
from mcp_agent_kit.core.tasks import TasksExtension
from tests.http.conftest import META

BOUND = 10.0  # far below SAFETY_WAIT_S: a wait that needs the safety timeout fails
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def test_the_bound_is_far_below_the_safety_timeout() -> None:
    assert task_table.SAFETY_WAIT_S > 4 * BOUND


class Watched(threading.Condition):
    """The table's condition, telling when someone waits on it."""

    def __init__(self) -> None:
        super().__init__(threading.RLock())
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def watched_table() -> tuple[TaskTable, Watched]:
    table = TaskTable(lambda task: {"status": task.status})
    table.lock = condition = Watched()
    return table, condition


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # handed to the test, which asserts on it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def ended(thread: threading.Thread, outcome: list[Any]) -> Any:
    thread.join(BOUND)
    assert not thread.is_alive(), "the wait was not woken by the change"
    return outcome[0]


# ---- TaskTable.wait_end (tasks/result of 2025-11-25) -------------------------------------------------
@pytest.mark.parametrize("change", ["completed", "failed", "cancelled"])
def test_a_move_to_an_end_wakes_wait_end(change: str) -> None:
    table, condition = watched_table()
    task = table.create("owner", None)
    thread, outcome = in_thread(lambda: table.wait_end(task, CancelFlag()))
    assert condition.waiting.wait(BOUND)
    assert table.move(task, change)
    assert ended(thread, outcome) is True


def test_a_move_that_is_no_end_leaves_wait_end_waiting() -> None:
    table, condition = watched_table()
    task = table.create("owner", None)
    thread, outcome = in_thread(lambda: table.wait_end(task, None))
    assert condition.waiting.wait(BOUND)
    condition.waiting.clear()
    assert table.move(task, "input_required")
    assert condition.waiting.wait(BOUND)  # woken, looked, and waits again
    assert thread.is_alive()
    assert table.move(task, "completed")
    assert ended(thread, outcome) is True


def test_dropping_the_owner_wakes_wait_end() -> None:
    table, condition = watched_table()
    task = table.create("session", None)
    thread, outcome = in_thread(lambda: table.wait_end(task, None))
    assert condition.waiting.wait(BOUND)
    assert table.drop_owner("session") == [task]
    assert ended(thread, outcome) is True
    assert task.status == "cancelled"


def test_cancelling_the_waiting_request_wakes_wait_end() -> None:
    table, condition = watched_table()
    task = table.create("owner", None)
    request_cancel = CancelFlag()
    thread, outcome = in_thread(lambda: table.wait_end(task, request_cancel))
    assert condition.waiting.wait(BOUND)
    request_cancel.set()  # nothing in the table changes: only the flag's listener can wake the wait
    assert ended(thread, outcome) is False
    assert task.status == "working"
    assert not request_cancel._listeners  # the wait removed its listener


def test_a_plain_event_as_the_cancel_wakes_wait_end_too() -> None:
    table, condition = watched_table()
    task = table.create("owner", None)
    request_cancel = threading.Event()
    thread, outcome = in_thread(lambda: table.wait_end(task, request_cancel))
    assert condition.waiting.wait(BOUND)
    request_cancel.set()
    assert ended(thread, outcome) is False


# ---- TasksExtension.ask (input_required of 2026-07-28) ----------------------------------------------------
def asking() -> tuple[TasksExtension, TaskRecord, Watched]:
    tasks = TasksExtension()
    table = tasks.table
    table.lock = condition = Watched()
    return tasks, table.create("principal", None), condition


def test_an_answer_wakes_the_task_that_asked() -> None:
    tasks, task, condition = asking()
    thread, outcome = in_thread(lambda: tasks.ask(task, {"name": {"method": "elicitation/create", "params": {}}}))
    assert condition.waiting.wait(BOUND)
    assert task.status == "input_required"
    tasks.answer(task, {"name": {"action": "accept", "content": {"name": "Ada"}}})
    assert ended(thread, outcome) == {"name": {"action": "accept", "content": {"name": "Ada"}}}
    assert task.status == "working"


def test_setting_the_tasks_cancel_flag_alone_wakes_the_task_that_asked() -> None:
    tasks, task, condition = asking()
    thread, outcome = in_thread(lambda: tasks.ask(task, {"name": {"method": "elicitation/create", "params": {}}}))
    assert condition.waiting.wait(BOUND)
    task.cancel.set()  # as a replica's cancel does: no notify of the table, only the flag
    assert isinstance(ended(thread, outcome), TaskCancelled)


# ---- TaskRun.start (a manual task's tools/call before it detaches) ---------------------------------------
def test_cancelling_the_call_before_the_task_detaches_cancels_the_tool() -> None:
    server = Server("waits", "1.0.0")
    entered = threading.Event()

    @server.tool()
    def patient(ctx: Context) -> str:
        """Wait for cancellation without ever detaching."""
        entered.set()
        ctx.cancel_event.wait()
        return "stopped"

    task_tool(server, "patient", manual=True)
    request_cancel = CancelFlag()
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "patient", "arguments": {},
                          "_meta": {**META, "io.modelcontextprotocol/clientCapabilities": TASKS}}}
    thread, outcome = in_thread(lambda: server.dispatcher.handle(message, Connection(), cancel=request_cancel))
    assert entered.wait(BOUND)
    request_cancel.set()
    ended(thread, outcome)  # the tool heard the cancel and the call returned (its reply is the dispatcher's)
