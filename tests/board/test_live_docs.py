"""docs/board-api.md stays true: its examples, replayed in order against a LiveSession over a board, get the
answers the page shows; and the seed's own WebSocket examples, sent verbatim, get the seed's answers.

The page's ```json blocks are envelope messages: a `request` is sent; the blocks after it, up to the next
request or runner step, must come back in that order (other messages may come in between; fields the
page leaves out are allowed; a notification's id and any ISO 8601 time match any such value). A comment
`<!-- runner: METHOD TASK [ARG] -->` plays what the board's agent does there (tests/board/fake_board.py's
step helpers; ARG is JSON or text; `diff` sets the task's diff).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.live import LiveSession
from tests.board.fake_board import FakeBoard

DOC = Path(__file__).resolve().parents[2] / "docs" / "board-api.md"
STEP = re.compile(r"<!-- runner: (\w+) (\S+)(?: ([^\n]*?))? -->|^```json\n(.*?)^```\s*$", re.S | re.M)
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
ANY_ID = object()


def matches(expected: Any, actual: Any) -> bool:
    """`actual` has every field of `expected` with a matching value (see the module's doc)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(key in actual and matches(value, actual[key])
                                                for key, value in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(
            matches(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, str) and ISO.fullmatch(expected):
        return isinstance(actual, str) and ISO.fullmatch(actual) is not None
    return bool(expected == actual)


def message_matches(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    if expected.get("type") == "notification":
        expected = {key: value for key, value in expected.items() if key != "id"}
    return matches(expected, actual)


def expect_in_order(expected: list[dict[str, Any]], sent: list[dict[str, Any]], after: str) -> None:
    """Each expected message comes back, in order (others may come in between)."""
    position = 0
    for want in expected:
        while position < len(sent) and not message_matches(want, sent[position]):
            position += 1
        assert position < len(sent), f"after {after}: never got {json.dumps(want)[:400]}\ngot: {sent}"
        position += 1


def runner_step(board: FakeBoard, method: str, task_id: str, arg: str | None) -> None:
    value: Any = None if arg is None else json.loads(arg) if arg[:1] in "{[\"" else arg
    if method == "diff":
        board.diffs[task_id] = value
    else:
        getattr(board, method)(task_id, *(() if value is None else (value,)))


def replay(text: str, board: FakeBoard, session: LiveSession, sent: list[dict[str, Any]]) -> int:
    """Replay the page; how many requests it sent."""
    requests, expected, trigger = 0, [], "the start"
    for match in STEP.finditer(text):
        method, task_id, arg, block = match.groups()
        message = json.loads(block) if block is not None else None
        if message is not None and message.get("type") != "request":
            expected.append(message)
            continue
        expect_in_order(expected, sent, trigger)
        expected, sent[:] = [], []
        if message is None:
            runner_step(board, method, task_id, arg)
            trigger = f"runner: {method} {task_id}"
        else:
            session.handle(json.dumps(message))
            requests, trigger = requests + 1, f"request {message['id']}"
    expect_in_order(expected, sent, trigger)
    return requests


def test_every_example_of_the_page_gets_the_answer_it_shows() -> None:
    board = FakeBoard(agents=("augment-agent", "echo"))
    board.start()
    sent: list[dict[str, Any]] = []
    session = LiveSession(board, None, sent.append)
    try:
        text = DOC.read_text(encoding="utf-8")
        assert replay(text, board, session, sent) >= 25
    finally:
        session.close()
        board.close()
    documented = set(re.findall(r"^### `([\w.]+)`", text, re.M))
    from mcp_agent_kit.board.live import ACTIONS

    assert documented == set(ACTIONS), "every action has its section on the page"


# ---- the seed's examples, verbatim (its WebSocket API section) ---------------------------------------
SEED_REQUESTS = {
    "orchestrator.start": """{
  "id": "uuid",
  "type": "request",
  "action": "orchestrator.start",
  "payload": {
    "task_id": "uuid",
    "agent_type": "augment-agent",
    "priority": 2
  }
}""",
    "orchestrator.prompt": """{
  "id": "uuid",
  "type": "request",
  "action": "orchestrator.prompt",
  "payload": {
    "task_id": "uuid",
    "prompt": "Please also add unit tests"
  }
}""",
    "orchestrator.stop": """{
  "id": "uuid",
  "type": "request",
  "action": "orchestrator.stop",
  "payload": {
    "task_id": "uuid",
    "reason": "User requested cancellation",
    "force": false
  }
}""",
    "orchestrator.complete": """{
  "id": "uuid",
  "type": "request",
  "action": "orchestrator.complete",
  "payload": {
    "task_id": "uuid"
  }
}""",
    "orchestrator.status": """{
  "id": "uuid",
  "type": "request",
  "action": "orchestrator.status",
  "payload": {}
}""",
    "task.subscribe": """{
  "id": "uuid",
  "type": "request",
  "action": "task.subscribe",
  "payload": {
    "task_id": "uuid"
  }
}""",
}
SUCCESS = {"success": True, "task_id": "uuid"}


def seed_answer(action: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"id": "uuid", "type": "response", "action": action, "payload": payload}


@pytest.fixture
def seeded() -> Any:
    board = FakeBoard(agents=("augment-agent",))
    board.start()
    sent: list[dict[str, Any]] = []
    session = LiveSession(board, None, sent.append)
    session.handle(json.dumps({"id": "setup", "action": "task.create",
                               "payload": {"id": "uuid", "description": "Add a login page",
                                           "agent_type": "augment-agent"}}))
    assert sent[-1]["type"] == "response", sent[-1]
    yield board, session, sent
    session.close()
    board.close()


def test_the_seeds_examples_sent_verbatim_get_the_seeds_answers(seeded: Any) -> None:
    board, session, sent = seeded

    def ask(action: str) -> dict[str, Any]:
        sent.clear()
        session.handle(SEED_REQUESTS[action])  # a subscribed task's notifications may come before the answer
        return next(message for message in sent if message["type"] in ("response", "error"))

    status = ask("orchestrator.status")
    assert matches(seed_answer("orchestrator.status", {}), status)
    assert {key: type(value) for key, value in status["payload"].items()} == {
        "running": bool, "active_agents": int, "queued_tasks": int, "max_concurrent": int}
    started = ask("orchestrator.start")
    assert matches(seed_answer("orchestrator.start", SUCCESS), started)
    assert isinstance(started["payload"]["agent_instance_id"], str)
    assert board.get_task("uuid")["priority"] == "high"  # the seed's 2
    subscribed = ask("task.subscribe")
    assert matches(seed_answer("task.subscribe", SUCCESS), subscribed)
    sent.clear()
    board.start_task("uuid")
    board.note("uuid", {"type": "progress", "text": "Processing files...", "progress": 50, "stage": "executing"})
    board.note("uuid", {"type": "error", "text": "Found no test directory"})
    progress = next(m for m in sent if m["action"] == "acp.progress")
    assert matches({"type": "notification", "action": "acp.progress",
                    "payload": {"task_id": "uuid", "type": "progress",
                                "data": {"progress": 50, "stage": "executing", "message": "Processing files..."}}},
                   progress)
    log = next(m for m in sent if m["action"] == "acp.log")
    assert matches({"type": "notification", "payload": {"task_id": "uuid", "data": {"level": "error"}}}, log)
    board.finish("uuid", "a login page")
    assert matches(seed_answer("orchestrator.prompt", SUCCESS), ask("orchestrator.prompt"))
    assert matches(seed_answer("orchestrator.stop", SUCCESS), ask("orchestrator.stop"))
    assert board.get_task("uuid")["state"] == "cancelled"
    session.handle(json.dumps({"id": "again", "action": "orchestrator.prompt",
                               "payload": {"task_id": "uuid", "prompt": "Go on"}}))
    board.start_task("uuid")
    board.finish("uuid", "done")
    assert matches(seed_answer("orchestrator.complete", SUCCESS), ask("orchestrator.complete"))
    assert board.get_task("uuid")["state"] == "done"
