"""Interop: the official a2a-sdk 1.3.0 Python client (the acceptance oracle) against our server."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

# a2a-sdk[http-server]==1.3.0 is a pinned test dependency: without it this module fails to import (no skip)
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import new_data_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from google.protobuf.json_format import MessageToDict

from .conftest import Live


def _msg(*parts: Part, task_id: str = "", context_id: str = "") -> Message:
    return Message(
        message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=list(parts), task_id=task_id, context_id=context_id
    )


async def _client(live: Live, streaming: bool) -> Any:
    async with httpx.AsyncClient() as hc:
        card = await A2ACardResolver(hc, live.base).get_agent_card()
    return card, await create_client(card, client_config=ClientConfig(streaming=streaming))


async def _send(client: Any, message: Message) -> tuple[list[str], Any]:
    kinds: list[str] = []
    task = None
    async for event in client.send_message(SendMessageRequest(message=message)):
        kind = event.WhichOneof("payload")
        kinds.append(kind)
        if kind == "task":
            task = event.task
        elif kind == "status_update" and task is not None:
            task.status.CopyFrom(event.status_update.status)
    return kinds, task


def test_card_resolution(metrics: Live) -> None:
    async def go() -> None:
        card, client = await _client(metrics, False)
        assert card.name == "Metrics"
        assert card.capabilities.streaming
        assert [s.id for s in card.skills] == ["calculate_metrics"]
        assert card.skills[0].tags and card.skills[0].examples
        assert card.supported_interfaces[0].protocol_binding == "JSONRPC"
        assert card.supported_interfaces[0].url == f"{metrics.base}/a2a"
        await client.close()

    asyncio.run(go())


def test_unary_send_get_and_typed_not_found(metrics: Live) -> None:
    async def go() -> None:
        _, client = await _client(metrics, streaming=False)
        part = new_data_part({"skill": "calculate_metrics", "arguments": {"values": [2, 40], "metric_type": "sum"}})
        kinds, task = await _send(client, _msg(part))
        assert kinds == ["task"]
        assert TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
        data = MessageToDict(task.artifacts[0].parts[0])["data"]
        assert data == {"metric": "sum", "value": 42, "count": 2}
        fetched = await client.get_task(GetTaskRequest(id=task.id, history_length=0))
        assert fetched.id == task.id and len(fetched.history) == 0
        assert TaskState.Name(fetched.status.state) == "TASK_STATE_COMPLETED"
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task.id))
        await client.close()

    asyncio.run(go())


def test_streaming_send(metrics: Live) -> None:
    async def go() -> None:
        _, client = await _client(metrics, streaming=True)
        part = new_data_part({"skill": "calculate_metrics", "arguments": {"values": [1, 2, 3]}})
        kinds, task = await _send(client, _msg(part))
        assert kinds == ["task", "status_update", "artifact_update", "status_update"]
        assert TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
        await client.close()

    asyncio.run(go())


def test_input_required_continuation_then_list(metrics: Live) -> None:
    async def go() -> None:
        _, client = await _client(metrics, streaming=False)
        first = new_data_part({"skill": "calculate_metrics", "arguments": {"metric_type": "max"}})
        _, task = await _send(client, _msg(first))
        assert TaskState.Name(task.status.state) == "TASK_STATE_INPUT_REQUIRED"
        question = MessageToDict(task.status.message)
        assert "values" in question["parts"][0]["text"]
        _, done = await _send(client, _msg(new_data_part({"values": [3, 9, 4]}), task_id=task.id))
        assert done.id == task.id
        assert TaskState.Name(done.status.state) == "TASK_STATE_COMPLETED"
        assert MessageToDict(done.artifacts[0].parts[0])["data"]["value"] == 9
        listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
        assert [t.id for t in listed.tasks] == [task.id]
        assert listed.total_size == 1
        await client.close()

    asyncio.run(go())


def test_subscribe_and_cancel(metrics: Live) -> None:
    async def go() -> None:
        _, client = await _client(metrics, streaming=True)
        first = new_data_part({"skill": "calculate_metrics", "arguments": {}})
        _, task = await _send(client, _msg(first))
        assert TaskState.Name(task.status.state) == "TASK_STATE_INPUT_REQUIRED"

        async def watch() -> list[str]:
            seen = []
            async for event in client.subscribe(SubscribeToTaskRequest(id=task.id)):
                kind = event.WhichOneof("payload")
                state = event.task.status.state if kind == "task" else event.status_update.status.state
                seen.append(f"{kind}:{TaskState.Name(state)}")
            return seen

        watchers = [asyncio.create_task(watch()) for _ in range(2)]
        for _ in range(200):  # until both subscriptions are registered
            if len(metrics.server.engine._subs.get(task.id, [])) == 2:
                break
            await asyncio.sleep(0.01)
        canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
        assert TaskState.Name(canceled.status.state) == "TASK_STATE_CANCELED"
        expected = ["task:TASK_STATE_INPUT_REQUIRED", "status_update:TASK_STATE_CANCELED"]
        assert await asyncio.gather(*watchers) == [expected, expected]
        await client.close()

    asyncio.run(go())


@pytest.mark.parametrize("streaming", [False, True])
def test_http_json_binding(metrics: Live, streaming: bool) -> None:
    async def go() -> None:
        async with httpx.AsyncClient() as hc:
            card = await A2ACardResolver(hc, metrics.base).get_agent_card()
        config = ClientConfig(streaming=streaming, supported_protocol_bindings=["HTTP+JSON"])
        client = await create_client(card, client_config=config)
        part = new_data_part({"skill": "calculate_metrics", "arguments": {"values": [5, 1], "metric_type": "min"}})
        kinds, task = await _send(client, _msg(part))
        assert kinds[0] == "task" and len(kinds) == (4 if streaming else 1)
        assert TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
        fetched = await client.get_task(GetTaskRequest(id=task.id))
        assert MessageToDict(fetched.artifacts[0].parts[0])["data"]["value"] == 1
        listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id, include_artifacts=True))
        assert [t.id for t in listed.tasks] == [task.id] and len(listed.tasks[0].artifacts) == 1
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task.id))
        await client.close()

    asyncio.run(go())
