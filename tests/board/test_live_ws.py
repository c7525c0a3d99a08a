"""The board's real `/ws` (and `/events`) as served by `mcp-agent-kit board`, with a client we did not write
(`websockets`, pinned) and raw sockets: the seed's WebSocket examples sent verbatim get the seed's answers;
a subscriber whose TCP connection drops resumes with `after` and sees no gap and no duplicate; hostile frames
get their close codes (1002 unmasked, 1003 binary, 1007 bad UTF-8, 1009 oversize) and a consumer that stops
reading gets 1008; a foreign Origin is refused before any upgrade; with tokens: no credentials 401, a bearer
token needs no CSRF, the page's cookie needs its CSRF token on every request, another principal's task is
`not_found`, and `/events` resumes from Last-Event-ID. The board is tests/board/fake_board.py's (its agent's
steps played by the test), one server per module (tests/board/boards.py: LiveServed).
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from mcp_agent_kit.httpd import websocket as ws
from tests.board.boards import LiveServed, live_served
from tests.board.fake_board import FakeBoard
from tests.board.test_live_docs import SEED_REQUESTS, SUCCESS, matches, seed_answer
from tests.board.test_live_http import frames
from tests.httpd.ws_app import close_code, handshake, masked
from tests.pinned import require

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}
EVIL = "https://evil.example"
OPTIONS: dict[str, Any] = {"proxy": None, "ping_interval": None, "open_timeout": 10, "close_timeout": 5,
                           "legacy": True}  # legacy: a connection not opened in a `with` (websockets 17)


@pytest.fixture(scope="module")
def board() -> Iterator[FakeBoard]:
    opened = FakeBoard(agents=("augment-agent", "echo"))
    opened.start()
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def site(board: FakeBoard) -> Iterator[LiveServed]:
    """The board with no token (a loopback bind: no sign-in)."""
    with live_served(board) as served:
        yield served


@pytest.fixture(scope="module")
def guarded(board: FakeBoard) -> Iterator[LiveServed]:
    """The same board served with two principals' tokens."""
    with live_served(board, tokens=TOKENS) as served:
        yield served


class Client:
    """A `websockets` sync client speaking the envelope: requests answered by id, notifications kept."""

    def __init__(self, url: str, **options: Any) -> None:
        require("websockets", "websockets==17.4")
        from websockets.sync.client import connect

        self.ws = connect(url, **{**OPTIONS, **options})
        self.notes: list[dict[str, Any]] = []
        self.count = 0

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.ws.close()

    def receive(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.ws.recv(10))
        return message

    def send(self, request: str | dict[str, Any]) -> dict[str, Any]:
        """Send one request (text as it is, or an envelope); its response or error (notifications kept)."""
        if isinstance(request, dict):
            self.count += 1
            request = json.dumps({"id": f"r{self.count}", "type": "request", **request})
        self.ws.send(request)
        while True:
            message = self.receive()
            if message["type"] == "notification":
                self.notes.append(message)
            else:
                return message

    def call(self, action: str, csrf: str | None = None, **payload: Any) -> dict[str, Any]:
        """The response's payload; AssertionError on an error."""
        request: dict[str, Any] = {"action": action, "payload": payload}
        if csrf is not None:
            request["csrf"] = csrf
        answer = self.send(request)
        assert answer["type"] == "response", answer
        result: dict[str, Any] = answer["payload"]
        return result

    def note(self) -> dict[str, Any]:
        """The next notification (kept ones first)."""
        if self.notes:
            return self.notes.pop(0)
        while (message := self.receive())["type"] != "notification":
            pass
        return message


