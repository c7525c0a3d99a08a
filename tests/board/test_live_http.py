"""board.live_http: `/events` (SSE) on the board's port — replay after `after` or Last-Event-ID, live events,
the end after the final move — behind the gate (Origin, bearer token, a principal's own tasks only)."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from mcp_agent_kit.board.cli import make_board_http
from mcp_agent_kit.board.live_http import mount_live
from tests.board.fake_board import FakeBoard

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}


@contextmanager
def live_server(board: FakeBoard, **options: Any) -> Iterator[int]:
    http, tools = make_board_http(board, "127.0.0.1", 0, **options)
    live = mount_live(board, http)
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield http.server_address[1]
    finally:
        live.close()
        tools.close()
        http.shutdown()
        http.server_close()
        thread.join(10)


def get(port: int, target: str, **headers: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", target, headers=headers)
    return conn.getresponse()


def frames(response: http.client.HTTPResponse, count: int | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """SSE events read off the stream (`count` of them, or up to its end), keep-alive comments skipped."""
    found: list[tuple[int, str, dict[str, Any]]] = []
    fields: dict[str, str] = {}
    while count is None or len(found) < count:
        line = response.fp.readline().decode()
        if not line:
            break
        line = line.rstrip("\n")
        if line.startswith(":"):
            continue
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
            continue
        if fields:
            found.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
            fields = {}
    return found


@pytest.fixture
def board() -> Iterator[FakeBoard]:
    opened = FakeBoard()
    yield opened
    opened.close()


def finished_task(board: FakeBoard, owner: str | None = None) -> str:
    task_id: str = board.create_task("go", owner=owner)["id"]
    board.start_task(task_id)
    board.note(task_id, {"type": "progress", "text": "half way"})
    board.say(task_id, "hello")
    board.finish(task_id, "done")
    board.accept_task(task_id)
    return task_id


def test_a_finished_tasks_events_stream_once_and_the_stream_ends(board: FakeBoard) -> None:
    task_id = finished_task(board)
    with live_server(board) as port:
        response = get(port, f"/events?task={task_id}&after=0")
        assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
        events = frames(response)
        assert [seq for seq, _, _ in events] == list(range(1, 8))
        assert [action for _, action, _ in events][:4] == ["task.state", "task.turn_start", "acp.progress",
                                                          "task.message"]
        assert all(payload["task_id"] == task_id and payload["seq"] == seq for seq, _, payload in events)
        assert events[-1][2]["data"]["state"] == "done"
        resumed = frames(get(port, f"/events?task={task_id}&after=1", **{"Last-Event-ID": "4"}))
        assert [seq for seq, _, _ in resumed] == [5, 6, 7]  # Last-Event-ID overrides after
        assert frames(get(port, f"/events?task={task_id}&after=7")) == []  # had it all: the stream just ends


def test_live_events_arrive_as_they_happen(board: FakeBoard) -> None:
    task_id = board.create_task("go")["id"]
    board.start_task(task_id)
    with live_server(board) as port:
        response = get(port, f"/events?task={task_id}")
        assert [seq for seq, _, _ in frames(response, 2)] == [1, 2]
        board.say(task_id, "live")
        assert frames(response, 1)[0][2]["data"] == {"text": "live"}
        board.finish(task_id, "done")
        board.discard_task(task_id)
        assert [payload["data"].get("state") for _, _, payload in frames(response)] == [None, "review", "discarded"]


@pytest.mark.parametrize(("target", "headers", "status", "words"), [
    ("/events?task={task}", {"Origin": "https://evil.example"}, 403, "Origin"),
    ("/events?task={task}", {}, 401, "bearer token"),
    ("/events?task={task}", {"Authorization": "Bearer nope"}, 401, "bearer token"),
    ("/events?task={task}", {"Authorization": "Bearer tok-bob"}, 404, "no task"),
    ("/events?task=missing", {"Authorization": "Bearer tok-alice"}, 404, "no task"),
    ("/events", {"Authorization": "Bearer tok-alice"}, 400, "name the task"),
    ("/events?task={task}&after=x", {"Authorization": "Bearer tok-alice"}, 400, "sequence number"),
    ("/events?task={task}&after=99", {"Authorization": "Bearer tok-alice"}, 400, "past the last event"),
])
def test_the_gate_refuses_with_a_reason(board: FakeBoard, target: str, headers: dict[str, str], status: int,
                                        words: str) -> None:
    task_id = finished_task(board, owner="alice")
    with live_server(board, tokens=TOKENS) as port:
        response = get(port, target.format(task=task_id), **headers)
        assert response.status == status
        assert words in response.read().decode()
        owned = get(port, f"/events?task={task_id}", Authorization="Bearer tok-alice")
        assert owned.status == 200 and len(frames(owned)) == 7


def test_only_get_is_served(board: FakeBoard) -> None:
    with live_server(board) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/events?task=x", body=b"{}")
        response = conn.getresponse()
        assert response.status == 405 and response.getheader("Allow") == "GET"
