"""The board's MCP tools, driven by the official `mcp` SDK client over the board's HTTP endpoint (both eras):
the tool list and its schemas, every tool called, refusals as isError results naming the problem, and
task_events' long-poll woken by the board (no sleeps: the test waits for the poll to be listening)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mcp_agent_kit.board.mcp_tools import MAX_WAIT_S, TOOLS, TaskTools
from tests.board.fake_board import FakeBoard
from tests.board.surfaces import DIFF, PERMISSION
from tests.net import until

NAMES = ["accept_task", "answer_task", "cancel_task", "create_task", "discard_task", "get_task", "list_tasks",
         "prompt_task", "release_task", "task_diff", "task_events"]
READ_ONLY = {"list_tasks", "get_task", "task_diff", "task_events"}
MODES = ["auto", "legacy"]  # the 2026-07-28 era (discover) and the initialize handshake
Scenario = Callable[[Any], Awaitable[None]]


def drive(url: str, mode: str, scenario: Scenario) -> None:
    from mcp import Client

    async def run() -> None:
        async with Client(url, mode=mode) as client:
            await scenario(client)

    asyncio.run(asyncio.wait_for(run(), 60))


async def call(client: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert result.is_error is False, result.content
    assert result.content and result.content[0].type == "text" and result.content[0].text
    body: dict[str, Any] = result.structured_content
    return body


async def refused(client: Any, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error is True, result
    text: str = result.content[0].text
    return text


@pytest.mark.parametrize("mode", MODES)
def test_the_tools_their_schemas_and_annotations(any_url: str, mode: str) -> None:
    async def scenario(client: Any) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert sorted(tools) == NAMES
        for name, tool in tools.items():
            schema = tool.input_schema
            assert schema["type"] == "object" and schema["additionalProperties"] is False
            if name not in ("create_task", "list_tasks"):
                assert "task_id" in schema["required"], name
            assert tool.output_schema["type"] == "object", name
            assert tool.description and tool.annotations.read_only_hint is (name in READ_ONLY), name
        create = tools["create_task"].input_schema
        assert create["required"] == ["prompt"]
        assert set(create["properties"]) == {"prompt", "title", "agent", "priority", "blockedBy", "base", "hold",
                                             "labels"}
        assert create["properties"]["priority"]["enum"] == ["urgent", "high", "normal", "low"]
        assert create["properties"]["blockedBy"]["type"] == "array"
        assert set(tools["list_tasks"].input_schema["properties"]) == {"state", "agent"}
        assert tools["prompt_task"].input_schema["required"] == ["task_id", "message"]
        assert tools["answer_task"].input_schema["required"] == ["task_id", "answer"]
        assert "merge" in tools["accept_task"].input_schema["properties"]
        assert "after" in tools["task_events"].input_schema["properties"]
        assert tools["discard_task"].annotations.destructive_hint is True
        assert tools["cancel_task"].annotations.destructive_hint is False
        assert tools["list_tasks"].output_schema["required"] == ["tasks"]
        assert tools["task_diff"].output_schema["required"] == ["files", "patch"]
        assert tools["task_events"].output_schema["required"] == ["events", "next"]
        assert "state" in tools["get_task"].output_schema["properties"]

    drive(any_url, mode, scenario)


@pytest.mark.parametrize("mode", MODES)
def test_a_task_from_creation_to_a_merged_accept(board: FakeBoard, url: str, mode: str) -> None:
    async def scenario(client: Any) -> None:
        first = await call(client, "create_task", {"prompt": "Write echo.txt\nwith hello", "priority": "high"})
        assert (first["state"], first["priority"], first["title"], first["agent"]) == (
            "queued", "high", "Write echo.txt", "echo")
        held = await call(client, "create_task", {"prompt": "After it", "title": "second", "agent": "other",
                                                  "blockedBy": [first["id"]], "base": "HEAD", "hold": True})
        assert (held["state"], held["blockedBy"], held["base"], held["agent"]) == (
            "held", [first["id"]], "HEAD", "other")
        assert (await call(client, "release_task", {"task_id": held["id"]}))["state"] == "queued"
        listed = await call(client, "list_tasks", {})
        assert [task["id"] for task in listed["tasks"]] == [first["id"], held["id"]]
        assert [t["id"] for t in (await call(client, "list_tasks", {"agent": "other"}))["tasks"]] == [held["id"]]
        assert (await call(client, "list_tasks", {"state": "review"}))["tasks"] == []

        board.start_task(first["id"])
        board.say(first["id"], "Writing the file.")
        board.ask(first["id"], PERMISSION)
        asked = await call(client, "get_task", {"task_id": first["id"]})
        assert asked["state"] == "needs_input" and asked["question"]["options"][0]["id"] == "allow"
        result = await client.call_tool("get_task", {"task_id": first["id"]})
        assert "Write echo.txt?" in result.content[0].text and "answer_task" in result.content[0].text
        assert "not one of the options" in await refused(client, "answer_task",
                                                         {"task_id": first["id"], "answer": "maybe"})
        assert (await call(client, "answer_task", {"task_id": first["id"], "answer": "allow"}))["state"] == "running"
        board.finish(first["id"], "Wrote echo.txt", DIFF)

        events = await call(client, "task_events", {"task_id": first["id"]})
        kinds = [event.get("type") for event in events["events"]]
        assert kinds[:3] == ["state", "turn_start", "message"] and "question" in kinds and "answer" in kinds
        assert events["next"] == events["events"][-1]["seq"]
        later = await call(client, "task_events", {"task_id": first["id"], "after": events["next"]})
        assert later == {"events": [], "next": events["next"]}
        some = await call(client, "task_events", {"task_id": first["id"], "after": 1, "limit": 2})
        assert [event["seq"] for event in some["events"]] == [2, 3] and some["next"] == 3

        diff = await call(client, "task_diff", {"task_id": first["id"]})
        assert diff["files"][0]["path"] == "echo.txt" and diff["patch"].startswith("diff --git")
        text = (await client.call_tool("task_diff", {"task_id": first["id"]})).content[0].text
        assert text.startswith("1 file changed, +1 -0") and "+hello" in text
        done = await call(client, "accept_task", {"task_id": first["id"], "merge": True})
        assert done["state"] == "done" and board.accepted[first["id"]] is True

    drive(url, mode, scenario)


@pytest.mark.parametrize("mode", MODES)
def test_cancel_prompt_and_discard(board: FakeBoard, url: str, mode: str) -> None:
    async def scenario(client: Any) -> None:
        task = await call(client, "create_task", {"prompt": "Try something"})
        assert (await call(client, "cancel_task", {"task_id": task["id"]}))["state"] == "cancelled"
        again = await call(client, "prompt_task", {"task_id": task["id"], "message": "Try again, differently"})
        assert again["state"] == "queued" and again["prompt"] == "Try again, differently"
        board.start_task(task["id"])
        board.fail(task["id"], "the agent exited")
        assert (await call(client, "get_task", {"task_id": task["id"]}))["error"] == "the agent exited"
        assert (await call(client, "discard_task", {"task_id": task["id"]}))["state"] == "discarded"

    drive(url, mode, scenario)


@pytest.mark.parametrize("mode", MODES)
def test_refusals_are_error_results_naming_the_problem(any_url: str, mode: str) -> None:
    async def scenario(client: Any) -> None:
        assert "no task 'nope'" in await refused(client, "get_task", {"task_id": "nope"})
        assert "no task 'nope'" in await refused(client, "task_events", {"task_id": "nope"})
        assert "unknown agent 'ghost'" in await refused(client, "create_task", {"prompt": "x", "agent": "ghost"})
        assert "no task 'missing'" in await refused(client, "create_task", {"prompt": "x", "blockedBy": ["missing"]})
        queued = await call(client, "create_task", {"prompt": "Queued work"})
        said = await refused(client, "accept_task", {"task_id": queued["id"]})
        assert f"task {queued['id']} is queued: cannot accept it" in said and "cancel" in said
        assert "discard" in await refused(client, "discard_task", {"task_id": queued["id"]})
        assert "priority" in await refused(client, "create_task", {"prompt": "x", "priority": "asap"})
        assert "prompt" in await refused(client, "create_task", {"title": "no prompt"})
        assert "task_id" in await refused(client, "get_task", {"id": queued["id"]})
        # the board goes on serving after each refusal
        assert (await call(client, "get_task", {"task_id": queued["id"]}))["state"] == "queued"

    drive(any_url, mode, scenario)


def test_task_events_waits_for_the_next_event(board: FakeBoard, url: str) -> None:
    task = board.create_task("Talk")
    board.start_task(task["id"])
    seen = board.task_events(task["id"])["next"]

    async def scenario(client: Any) -> None:
        poll = asyncio.ensure_future(client.call_tool("task_events", {"task_id": task["id"], "after": seen,
                                                                      "wait": MAX_WAIT_S}))
        listening = await asyncio.to_thread(until, lambda: board._listeners["task"], "the long-poll to listen")
        assert len(listening) == 1
        board.say(task["id"], "hello")
        result = await poll
        assert [event["text"] for event in result.structured_content["events"]] == ["hello"]
        assert "hello" in result.content[0].text
        assert board._listeners["task"] == []  # the poll stopped listening

    drive(url, "auto", scenario)


def test_task_events_does_not_wait_on_a_settled_task_and_close_ends_a_wait(board: FakeBoard) -> None:
    tools = TaskTools(board)
    task = board.create_task("Done soon")
    board.start_task(task["id"])
    board.finish(task["id"], "ok")
    last = board.task_events(task["id"])["next"]
    assert tools.task_events(board, {"task_id": task["id"], "after": last, "wait": MAX_WAIT_S}) == {
        "events": [], "next": last}

    live = board.create_task("Still queued")
    got: list[dict[str, Any]] = []
    waiter = threading.Thread(target=lambda: got.append(tools.task_events(
        board, {"task_id": live["id"], "after": 0, "wait": MAX_WAIT_S})))
    waiter.start()
    until(lambda: board._listeners["task"], "the wait to listen")
    tools.close()
    waiter.join(10)
    assert got == [{"events": [], "next": 0}]


def test_every_tool_of_the_table_names_its_board_call() -> None:
    assert sorted(TOOLS) == NAMES
    assert all(tool.call is not None for name, tool in TOOLS.items() if name != "task_events")


def test_a_task_created_over_mcp_is_owned_by_the_callers_principal(board: FakeBoard) -> None:
    """The live surfaces show a principal its own tasks: one made by Claude Code with the board's token is the
    signed-in person's too. The principal comes from the request, never from the arguments."""
    from types import SimpleNamespace

    from mcp_agent_kit.board.mcp_tools import OWNER

    tools = TaskTools(board)
    create = TOOLS["create_task"]
    assert create.call is not None
    tool = tools._guarded(create.call, create.say)
    made = tool(SimpleNamespace(principal="token:abc"), {"prompt": "fix it", OWNER: "token:mallory"})
    assert made.structured is not None and made.structured["owner"] == "token:abc"
    anonymous = tool(SimpleNamespace(principal=None), {"prompt": "fix it too"})
    assert anonymous.structured is not None and anonymous.structured["owner"] is None
