"""board.live: the envelope's refusals (the session lives on), principals' isolation, CSRF, task owner and
metadata, and subscriptions that never skip or repeat an event, whatever the threads do."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit.board.live import MAX_MESSAGE, LiveSession, LiveSocket
from mcp_agent_kit.board.task_fields import METADATA_MAX
from tests.board.fake_board import FakeBoard


class Client:
    """A LiveSession and what it sent."""

    def __init__(self, board: FakeBoard, principal: str | None = None, **options: Any) -> None:
        self.sent: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.session = LiveSession(board, principal, self._take, **options)
        self.count = 0

    def _take(self, message: dict[str, Any]) -> None:
        json.dumps(message)  # every message is JSON
        with self.lock:
            self.sent.append(message)

    def raw(self, text: str | bytes) -> dict[str, Any]:
        """Send `text`; the answer (response or error) to it."""
        before = len(self.sent)
        self.session.handle(text)
        answers = [m for m in self.sent[before:] if m["type"] in ("response", "error")]
        assert len(answers) == 1, self.sent[before:]
        return answers[0]

    def call(self, action: str, payload: Any = None, **extra: Any) -> dict[str, Any]:
        self.count += 1
        message = {"id": f"r{self.count}", "type": "request", "action": action, **extra}
        if payload is not None:
            message["payload"] = payload
        answer = self.raw(json.dumps(message))
        assert answer["id"] == f"r{self.count}" and answer["action"] == action
        return answer

    def ok(self, action: str, **payload: Any) -> Any:
        answer = self.call(action, payload)
        assert answer["type"] == "response", answer
        return answer["payload"]

    def refused(self, action: str, payload: Any, code: str) -> str:
        answer = self.call(action, payload)
        assert answer["type"] == "error" and answer["payload"]["code"] == code, answer
        message: str = answer["payload"]["message"]
        assert "\n" not in message
        return message

    def notes(self, task_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return [m["payload"] for m in self.sent
                    if m["type"] == "notification" and m["payload"].get("task_id") == task_id]


@pytest.fixture
def board() -> Iterator[FakeBoard]:
    opened = FakeBoard()
    yield opened
    opened.close()


@pytest.mark.parametrize(("text", "code", "words"), [
    ("{not json", "bad_request", "not JSON"),
    ("[1, 2]", "bad_request", "not a list"),
    ('"status"', "bad_request", "not text"),
    ('{"id": "a"}', "bad_request", "action is missing"),
    ('{"id": "a", "action": 7}', "bad_request", "action is missing"),
    ('{"id": "a", "action": "orchestrator.fly"}', "unknown_action", "use one of orchestrator.status"),
    ('{"id": "a", "action": "task.get", "payload": [1]}', "bad_request", "payload must be an object"),
    ('{"id": "a", "action": "task.get", "payload": {}}', "bad_request", "payload.task_id is missing"),
    ('{"id": "a", "action": "task.get", "payload": {"task_id": ["x"]}}', "bad_request", "must be text, not a list"),
    ('{"id": "a", "action": "task.create", "payload": {"description": "x", "hold": "yes"}}', "bad_request",
     "payload.hold must be true or false"),
    ('{"id": "a", "action": "task.create", "payload": {"description": "x", "priority": 9}}', "invalid", "0-3"),
    ('{"id": "a", "action": "task.create", "payload": {"description": "x", "priority": "asap"}}', "invalid",
     "unknown priority"),
    ('{"id": "a", "type": "response", "action": "task.list"}', "bad_request", "type must be"),
    ('{"id": {"x": 1}, "action": "task.list"}', "bad_request", "id must be text"),
    (b'{"id": "a", "action": "task.list"}', "bad_request", "not binary"),
    ("x" * (MAX_MESSAGE + 1), "too_big", "at most"),
])
def test_a_bad_request_gets_an_error_naming_it_and_the_session_lives_on(board: FakeBoard, text: str | bytes,
                                                                         code: str, words: str) -> None:
    client = Client(board)
    answer = client.raw(text)
    assert answer["type"] == "error" and answer["payload"]["code"] == code, answer
    assert words in answer["payload"]["message"]
    assert client.ok("orchestrator.status")["running"] is False


def test_a_board_failure_is_internal_and_logged(board: FakeBoard, monkeypatch: pytest.MonkeyPatch) -> None:
    client = Client(board)
    monkeypatch.setattr(board, "list_tasks", lambda **kw: 1 / 0)
    assert "logged" in client.refused("task.list", {}, "internal")
    monkeypatch.undo()
    assert client.ok("task.list") == {"tasks": []}


def test_create_keeps_owner_metadata_and_a_chosen_id(board: FakeBoard) -> None:
    client = Client(board, "alice")
    task = client.ok("task.create", id="job.1", description="go", metadata={"session": {"id": "s-1"}})
    assert (task["id"], task["owner"], task["metadata"]) == ("job.1", "alice", {"session": {"id": "s-1"}})
    assert client.ok("task.get", task_id="job.1")["metadata"] == {"session": {"id": "s-1"}}
    assert "exists already" in client.refused("task.create", {"id": "job.1", "description": "again"}, "conflict")
    assert "may hold only" in client.refused("task.create", {"id": "-x", "description": "go"}, "invalid")
    assert "at most 64" in client.refused("task.create", {"id": "x" * 65, "description": "go"}, "invalid")
    big = {"blob": "x" * METADATA_MAX}
    assert f"at most {METADATA_MAX}" in client.refused("task.create", {"description": "go", "metadata": big},
                                                       "invalid")
    client.refused("task.create", {"description": "go", "metadata": ["not", "an", "object"]}, "bad_request")
    assert client.ok("task.create", prompt="plain")["metadata"] == {}
    assert Client(board).ok("task.create", description="anonymous")["owner"] is None


def test_a_principal_sees_and_acts_on_only_its_own_tasks(board: FakeBoard) -> None:
    alice, bob, nobody = Client(board, "alice"), Client(board, "bob"), Client(board)
    mine = alice.ok("task.create", description="alice's", hold=True)["id"]
    bob.ok("task.create", description="bob's")
    missing = bob.refused("task.get", {"id": "nope"}, "not_found")
    assert bob.refused("task.get", {"id": mine}, "not_found") == missing.replace("nope", mine)
    for action, extra in (("task.cancel", {}), ("orchestrator.trigger", {}), ("orchestrator.start", {}),
                          ("task.subscribe", {}), ("task.answer", {"answer": "allow"}), ("task.diff", {}),
                          ("orchestrator.prompt", {"prompt": "hi"})):
        bob.refused(action, {"task_id": mine, **extra}, "not_found")
    bob.refused("task.create", {"description": "after alice's", "blocked_by": [mine]}, "not_found")
    assert board.get_task(mine)["state"] == "held"
    assert [t["owner"] for t in bob.ok("task.list")["tasks"]] == ["bob"]
    assert bob.ok("orchestrator.status")["queued_tasks"] == 1
    assert [t["owner"] for t in nobody.ok("task.list")["tasks"]] == ["alice", "bob"]  # no sign-in: every task
    bob.ok("board.subscribe")
    alice.ok("task.cancel", task_id=mine)
    assert not [m for m in bob.sent if m["action"] == "task.updated"]


def test_a_cookie_session_needs_the_csrf_token_on_every_request(board: FakeBoard) -> None:
    client = Client(board, "alice", cookie_auth=True, csrf_check=lambda token: token == "right")
    assert "CSRF" in client.refused("task.list", {}, "csrf")
    assert client.call("task.list", {}, csrf="wrong")["payload"]["code"] == "csrf"
    assert client.call("task.list", {}, csrf="right")["type"] == "response"
    assert client.call("task.create", {"description": "x"}, csrf=7)["payload"]["code"] == "csrf"


def test_start_trigger_and_queue_follow_the_board(board: FakeBoard) -> None:
    client = Client(board)
    held = client.ok("task.create", id="h", description="later", hold=True)
    client.ok("task.create", id="a", description="first", priority="low")
    client.ok("task.create", id="b", description="second", priority="urgent")
    assert held["state"] == "held"
    started = client.ok("orchestrator.start", task_id="h", priority=1)
    assert (started["state"], started["agent_instance_id"]) == ("queued", "echo:h")
    assert [t["id"] for t in client.ok("orchestrator.queue")["tasks"]] == ["b", "h", "a"]
    assert "agent 'echo', not 'other'" in client.refused("orchestrator.start", {"task_id": "a", "agent_type": "other"},
                                                        "invalid")
    assert client.ok("orchestrator.trigger", task_id="a")["state"] == "queued"
    board.start_task("a")
    board.finish("a", "done")
    assert "orchestrator.prompt" in client.refused("orchestrator.start", {"task_id": "a"}, "refused")
    agents = {agent["id"]: agent for agent in client.ok("agents.list")["agents"]}
    assert (agents["echo"]["queued"], agents["echo"]["running"], agents["other"]["queued"]) == (2, 0, 0)


def test_subscribe_replays_after_then_follows_live_and_unsubscribe_stops(board: FakeBoard) -> None:
    client = Client(board)
    client.ok("task.create", id="t", description="go")
    board.start_task("t")  # seq 1 (state), 2 (turn_start)
    board.say("t", "one")  # seq 3
    assert "past the last event" in client.refused("task.subscribe", {"task_id": "t", "after": 9}, "invalid")
    answer = client.ok("task.subscribe", task_id="t", after=2)
    assert answer == {"success": True, "task_id": "t", "seq": 3}
    board.say("t", "two")
    assert [(n["seq"], n["data"].get("text")) for n in client.notes("t")] == [(3, "one"), (4, "two")]
    assert client.ok("task.unsubscribe", task_id="t") == {"success": True, "task_id": "t"}
    board.say("t", "three")
    assert len(client.notes("t")) == 2
    client.ok("task.subscribe", task_id="t")  # again, from the start: the client asked for all of it
    assert [n["seq"] for n in client.notes("t")][2:] == [1, 2, 3, 4, 5]
    client.session.close()
    board.say("t", "after close")
    assert board._listeners["task"] == []  # the session's one listener went with it
    assert [n["seq"] for n in client.notes("t")][-1] == 5


def test_concurrent_events_and_subscribers_get_every_event_once_in_order(board: FakeBoard) -> None:
    client = Client(board)
    client.ok("task.create", id="t", description="go")
    board.start_task("t")
    total = 2 + 200
    ready = threading.Barrier(3)

    def writer(name: str) -> None:
        ready.wait()
        for i in range(100):
            board.say("t", f"{name}{i}")

    threads = [threading.Thread(target=writer, args=(name,)) for name in "ab"]
    for thread in threads:
        thread.start()
    ready.wait()
    client.ok("task.subscribe", task_id="t", after=0)  # while the writers append
    for thread in threads:
        thread.join(30)
    assert [n["seq"] for n in client.notes("t")] == list(range(1, total + 1))
    assert len(board._listeners["task"]) == 1


def test_board_subscribe_lists_then_tells_each_change_of_a_task_once(board: FakeBoard) -> None:
    client = Client(board)
    client.ok("task.create", id="t", description="go")
    answer = client.ok("board.subscribe")
    assert answer["success"] is True and [t["id"] for t in answer["tasks"]] == ["t"]
    board.start_task("t")  # a move (seq 1), then the turn's first event (seq 2): the task is as it was
    updates = [m["payload"] for m in client.sent if m["action"] == "task.updated"]
    assert [(u["task"]["state"], u["seq"]) for u in updates] == [("running", 1)]
    for word in ("many", "chunks"):
        board.say("t", word)  # the transcript grows; the task object does not change: no update re-sent
    assert len([m for m in client.sent if m["action"] == "task.updated"]) == 1


class FakeConnection:
    def __init__(self, principal: str | None) -> None:
        self.principal = principal
        self.frames: list[str] = []

    def send(self, message: str | bytes) -> bool:
        assert isinstance(message, str)
        self.frames.append(message)
        return True

    def close(self, code: int = 1000, reason: str = "") -> None:
        raise AssertionError("the live socket never closes a connection itself")


def test_the_websocket_handler_speaks_json_text_frames(board: FakeBoard) -> None:
    socket, conn = LiveSocket(board), FakeConnection("alice")
    socket.opened(conn)
    socket.received(conn, '{"id": "1", "action": "task.create", "payload": {"description": "go", "id": "w"}}')
    socket.received(conn, '{"id": "2", "action": "task.subscribe", "payload": {"task_id": "w"}}')
    answers = [json.loads(frame) for frame in conn.frames]
    assert answers[0]["payload"]["owner"] == "alice" and answers[1]["payload"]["success"] is True
    socket.closed(conn, 1000, "")
    assert board._listeners["task"] == []


def test_the_board_facade_behind_the_orchestrator_actions(any_board: Any) -> None:
    """The same answers from the real Board (not started) as from the fake: status, priorities, agents."""
    client = Client(any_board, "alice")
    client.ok("task.create", id="h", description="later", hold=True, metadata={"k": [1]})
    assert client.ok("orchestrator.start", task_id="h", agent_type="echo", priority=3)["state"] == "queued"
    task = client.ok("task.get", id="h")
    assert (task["priority"], task["owner"], task["metadata"]) == ("urgent", "alice", {"k": [1]})
    assert client.ok("orchestrator.status") == {"running": False, "active_agents": 0, "queued_tasks": 1,
                                                "max_concurrent": 4}
    agents = client.ok("agents.list")["agents"]
    assert [(a["id"], a["queued"]) for a in agents] == [("echo", 1), ("other", 0)]
    assert all(isinstance(a["ready"], bool) for a in agents)
