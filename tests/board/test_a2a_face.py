"""The board's A2A face (board.a2a_face) driven by the official a2a-sdk client, over the in-memory board
(tests/board/fake_board.py: real BoardTasks; the test plays the scheduler and the agent), served as the
board command serves it: on the MCP endpoint's port."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# a2a-sdk[http-server]==1.3.0 is a pinned test dependency
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError
from google.protobuf.json_format import MessageToDict, ParseDict

from mcp_agent_kit.board.a2a_face import BoardFace
from mcp_agent_kit.board.cli import SAME_PORT, Serving, a2a_face, make_board_http
from mcp_agent_kit.board.states import A2A_STATES
from mcp_agent_kit.board.webhooks import verify_signature
from tests.board.fake_board import FakeBoard
from tests.board.surfaces import DIFF, PERMISSION
from tests.net import until


class Served:
    def __init__(self, board: FakeBoard, face: BoardFace, serving: Serving) -> None:
        self.board, self.face, self.serving = board, face, serving
        assert serving.a2a is not None
        self.base = serving.a2a.face.url
        self.mcp_url = serving.http.url

    def run(self, coro: Any) -> Any:
        return asyncio.run(coro)

    async def client(self, streaming: bool = False) -> Any:
        async with httpx.AsyncClient() as hc:
            card = await A2ACardResolver(hc, self.base).get_agent_card()
        return await create_client(card, client_config=ClientConfig(streaming=streaming))


@pytest.fixture
def served(tmp_path: Any) -> Iterator[Served]:
    """The face as `mcp-agent-kit board` serves it: on the MCP endpoint's port (board.cli's wiring)."""
    board = FakeBoard(None, tmp_path)
    face = BoardFace(board, wait_timeout=10)
    http, tools = make_board_http(board, "127.0.0.1", 0)
    serving = Serving(http, tools, a2a_face(board, http, "127.0.0.1", SAME_PORT, {}, face))
    thread = threading.Thread(target=serving.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Served(board, face, serving)
    finally:
        serving.shutdown()
        serving.server_close()
        thread.join(10)
        board.close()


def message(text: str | None = None, *, task_id: str = "", data: dict[str, Any] | None = None,
            metadata: dict[str, Any] | None = None) -> Message:
    body: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                            "parts": [{"text": text}] if data is None else [{"data": data}]}
    if task_id:
        body["taskId"] = task_id
    if metadata:
        body["metadata"] = metadata
    return ParseDict(body, Message())


async def send(client: Any, msg: Message, immediate: bool = True) -> Any:
    request = ParseDict({"configuration": {"returnImmediately": immediate}}, SendMessageRequest())
    request.message.CopyFrom(msg)
    task = None
    async for event in client.send_message(request):
        if event.WhichOneof("payload") == "task":
            task = event.task
    return task


def state_name(task: Any) -> str:
    return str(TaskState.Name(task.status.state))


def test_card_names_the_skills_and_push(served: Served) -> None:
    async def go() -> None:
        async with httpx.AsyncClient() as hc:
            card = await A2ACardResolver(hc, served.base).get_agent_card()
        assert card.capabilities.streaming and card.capabilities.push_notifications
        assert {skill.id for skill in card.skills} == {"create_task", "answer_question", "follow_up"}
        assert card.supported_interfaces[0].url == served.base + "/a2a"
        assert served.mcp_url == served.base + "/mcp"  # one port: the card names the MCP endpoint's origin
    served.run(go())


def test_send_creates_a_task_with_the_metadata(served: Served) -> None:
    async def go() -> None:
        client = await served.client()
        task = await send(client, message("Add a flag", metadata={"agent": "other", "priority": "urgent",
                                                                  "title": "The flag"}))
        board_task = served.board.get_task(task.id)
        assert (board_task["prompt"], board_task["agent"], board_task["priority"], board_task["title"]) == (
            "Add a flag", "other", "urgent", "The flag")
        assert state_name(task) == "TASK_STATE_SUBMITTED" and task.context_id == task.id
        meta = MessageToDict(task.metadata)
        assert meta["state"] == "queued" and meta["priority"] == "urgent"
        assert [part.text for part in task.history[0].parts] == ["Add a flag"]
    served.run(go())


def test_get_task_maps_every_board_state(served: Served) -> None:
    board = served.board

    def driven() -> dict[str, str]:
        ids: dict[str, str] = {}
        ids["held"] = board.create_task("h", hold=True)["id"]
        ids["queued"] = board.create_task("q")["id"]
        for state in ("running", "needs_input", "review", "done", "discarded", "failed", "cancelled"):
            task_id = board.create_task(state)["id"]
            board.start_task(task_id)
            if state == "needs_input":
                board.ask(task_id, PERMISSION)
            elif state in ("review", "done", "discarded"):
                board.say(task_id, "all done")
                board.finish(task_id, "all done", DIFF)
                if state == "done":
                    board.accept_task(task_id)
                elif state == "discarded":
                    board.discard_task(task_id)
            elif state == "failed":
                board.fail(task_id, "it broke")
            elif state == "cancelled":
                board.cancel_task(task_id)
            ids[state] = task_id
        return ids

    ids = driven()

    async def go() -> None:
        client = await served.client()
        for state, task_id in ids.items():
            task = await client.get_task(GetTaskRequest(id=task_id))
            assert state_name(task) == A2A_STATES[state], state
            assert MessageToDict(task.metadata)["state"] == state
        question = await client.get_task(GetTaskRequest(id=ids["needs_input"]))
        assert question.status.message.parts[0].text == "Write echo.txt?"
        review = MessageToDict(await client.get_task(GetTaskRequest(id=ids["review"])))
        assert review["status"]["message"]["parts"][0]["text"] == "all done"
        assert review["artifacts"][0]["parts"][1]["data"]["files"][0]["path"] == "echo.txt"
        assert [m["role"] for m in review["history"]] == ["ROLE_USER", "ROLE_AGENT"]
        failed = await client.get_task(GetTaskRequest(id=ids["failed"]))
        assert failed.status.message.parts[0].text == "it broke"
        short = await client.get_task(GetTaskRequest(id=ids["review"], history_length=1))
        assert len(short.history) == 1 and short.history[0].parts[0].text == "all done"
    served.run(go())


def test_answer_a_question_by_option_name(served: Served) -> None:
    board = served.board
    task_id = board.create_task("write it")["id"]
    board.start_task(task_id)
    board.ask(task_id, PERMISSION)

    async def go() -> None:
        client = await served.client()
        task = await send(client, message("allow", task_id=task_id))
        assert state_name(task) == "TASK_STATE_WORKING"
        assert board.get_task(task_id)["state"] == "running"
        events = board.task_events(task_id)["events"]
        assert events[-1]["answer"] == "allow"
    served.run(go())


def test_answer_a_schema_question_with_a_data_part(served: Served) -> None:
    board = served.board
    task_id = board.create_task("pick")["id"]
    board.start_task(task_id)
    board.ask(task_id, {"kind": "question", "message": "Which?", "schema": {"type": "object"}})

    async def go() -> None:
        client = await served.client()
        await send(client, message(task_id=task_id, data={"choice": "b"}))
        assert board.task_events(task_id)["events"][-1]["answer"] == {"choice": "b"}
    served.run(go())


def test_follow_up_from_review_and_blocking_send(served: Served) -> None:
    board = served.board
    task_id = board.create_task("first")["id"]
    board.start_task(task_id)
    board.finish(task_id, "did it")

    def agent() -> None:  # the scheduler's part: once the follow-up is queued, run it to review
        board.wait_task(task_id, {"queued"}, 10)
        board.start_task(task_id)
        board.say(task_id, "again")
        board.finish(task_id, "again")

    runner = threading.Thread(target=agent)
    runner.start()

    async def go() -> None:
        client = await served.client()
        task = await send(client, message("and the tests", task_id=task_id), immediate=False)
        assert state_name(task) == "TASK_STATE_INPUT_REQUIRED"
        assert board.get_task(task_id)["prompt"] == "and the tests"
        texts = [part.text for m in task.history for part in m.parts]
        assert texts == ["first", "and the tests", "again"]
    served.run(go())
    runner.join(10)


def test_cancel_and_the_errors(served: Served) -> None:
    board = served.board
    live = board.create_task("go")["id"]
    done = board.create_task("end")["id"]
    board.start_task(done)
    board.finish(done, "ok")
    board.accept_task(done)

    async def go() -> None:
        client = await served.client()
        canceled = await client.cancel_task(CancelTaskRequest(id=live))
        assert state_name(canceled) == "TASK_STATE_CANCELED" and board.get_task(live)["state"] == "cancelled"
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=done))
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="nope"))
        with pytest.raises(TaskNotFoundError):
            await send(client, message("hi", task_id="nope"))
        with pytest.raises(UnsupportedOperationError):
            await send(client, message("more", task_id=done))
        with pytest.raises(UnsupportedOperationError):  # CANCELED is terminal to A2A: MCP or the CLI prompt it
            await send(client, message("again", task_id=live))
        assert board.get_task(live)["state"] == "cancelled"
        streaming = await served.client(streaming=True)
        with pytest.raises(UnsupportedOperationError):
            async for _ in streaming.subscribe(SubscribeToTaskRequest(id=done)):
                pass
    served.run(go())


def test_list_tasks_newest_first_with_pages(served: Served) -> None:
    ids = [served.board.create_task(f"t{i}")["id"] for i in range(3)]
    served.board.start_task(ids[0])

    async def go() -> None:
        client = await served.client()
        first = await client.list_tasks(ListTasksRequest(page_size=2))
        assert [task.id for task in first.tasks] == [ids[2], ids[1]] and first.total_size == 3
        rest = await client.list_tasks(ListTasksRequest(page_size=2, page_token=first.next_page_token))
        assert [task.id for task in rest.tasks] == [ids[0]] and rest.next_page_token == ""
        working = await client.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_WORKING))
        assert [task.id for task in working.tasks] == [ids[0]]
    served.run(go())


def test_subscribe_streams_the_events_in_order(served: Served) -> None:
    board = served.board
    task_id = board.create_task("stream it")["id"]

    async def go() -> list[Any]:
        client = await served.client(streaming=True)
        seen: list[Any] = []
        async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
            seen.append(MessageToDict(event))
            if len(seen) == 1:  # subscribed: now the agent works
                board.start_task(task_id)
                board.say(task_id, "Hel")
                board.say(task_id, "lo")
                board.ask(task_id, PERMISSION)
                board.answer_task(task_id, "allow")
                board.finish(task_id, "Hello")
                board.accept_task(task_id)
        return seen

    seen = served.run(go())
    kinds = [next(iter(event)) for event in seen]
    assert kinds[0] == "task"
    states = [event["statusUpdate"]["status"]["state"] for event in seen if "statusUpdate" in event]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING",
                      "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]
    chunks = [event["artifactUpdate"] for event in seen if "artifactUpdate" in event]
    assert [c["artifact"]["parts"][0]["text"] for c in chunks] == ["Hel", "lo"]
    assert "append" not in chunks[0] and chunks[1]["append"] is True
    assert kinds.index("artifactUpdate") < kinds.index("statusUpdate", 2)


class Receiver:
    """A push endpoint: keeps each POST's headers and body."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_push_config_gets_signed_authorized_state_changes(served: Served) -> None:
    receiver = Receiver()
    board = served.board
    task_id = board.create_task("push it")["id"]

    async def configure() -> None:
        client = await served.client()
        config = ParseDict({"taskId": task_id, "url": receiver.url, "token": "tok-123",
                            "authentication": {"scheme": "Bearer", "credentials": "cred-9"}},
                           TaskPushNotificationConfig())
        made = await client.create_task_push_notification_config(config)
        assert made.id and made.url == receiver.url
        from a2a.types import ListTaskPushNotificationConfigsRequest

        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id))
        assert [c.id for c in listed.configs] == [made.id]
    try:
        served.run(configure())
        board.start_task(task_id)
        board.say(task_id, "working")  # not a state change: nothing pushed
        board.finish(task_id, "pushed")
        assert served.face.sender.wait_idle(10)
        until(lambda: len(receiver.got) >= 2, "two pushes")
        states = [json.loads(body)["statusUpdate"]["status"]["state"] for _, body in receiver.got]
        assert states == ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]
        headers, body = receiver.got[1]
        assert headers["authorization"] == "Bearer cred-9"
        assert headers["x-a2a-notification-token"] == "tok-123"
        assert headers["content-type"] == "application/a2a+json"
        assert verify_signature(headers["x-board-signature"], body, b"tok-123", now=time.time())
        assert not verify_signature(headers["x-board-signature"], body + b" ", b"tok-123", now=time.time())
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


def test_push_config_refuses_a_link_local_url(served: Served) -> None:
    task_id = served.board.create_task("x")["id"]
    reply = served.face.push_config
    from mcp_agent_kit.a2a.protocol import A2AError

    with pytest.raises(A2AError) as refused:
        reply("CreateTaskPushNotificationConfig", "p", {"taskId": task_id, "url": "http://169.254.169.254/x"})
    assert refused.value.name == "InvalidParams"


def test_a_task_sent_over_a2a_is_owned_by_the_senders_principal(board: FakeBoard) -> None:
    face = BoardFace(board)
    try:
        message = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "fix it"}]}
        sent = face.send("token:abc", {"message": message, "configuration": {"returnImmediately": True}})
        anonymous = face.send("", {"message": {**message, "messageId": "m2"},
                                   "configuration": {"returnImmediately": True}})
        assert isinstance(sent, dict) and isinstance(anonymous, dict)
        assert board.get_task(sent["task"]["id"])["owner"] == "token:abc"
        assert board.get_task(anonymous["task"]["id"])["owner"] is None
    finally:
        face.close()
