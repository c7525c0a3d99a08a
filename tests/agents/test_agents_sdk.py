"""The official mcp==2.3.0 client drives the a2a-sdk 1.3.0 fixture agent through the gateway.

Blocking calls use the client as it is; task mode uses a small tasks-extension client written on
the SDK's own extension API (ClientExtension + ResultClaim for `resultType: "task"`): it advertises
`io.modelcontextprotocol/tasks`, polls `tasks/get`, answers `inputRequests` with `tasks/update`
(from the question's form: the first enum choice, approvals granted) and returns the task's result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from tests.agents.conftest import GatewayRun
from tests.pinned import require

mcp = require("mcp", "mcp==2.3.0 (the interop peer)")
from mcp import Client, types  # noqa: E402
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim  # noqa: E402

from tests.sdk_tasks import AnyResult, CreatedTask, TaskParams, TasksCancel, TasksGet, TasksUpdate  # noqa: E402

AGENT = {"namespace": "kagent", "name": "my-first-agent"}


def _answer(request: dict[str, Any], action: str) -> dict[str, Any]:
    properties = request["params"]["requestedSchema"]["properties"]
    content = {key: (True if spec["type"] == "boolean" else spec.get("enum", ["yes"])[0])
               for key, spec in properties.items()}
    return {"action": action, "content": content} if action == "accept" else {"action": action}


class Tasks(ClientExtension):
    """The tasks extension, client side, for these tests."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self, action: str = "accept") -> None:
        self.action = action
        self.asked: list[dict[str, Any]] = []
        self.seen: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            task = (await ctx.session.send_request(TasksGet(params=TaskParams(task_id=created.task_id)),
                                                   AnyResult)).model_dump(by_alias=True)
            self.seen.append(task["status"])
            if task["status"] == "input_required":
                (key, request), = task["inputRequests"].items()
                self.asked.append(request)
                await ctx.session.send_request(TasksUpdate(params=TaskParams(
                    task_id=created.task_id, input_responses={key: _answer(request, self.action)})), AnyResult)
            elif task["status"] in ("completed", "failed"):
                return types.CallToolResult.model_validate(task["result"])
            elif task["status"] == "cancelled":
                return types.CallToolResult(content=[types.TextContent(type="text", text="cancelled")], is_error=True)
            await asyncio.sleep(0.05)
        raise AssertionError(f"the task never ended: {self.seen}")


def _config(url: str) -> dict[str, Any]:
    return {"agents": {"kagent/my-first-agent": {"a2a": url}}}


async def _blocking_flow(url: str) -> dict[str, Any]:
    async with Client(url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        listed = await client.call_tool("list_agents", {})
        first = await client.call_tool("invoke_agent", {"agent": AGENT, "message": "What is 2+2?", "message_id": "k1"})
        retry = await client.call_tool("invoke_agent", {"agent": AGENT, "message": "What is 2+2?", "message_id": "k1"})
        session = first.structured_content["session_id"]
        progress: list[str] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        second = await client.call_tool("invoke_agent", {"session_id": session, "message": "Multiply that by 10."})
        counted = await client.call_tool("invoke_agent", {"session_id": session, "message": "count to three"},
                                         progress_callback=on_progress)
        head = counted.structured_content["task_id"]
        checkpoint = await client.call_tool("create_session_checkpoint", {
            "session_id": session, "expected_head_task_id": head, "request_id": "c1"})
        fork = await client.call_tool("fork_session", {
            "checkpoint_id": checkpoint.structured_content["checkpoint"]["id"], "request_id": "f1"})
        forked = await client.call_tool("invoke_agent", {
            "session_id": fork.structured_content["session"]["id"], "message": "Multiply that by 2."})
        return {"tools": tools, "listed": listed, "first": first, "retry": retry, "second": second,
                "counted": counted, "progress": progress, "forked": forked}


def test_the_sdk_client_lists_invokes_continues_retries_and_forks(agent_url: str,
                                                                 gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    got = asyncio.run(_blocking_flow(run.url))
    assert "properties" in got["tools"]["list_agents"].input_schema
    assert got["listed"].structured_content["agents"][0]["ready"] is True
    assert got["first"].structured_content["text"] == "4"
    assert got["retry"].structured_content == got["first"].structured_content
    assert got["second"].structured_content["text"] == "40"
    assert got["counted"].structured_content["text"] == "1, 2, 3"
    # the streamed artifact text arrived as progress while the call ran (fast updates may be coalesced)
    assert got["progress"] and set(got["progress"]) <= {"1", "1, 2", "1, 2, 3"}
    assert got["forked"].structured_content["text"] == "80"


async def _task_flow(url: str, message: str, action: str) -> tuple[Any, Tasks]:
    tasks = Tasks(action)
    async with Client(url, extensions=[tasks]) as client:
        result = await client.call_tool("invoke_agent", {"agent": AGENT, "message": message})
    return result, tasks


def test_the_sdk_client_answers_a_question_an_approval_and_declines(agent_url: str,
                                                                   gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    chose, tasks = asyncio.run(_task_flow(run.url, "Which database should we use?", "accept"))
    schema = tasks.asked[0]["params"]["requestedSchema"]
    assert schema["properties"]["response"]["enum"] == ["PostgreSQL", "MySQL"]
    assert chose.structured_content["text"] == "You chose PostgreSQL as the database to use."
    assert "input_required" in tasks.seen
    approved, _ = asyncio.run(_task_flow(run.url, "deploy now", "accept"))
    assert approved.structured_content["text"] == "Deployed to prod."
    declined, _ = asyncio.run(_task_flow(run.url, "deploy now", "decline"))
    assert declined.structured_content["text"] == "Deployment skipped: the tool was not approved."


async def _cancel_flow(url: str) -> str:
    created: list[str] = []

    class Cancelling(Tasks):
        async def _resolve(self, task: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
            created.append(task.task_id)

            await ctx.session.send_request(TasksCancel(params=TaskParams(task_id=task.task_id)), AnyResult)
            return await super()._resolve(task, ctx)

    async with Client(url, extensions=[Cancelling()]) as client:
        result = await client.call_tool("invoke_agent", {"agent": AGENT, "message": "wait"})
    return str(result.content[0].text)


def test_the_sdk_client_cancels_a_turn(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    assert asyncio.run(_cancel_flow(run.url)) == "cancelled"


async def _elicited(url: str) -> tuple[Any, list[str]]:
    asked: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"response": "PostgreSQL"})

    async with Client(url, elicitation_callback=on_elicit) as client:
        result = await client.call_tool("invoke_agent", {"agent": AGENT, "message": "Which database?"})
    return result, asked


def test_the_sdk_client_answers_by_elicitation_without_tasks(agent_url: str,
                                                             gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    result, asked = asyncio.run(_elicited(run.url))
    assert asked == ["Which database should we use?"]
    assert result.structured_content["text"] == "You chose PostgreSQL as the database to use."