def test_the_seeds_examples_over_the_socket_get_the_seeds_answers(site: LiveServed, board: FakeBoard) -> None:
    with Client(site.ws_url) as client:
        made = client.call("task.create", id="uuid", description="Add a login page", agent_type="augment-agent")
        assert made["id"] == "uuid"
        status = client.send(SEED_REQUESTS["orchestrator.status"])
        assert matches(seed_answer("orchestrator.status", {}), status)
        assert {key: type(value) for key, value in status["payload"].items()} == {
            "running": bool, "active_agents": int, "queued_tasks": int, "max_concurrent": int}
        started = client.send(SEED_REQUESTS["orchestrator.start"])
        assert matches(seed_answer("orchestrator.start", SUCCESS), started)
        assert isinstance(started["payload"]["agent_instance_id"], str)
        assert board.get_task("uuid")["priority"] == "high"  # the seed's 2
        assert matches(seed_answer("task.subscribe", SUCCESS), client.send(SEED_REQUESTS["task.subscribe"]))
        board.start_task("uuid")
        board.note("uuid", {"type": "progress", "text": "Processing files...", "progress": 50, "stage": "executing"})
        board.note("uuid", {"type": "error", "text": "Found no test directory"})
        seen = [client.note() for _ in range(4)]  # state, turn_start, progress, error
        assert [note["payload"]["seq"] for note in seen] == [1, 2, 3, 4]
        assert matches({"type": "notification", "action": "acp.progress",
                        "payload": {"task_id": "uuid", "type": "progress",
                                    "data": {"progress": 50, "stage": "executing", "message": "Processing files..."},
                                    "timestamp": "2026-01-10T12:00:00Z"}}, seen[2])
        assert matches({"type": "notification", "action": "acp.log",
                        "payload": {"task_id": "uuid", "data": {"level": "error"}}}, seen[3])
        board.finish("uuid", "a login page")
        assert matches(seed_answer("orchestrator.prompt", SUCCESS), client.send(SEED_REQUESTS["orchestrator.prompt"]))
        assert matches(seed_answer("orchestrator.stop", SUCCESS), client.send(SEED_REQUESTS["orchestrator.stop"]))
        assert board.get_task("uuid")["state"] == "cancelled"
        client.call("orchestrator.prompt", task_id="uuid", prompt="Go on")
        board.start_task("uuid")
        board.finish("uuid", "done")
        complete = client.send(SEED_REQUESTS["orchestrator.complete"])
        assert matches(seed_answer("orchestrator.complete", SUCCESS), complete)
        assert board.get_task("uuid")["state"] == "done"


def test_a_dropped_connection_resumes_with_no_gap_and_no_duplicate(site: LiveServed, board: FakeBoard) -> None:
    task_id = board.create_task("stream to a flaky reader")["id"]
    board.start_task(task_id)
    for word in ("one", "two", "three", "four"):
        board.say(task_id, word)
    first = Client(site.ws_url)
    assert first.call("task.subscribe", task_id=task_id, after=0)["seq"] == 6
    seen = [first.note()["payload"] for _ in range(3)]
    raw = first.ws.socket  # dropped abruptly: a reset, no close frame
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    raw.close()
    for word in ("five", "six"):  # said while nobody listens
        board.say(task_id, word)
    board.finish(task_id, "done")
    with Client(site.ws_url) as second:
        last = seen[-1]["seq"]
        assert second.call("task.subscribe", task_id=task_id, after=last)["seq"] == 10
        seen += [second.note()["payload"] for _ in range(10 - last)]
        board.say(task_id, "live")  # and what comes after, once
        seen.append(second.note()["payload"])
    assert [payload["seq"] for payload in seen] == list(range(1, 12))
    logged = board.task_events(task_id)["events"]
    assert [payload["data"].get("text") for payload in seen] == [event.get("text") for event in logged]


