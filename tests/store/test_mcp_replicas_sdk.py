"""Acceptance (issue 19, MCP side) with the official mcp==2.3.0 client end to end: three SDK clients,
each connected to another replica of the everything server, share one task — created through
replica 1 (the SDK's own tasks-extension claim receives the CreateTaskResult), polled through
replica 2 and cancelled through replica 3; and an input_required task created on replica 1 is
answered with `tasks/update` through replica 3 and completes as seen from replica 2."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.pinned import require
from tests.store.test_mcp_replicas import Cluster, cluster  # noqa: F401  (the fixture)

mcp = require("mcp", "mcp==2.3.0 (the interop peer)")
from mcp import Client, types  # noqa: E402
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim  # noqa: E402

from tests.sdk_tasks import AnyResult, CreatedTask, TaskParams, TasksCancel, TasksGet, TasksUpdate  # noqa: E402

WAIT_S = 20.0


class Tasks(ClientExtension):
    """Declares the tasks extension; a created task is handed to `resolve` (set per test)."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.resolve: Any = None

    def claims(self) -> list[ResultClaim[Any]]:
        async def resolve(created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
            result: types.CallToolResult = await self.resolve(created)
            return result
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=resolve)]


async def request(client: Client, kind: type[types.Request[Any, Any]], task_id: str, **more: Any) -> dict[str, Any]:
    reply = await client.session.send_request(kind(params=TaskParams(task_id=task_id, **more)), AnyResult)
    body: dict[str, Any] = reply.model_dump(by_alias=True, exclude_none=True)
    return body


async def until_status(client: Client, task_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    seen: list[str] = []
    while time.monotonic() < deadline:
        task = await request(client, TasksGet, task_id)
        seen.append(task["status"])
        if task["status"] == status:
            return task
        assert task["status"] not in ("completed", "failed", "cancelled"), task
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {task_id} never reached {status}: {seen[-5:]}")


async def across(urls: list[str]) -> dict[str, Any]:
    got: dict[str, Any] = {}
    async with Client(urls[1], extensions=[Tasks()]) as second, Client(urls[2], extensions=[Tasks()]) as third:
        first_tasks = Tasks()

        async def poll_then_cancel(created: CreatedTask) -> types.CallToolResult:
            got["created"] = created.status
            got["polled"] = (await request(second, TasksGet, created.task_id))["status"]
            await request(third, TasksCancel, created.task_id)
            got["after_cancel"] = (await until_status(second, created.task_id, "cancelled"))["status"]
            return types.CallToolResult(content=[types.TextContent(type="text", text="cancelled")], is_error=True)

        async def answer_elsewhere(created: CreatedTask) -> types.CallToolResult:
            waiting = await until_status(second, created.task_id, "input_required")
            (key, asked), = waiting["inputRequests"].items()
            got["asked"] = asked["method"]
            await request(third, TasksUpdate, created.task_id,
                          input_responses={key: {"action": "accept", "content": {"confirm": True}}})
            done = await until_status(second, created.task_id, "completed")
            return types.CallToolResult.model_validate(done["result"])

        async def by_hand(context: Any, params: Any) -> Any:  # declares elicitation; answered via tasks/update
            raise AssertionError("a task's question is answered through tasks/update, not elicitation")

        async with Client(urls[0], extensions=[first_tasks], elicitation_callback=by_hand) as first:
            first_tasks.resolve = poll_then_cancel
            await first.call_tool("slow_compute", {"seconds": 60})
            first_tasks.resolve = answer_elsewhere
            confirmed = await first.call_tool("confirm_delete", {"filename": "a.txt"})
            got["confirmed"] = confirmed.content[0].text  # type: ignore[union-attr]
    return got


def test_the_official_client_drives_one_task_through_three_replicas(cluster: Cluster) -> None:  # noqa: F811
    urls = [cluster.replicas.url(i) + "/mcp" for i in range(3)]
    got = asyncio.run(across(urls))
    assert got["created"] == "working" and got["polled"] == "working" and got["after_cancel"] == "cancelled"
    assert got["asked"] == "elicitation/create"
    assert got["confirmed"] == "deleted a.txt"
