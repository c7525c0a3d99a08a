"""MCP tasks (both eras) shared through a store, in-process: two Servers on one sqlite file act as
two replicas; a task created on one is read, answered and cancelled through the other."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator

import pytest

from mcp_agent_kit import Context, Server
from mcp_agent_kit.core.dispatcher import Connection
from mcp_agent_kit.core.listen import ListenExtension, Subscription
from mcp_agent_kit.core.task_mirror import LAPSED
from mcp_agent_kit.core.task_table import TaskLimits
from mcp_agent_kit.store import open_store
from mcp_agent_kit.testing import TestClient
from mcp_agent_kit.wire.jsonrpc import RpcError
from tests import net

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
SECRET = b"s" * 32
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
WAIT_S = 10.0


def replica(url: str, runs: list[str], lease_s: float = 3.0, limits: TaskLimits | None = None) -> Server:
    server = Server("shared", "1.0.0", secret=SECRET, task_limits=limits)

    @server.tool(long_running=True)
    def slow(ctx: Context, seconds: float = 30.0) -> str:
        """Sleep cooperatively."""
        runs.append("slow")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ctx.cancelled:
                return "stopped"
            time.sleep(0.01)
        return f"slept {seconds}"

    @server.tool(long_running=True)
    def confirm(ctx: Context) -> str:
        """Ask the user, then finish."""
        answer = ctx.elicit("Sure?", CONFIRM, key="sure")
        return f"ok={answer['content']['ok']}"

    server.use_store(open_store(url), lease_s=lease_s)
    return server


@pytest.fixture
def pair(shared_url: str) -> Iterator[tuple[Server, Server, list[str]]]:
    url = shared_url
    runs: list[str] = []
    one, two = replica(url, runs), replica(url, runs)
    yield one, two, runs
    for server in (one, two):
        assert server.keeper is not None and server.store is not None
        server.keeper.close()
        server.store.close()


until = functools.partial(net.until, seconds=WAIT_S)


def modern(server: Server) -> TestClient:
    return server.test_client(capabilities={**TASKS, "elicitation": {}})


def test_a_task_is_polled_answered_and_cancelled_on_another_replica(pair: tuple[Server, Server, list[str]]) -> None:
    one, two, runs = pair
    first, second = modern(one), modern(two)
    created = first.request("tools/call", {"name": "confirm", "arguments": {}})
    task_id = created["taskId"]
    asked = until(lambda: (t := second.request("tasks/get", {"taskId": task_id}))["status"] == "input_required" and t,
                  "input_required seen from replica two")
    assert list(asked["inputRequests"]) == ["sure"]
    second.request("tasks/update", {"taskId": task_id,
                                    "inputResponses": {"sure": {"action": "accept", "content": {"ok": True}}}})
    done = until(lambda: (t := second.request("tasks/get", {"taskId": task_id}))["status"] == "completed" and t,
                 "the answer to reach replica one")
    assert done["result"]["content"][0]["text"] == "ok=True"

    slow = second.request("tools/call", {"name": "slow", "arguments": {}})["taskId"]
    assert first.request("tasks/get", {"taskId": slow})["status"] == "working"
    assert first.request("tasks/cancel", {"taskId": slow})["resultType"] == "complete"
    ended = until(lambda: (t := first.request("tasks/get", {"taskId": slow}))["status"] == "cancelled" and t,
                  "the cancel to reach replica two")
    assert ended["taskId"] == slow and runs.count("slow") == 1


def test_another_principal_never_sees_the_task(pair: tuple[Server, Server, list[str]]) -> None:
    one, two, _ = pair
    task_id = modern(one).request("tools/call", {"name": "slow", "arguments": {"seconds": 0}})["taskId"]
    stranger = modern(two)
    stranger.conn = Connection(principal="mallory")
    with pytest.raises(RpcError) as caught:
        stranger.request("tasks/get", {"taskId": task_id})
    assert caught.value.code == -32602


def test_a_lapsed_lease_fails_the_task_once_visible_everywhere(shared_url: str) -> None:
    url = shared_url
    runs: list[str] = []
    one, two = replica(url, runs, lease_s=1.0), replica(url, runs, lease_s=1.0)
    try:
        task_id = modern(one).request("tools/call", {"name": "slow", "arguments": {}})["taskId"]
        assert one.keeper is not None
        one.keeper.close()  # replica one "dies": its lease is no longer renewed
        failed = until(lambda: (t := modern(two).request("tasks/get", {"taskId": task_id}))["status"] == "failed" and t,
                       "the lapsed lease to fail the task")
        assert failed["statusMessage"] == LAPSED and failed["error"]["message"] == LAPSED
    finally:
        for server in (one, two):
            assert server.keeper is not None and server.store is not None
            server.keeper.close()
            server.store.close()


def legacy(server: Server, key: str) -> TestClient:
    client = server.test_client("2025-11-25")
    client.conn.key = key
    return client


def test_legacy_tasks_of_one_session_on_two_replicas(pair: tuple[Server, Server, list[str]]) -> None:
    one, two, _ = pair
    first, second = legacy(one, "session-1"), legacy(two, "session-1")
    quick = first.request("tools/call", {"name": "slow", "arguments": {"seconds": 0}, "task": {}})["task"]["taskId"]
    result = second.request("tasks/result", {"taskId": quick})
    assert result["content"][0]["text"] == "slept 0"
    long = first.request("tools/call", {"name": "slow", "arguments": {}, "task": {}})["task"]["taskId"]
    listed = [task["taskId"] for task in second.request("tasks/list")["tasks"]]
    assert listed == [quick, long]
    cancelled = second.request("tasks/cancel", {"taskId": long})
    assert cancelled["status"] == "cancelled"
    until(lambda: first.request("tasks/get", {"taskId": long})["status"] == "cancelled", "the cancel on replica one")
    with pytest.raises(RpcError) as caught:
        second.request("tasks/cancel", {"taskId": long})
    assert "already cancelled" in caught.value.message
    other = legacy(two, "session-2")
    with pytest.raises(RpcError):
        other.request("tasks/get", {"taskId": long})


def test_mrtr_rounds_need_only_the_secret() -> None:
    servers = []
    for secret in (SECRET, SECRET, None):
        server = Server("mrtr", "1.0.0", secret=secret)

        @server.tool
        def greet(ctx: Context) -> str:
            """Ask a name, then greet."""
            answer = ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
            return f"Hello, {answer['content']['name']}"
        servers.append(server)
    first = servers[0].test_client()
    round_one = first._send("tools/call", {"name": "greet", "arguments": {}})
    assert round_one["resultType"] == "input_required"
    second = servers[1].test_client()
    done = second._send("tools/call", {"name": "greet", "arguments": {}, "requestState": round_one["requestState"],
                                       "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}})
    assert done["content"][0]["text"] == "Hello, Ada"
    with pytest.raises(RpcError) as caught:  # a replica with its own random secret refuses the round
        servers[2].test_client()._send("tools/call", {"name": "greet", "arguments": {},
                                                      "requestState": round_one["requestState"]})
    assert "integrity" in caught.value.message


def test_the_unfinished_task_quota_counts_every_replica(shared_url: str) -> None:
    runs: list[str] = []
    limits = TaskLimits(running_per_principal=2)
    one, two = replica(shared_url, runs, limits=limits), replica(shared_url, runs, limits=limits)
    try:
        first, second = modern(one), modern(two)
        held = [first.request("tools/call", {"name": "slow", "arguments": {}})["taskId"],
                second.request("tools/call", {"name": "slow", "arguments": {}})["taskId"]]
        with pytest.raises(RpcError) as caught:
            first.request("tools/call", {"name": "slow", "arguments": {}})
        assert "too many unfinished tasks for this principal" in caught.value.message
        second.request("tasks/cancel", {"taskId": held[0]})
        until(lambda: first.request("tasks/get", {"taskId": held[0]})["status"] == "cancelled", "the cancel")
        assert first.request("tools/call", {"name": "slow", "arguments": {}})["status"] == "working"
    finally:
        for server in (one, two):
            assert server.keeper is not None and server.store is not None
            server.keeper.close()
            server.store.close()


def test_a_task_dropped_with_its_connection_ends_in_the_store(pair: tuple[Server, Server, list[str]]) -> None:
    one, two, _ = pair
    first = legacy(one, "session-9")
    task_id = first.request("tools/call", {"name": "slow", "arguments": {}, "task": {}})["task"]["taskId"]
    one.dispatcher.end_connection(first.conn)  # e.g. the session expired on replica one
    seen = until(lambda: (t := legacy(two, "session-9").request("tasks/get", {"taskId": task_id}))["status"]
                 == "cancelled" and t, "the dropped task's end in the store")
    assert seen["statusMessage"] == "The task was cancelled: it expired or its session ended."


def test_a_listen_stream_on_another_replica_sees_the_task_change(pair: tuple[Server, Server, list[str]]) -> None:
    one, two, _ = pair
    task_id = modern(one).request("tools/call", {"name": "slow", "arguments": {"seconds": 0.5}})["taskId"]
    listen = two.dispatcher.extension("listen")
    assert isinstance(listen, ListenExtension)
    sub = Subscription("sub-1", None)  # what subscriptions/listen with taskIds registers on replica two
    sub.task_ids.add(task_id)
    listen.add(sub)
    try:
        pushed = sub.queue.get(timeout=WAIT_S)  # the task ends half a second later, on replica one
        assert pushed["method"] == "notifications/tasks"
        assert pushed["params"]["taskId"] == task_id and pushed["params"]["status"] == "completed"
        assert pushed["params"]["result"]["content"][0]["text"] == "slept 0.5"
    finally:
        listen.remove(sub)