def test_hostile_frames_get_their_close_codes(site: LiveServed) -> None:
    from websockets.exceptions import ConnectionClosed

    for frame, code in ((ws.frame(ws.TEXT, b"hi"), 1002), (masked(ws.TEXT, b"\xff\xfe bad"), 1007)):
        with handshake(site.http, extra="") as raw:
            raw.sendall(frame)
            assert close_code(raw) == code
    for message, code in ((b"\x00binary", 1003), ("x" * ((1 << 20) + 1), 1009)):
        with Client(site.ws_url) as client:
            client.ws.send(message)
            with pytest.raises(ConnectionClosed) as closed:
                client.ws.recv(10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == code


def test_a_consumer_that_stops_reading_is_closed_with_1008(site: LiveServed, board: FakeBoard) -> None:
    from websockets.exceptions import ConnectionClosed

    task_id = board.create_task("a lot to say")["id"]
    board.start_task(task_id)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel holds little for it
    sock.connect(("127.0.0.1", site.port))
    with Client(site.ws_url, sock=sock, max_size=None) as client:
        client.call("task.subscribe", task_id=task_id, after=0)
        for _ in range(4):  # 12 MiB sent at it, more than the queue's bound (4 MiB) and the kernel's buffers
            board.say(task_id, "x" * (3 << 20))
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                client.ws.recv(10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


def test_a_foreign_origin_is_refused_before_the_upgrade(site: LiveServed) -> None:
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus) as refused:
        Client(site.ws_url, origin=EVIL)
    response = refused.value.response
    assert response.status_code == 403 and "Upgrade" not in response.headers
    with Client(site.ws_url, origin=site.origin) as client:  # the page's own origin is welcome
        assert client.call("orchestrator.status")["running"] is True


def sign_in(served: LiveServed, token: str) -> tuple[str, str]:
    """The page's way in: (the session cookie, its CSRF token)."""
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.request("POST", "/login", urlencode({"token": token}),
                     {"Content-Type": "application/x-www-form-urlencoded", "Origin": served.origin})
        reply = conn.getresponse()
        reply.read()
        cookie = (reply.getheader("Set-Cookie") or "").split(";")[0]
        assert reply.status == 303 and cookie.startswith("mak_session="), (reply.status, cookie)
        conn.request("GET", "/api/session", headers={"Cookie": cookie})
        session = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    return cookie, session["csrf"]


def test_who_may_use_the_socket_with_tokens(guarded: LiveServed) -> None:
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus) as refused:
        Client(guarded.ws_url)
    assert refused.value.response.status_code == 401
    bearer = {"additional_headers": {"Authorization": "Bearer tok-alice"}}
    with Client(guarded.ws_url, **bearer) as alice:  # a program: the token, and no CSRF
        task = alice.call("task.create", description="alice's own", hold=True)
        assert task["owner"] == "alice"
    cookie, csrf = sign_in(guarded, "tok-bob")
    with Client(guarded.ws_url, origin=guarded.origin, additional_headers={"Cookie": cookie}) as bob:
        refused_csrf = bob.send({"action": "orchestrator.status", "payload": {}})
        assert refused_csrf["type"] == "error" and refused_csrf["payload"]["code"] == "csrf"
        wrong = bob.send({"action": "orchestrator.status", "payload": {}, "csrf": csrf[::-1]})
        assert wrong["payload"]["code"] == "csrf"
        assert bob.call("orchestrator.status", csrf=csrf)["running"] is True
        for action in ("task.get", "task.subscribe", "task.cancel"):
            answer = bob.send({"action": action, "payload": {"task_id": task["id"]}, "csrf": csrf})
            assert (answer["type"], answer["payload"]["code"]) == ("error", "not_found"), answer
        assert bob.call("task.list", csrf=csrf)["tasks"] == []


def test_events_resume_from_last_event_id(guarded: LiveServed, board: FakeBoard) -> None:
    task_id = board.create_task("for the SSE reader", owner="alice")["id"]
    board.start_task(task_id)
    for word in ("a", "b", "c"):
        board.say(task_id, word)
    conn = http.client.HTTPConnection("127.0.0.1", guarded.port, timeout=30)
    try:
        conn.request("GET", f"/events?task={task_id}&after=0",
                     headers={"Authorization": "Bearer tok-alice", "Last-Event-ID": "3"})
        response = conn.getresponse()
        assert response.status == 200
        assert [(seq, payload["data"]["text"]) for seq, _, payload in frames(response, 2)] == [(4, "b"), (5, "c")]
    finally:
        conn.close()
