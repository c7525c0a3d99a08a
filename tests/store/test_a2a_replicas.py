"""Acceptance: three replicas of the A2A example on one shared store, driven by the official a2a-sdk 1.3.0 client.

Each backend (sqlite: three processes on one host; PostgreSQL: a real server) runs three
`examples/a2a_tck_agent.py` processes with `--store URL`. A client pinned to one replica (its own
URL) shows which replica did what; the 200-message burst goes through the round-robin proxy with
a fresh connection per request. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from google.protobuf.json_format import MessageToDict

from tests.store.replicas import Replicas
from tests.store.rr_proxy import RoundRobinProxy

AGENT = ["examples/a2a_tck_agent.py", "--http", "127.0.0.1:{port}", "--verbose"]  # verbose: a job's end is logged
LEASE_S = 2.0


@pytest.fixture
def replicas(shared_url: str) -> Iterator[Replicas]:
    with Replicas(AGENT, n=3, store_url=shared_url, lease_s=LEASE_S) as running:
        yield running


def state(task: Any) -> str:
    return str(TaskState.Name(task.status.state))


def message(prefix: str, task_id: str = "", message_id: str | None = None) -> Message:
    return Message(message_id=message_id or f"{prefix}-{uuid.uuid4()}", role=Role.ROLE_USER,
                   parts=[Part(text="hello")], task_id=task_id)


async def client(base: str, streaming: bool = False, fresh_connections: bool = False) -> Any:
    """An a2a-sdk client whose every call goes to `base` (a replica, or the proxy)."""
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, base).get_agent_card()
    card.supported_interfaces[0].url = f"{base}/a2a"  # the card names the replica's own address
    limits = httpx.Limits(max_keepalive_connections=0) if fresh_connections else httpx.Limits()
    http_client = httpx.AsyncClient(timeout=60, limits=limits)
    return await create_client(card, client_config=ClientConfig(streaming=streaming, httpx_client=http_client))


async def send(peer: Any, msg: Message, immediately: bool = False) -> Any:
    config = SendMessageConfiguration(return_immediately=immediately)
    task = None
    async for event in peer.send_message(SendMessageRequest(message=msg, configuration=config)):
        kind = event.WhichOneof("payload")
        if kind == "task":
            task = event.task
        elif kind == "message":
            return event.message
        elif kind == "status_update" and task is not None:
            task.status.CopyFrom(event.status_update.status)
    return task


async def until(check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = await check()
        if found or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


def test_created_on_one_read_and_canceled_on_others_continued_on_another(replicas: Replicas) -> None:
    async def go() -> None:
        one, two, three = [await client(replicas.url(i)) for i in range(3)]
        task = await send(one, message("test-resubscribe-message-id"), immediately=True)  # works 4 s
        seen = await two.get_task(GetTaskRequest(id=task.id))
        assert seen.id == task.id and state(seen) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        canceled = await three.cancel_task(CancelTaskRequest(id=task.id))
        assert state(canceled) == "TASK_STATE_CANCELED"
        assert state(await one.get_task(GetTaskRequest(id=task.id))) == "TASK_STATE_CANCELED"
        listed = await two.list_tasks(ListTasksRequest(context_id=task.context_id))
        assert [t.id for t in listed.tasks] == [task.id]

        asked = await send(one, message("tck-input-required"))
        assert state(asked) == "TASK_STATE_INPUT_REQUIRED"
        answered = await send(two, message("tck-complete-task", task_id=asked.id))
        assert answered.id == asked.id and state(answered) == "TASK_STATE_COMPLETED"
        done = await three.get_task(GetTaskRequest(id=asked.id))
        texts = [MessageToDict(m)["parts"][0]["text"] for m in done.history]
        assert texts == ["hello", "Please provide more input", "hello", "Hello from TCK"]
        async def job_ended() -> bool:  # on replica 1, which runs it; had it gone on to complete, it would have
            return f"task {task.id}: its job ended (canceled)" in replicas.output(0)
        assert await until(job_ended, 15), "the canceled job never ended"
        assert state(await two.get_task(GetTaskRequest(id=task.id))) == "TASK_STATE_CANCELED"
        for peer in (one, two, three):
            await peer.close()

    asyncio.run(asyncio.wait_for(go(), 60))


def test_a_subscription_on_replica_two_sees_every_event_of_a_task_on_replica_one(replicas: Replicas) -> None:
    async def go() -> None:
        one = await client(replicas.url(0), streaming=True)
        two = await client(replicas.url(1), streaming=True)
        sent: list[dict[str, Any]] = []
        first = asyncio.get_running_loop().create_future()

        async def run() -> None:
            request = SendMessageRequest(message=message("steps"))
            async for event in one.send_message(request):
                sent.append(MessageToDict(event))
                if not first.done():
                    first.set_result(event.task.id)
        sender = asyncio.create_task(run())
        task_id = await asyncio.wait_for(first, 30)
        followed = [MessageToDict(event) async for event in two.subscribe(SubscribeToTaskRequest(id=task_id))]
        await asyncio.wait_for(sender, 30)
        assert "task" in followed[0] and followed[0]["task"]["id"] == task_id
        updates = followed[1:]
        assert updates == sent[len(sent) - len(updates):]  # the same events, in the same order
        steps = [u["artifactUpdate"]["artifact"]["parts"][0]["text"] for u in updates if "artifactUpdate" in u]
        assert steps == [f"step {n}" for n in range(1, 6)]
        assert updates[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        await one.close()
        await two.close()

    asyncio.run(asyncio.wait_for(go(), 60))


def test_kill_9_of_the_running_replica_fails_its_task_within_the_lease(replicas: Replicas) -> None:
    async def go() -> None:
        one, two = await client(replicas.url(0)), await client(replicas.url(1))
        task = await send(one, message("test-resubscribe-message-id"), immediately=True)
        replicas.kill(0)
        killed = time.monotonic()

        async def failed() -> Any:
            found = await two.get_task(GetTaskRequest(id=task.id))
            return found if state(found) == "TASK_STATE_FAILED" else None
        found = await until(failed, 15)
        assert found, "the task of the killed replica was never failed"
        assert time.monotonic() - killed < LEASE_S + 3  # the lease, one renewal period, one poll
        assert "lease expired" in MessageToDict(found.status.message)["parts"][0]["text"]
        three = await client(replicas.url(2))
        assert state(await three.get_task(GetTaskRequest(id=task.id))) == "TASK_STATE_FAILED"
        for peer in (one, two, three):
            await peer.close()

    asyncio.run(asyncio.wait_for(go(), 60))


def test_200_concurrent_messages_over_three_replicas_none_lost_none_run_twice(replicas: Replicas) -> None:
    async def go() -> None:
        with RoundRobinProxy(replicas.ports) as proxy:
            peer = await client(proxy.url, fresh_connections=True)
            messages = [message("tck-complete-task") for _ in range(200)]
            retries = messages[::4]  # 50 of them sent again at once: a client retrying on another replica
            results = await asyncio.gather(*(send(peer, m) for m in [*messages, *retries]))
            assert all(state(task) == "TASK_STATE_COMPLETED" for task in results)
            ids = [task.id for task in results[:200]]
            assert len(set(ids)) == 200
            assert [task.id for task in results[200:]] == ids[::4]
            assert min(proxy.picks) > 0
            listed = await peer.list_tasks(ListTasksRequest(page_size=100))
            assert listed.total_size == 200
            for task_id in ids[:20]:
                task = await peer.get_task(GetTaskRequest(id=task_id))
                assert len(task.history) == 2  # one message, one answer: the work ran once
            await peer.close()

    asyncio.run(asyncio.wait_for(go(), 120))
