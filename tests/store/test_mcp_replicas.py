"""Acceptance (issue 19, MCP side): three replicas of examples/everything_server.py share one store
(sqlite on one host, and a real PostgreSQL server) behind a round-robin TCP proxy. Tasks are driven
over raw HTTP to a chosen replica (test_mcp_replicas_sdk.py does the same with the official client, one
client per replica); the MRTR round uses the official
mcp==2.3.0 client, round one on one replica and round two on another."""

from __future__ import annotations

import asyncio
import http.client
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.core.task_mirror import LAPSED
from mcp_agent_kit.store import open_store
from tests.net import until
from tests.pinned import require
from tests.store.replicas import Replicas
from tests.store.rr_proxy import RoundRobinProxy

mcp = require("mcp", "mcp==2.3.0 (the interop peer)")

SERVER = ["tests/store/counting_everything.py", "--http", "127.0.0.1:{port}"]
LEASE_S = 2.0
WAIT_S = 20.0
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}


class Cluster:
    def __init__(self, replicas: Replicas, proxy: RoundRobinProxy, url: str, run_log: Path) -> None:
        self.replicas, self.proxy, self.url, self.run_log = replicas, proxy, url, run_log

    def call(self, port: int, method: str, params: dict[str, Any] | None = None) -> Any:
        """One modern request (a fresh connection) to `port`: its result, or AssertionError on an error."""
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": TASKS,
                "io.modelcontextprotocol/clientInfo": {"name": "replica-test", "version": "0"}}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": meta}}
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        name = (params or {}).get("name", (params or {}).get("taskId"))
        if name is not None:
            headers["Mcp-Name"] = str(name)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("POST", "/mcp", json.dumps(body).encode(), headers)
            reply = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        assert "result" in reply, reply
        return reply["result"]

    def port(self, index: int) -> int:
        return self.replicas.ports[index]

    def holder(self, task_id: str) -> int:
        """Which replica runs the task (its lease holder is host:pid:random)."""
        store = open_store(self.url)
        try:
            record = store.get("mcp_tasks", task_id)
        finally:
            store.close()
        assert record is not None and record.holder is not None
        return self.replicas.index_of_pid(int(record.holder.rsplit(":", 2)[1]))


def status_is(cluster: Cluster, port: int, task_id: str, status: str) -> Callable[[], Any]:
    def check() -> Any:
        task = cluster.call(port, "tasks/get", {"taskId": task_id})
        return task if task["status"] == status else None
    return check


@pytest.fixture
def cluster(shared_url: str, tmp_path: Path) -> Iterator[Cluster]:
    run_log = tmp_path / "runs.log"
    with Replicas(SERVER, 3, store_url=shared_url, lease_s=LEASE_S, env={"RUN_LOG": str(run_log)}) as replicas, \
            RoundRobinProxy(replicas.ports) as proxy:
        yield Cluster(replicas, proxy, shared_url, run_log)


def test_replicas_share_tasks_rounds_and_survive_a_kill(cluster: Cluster) -> None:
    # a task created through replica 1 is polled through 2 and cancelled through 3
    created = cluster.call(cluster.port(0), "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
    task_id = created["taskId"]
    assert cluster.call(cluster.port(1), "tasks/get", {"taskId": task_id})["status"] == "working"
    cluster.call(cluster.port(2), "tasks/cancel", {"taskId": task_id})
    until(status_is(cluster, cluster.port(1), task_id, "cancelled"), "the cancel to reach replica 1")

    # an input_required task answered through another replica than the one running it
    asked = cluster.call(cluster.port(1), "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}})
    waiting = until(status_is(cluster, cluster.port(2), asked["taskId"], "input_required"), "input_required")
    assert list(waiting["inputRequests"]) == ["confirm_delete"]
    answer = {"action": "accept", "content": {"confirm": True}}
    cluster.call(cluster.port(0), "tasks/update", {"taskId": asked["taskId"],
                                                   "inputResponses": {"confirm_delete": answer}})
    done = until(status_is(cluster, cluster.port(2), asked["taskId"], "completed"), "the answer to reach replica 2")
    assert done["result"]["content"][0]["text"] == "deleted a.txt"

    # an MRTR round started on one replica completes on another (the official client, both rounds)
    assert asyncio.run(mrtr_across(cluster.replicas.url(0) + "/mcp", cluster.replicas.url(2) + "/mcp")) == (
        'User response: action=accept, content={"response": "from replica 3"}')

    # kill -9 of the replica running a task: failed within the lease, visible from the others
    doomed = cluster.call(cluster.port(1), "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
    victim = cluster.holder(doomed["taskId"])
    cluster.replicas.kill(victim)
    killed_at = time.monotonic()
    survivors = [i for i in range(3) if i != victim]
    failed = until(status_is(cluster, cluster.port(survivors[0]), doomed["taskId"], "failed"), "the lapsed lease",
                   seconds=LEASE_S * 2 + 5)
    assert time.monotonic() - killed_at < LEASE_S * 2 + 5
    assert failed["statusMessage"] == LAPSED
    assert cluster.call(cluster.port(survivors[1]), "tasks/get", {"taskId": doomed["taskId"]})["status"] == "failed"


async def mrtr_across(first_url: str, second_url: str) -> str:
    from mcp import Client
    from mcp.types import ElicitResult

    async def never(context: Any, params: Any) -> Any:  # declares elicitation; the test answers by hand
        raise AssertionError("round two is answered by hand")

    async with Client(first_url, elicitation_callback=never) as client:
        first = await client.session.call_tool("test_elicitation", {"message": "Who?"}, allow_input_required=True)
    assert first.result_type == "input_required", first
    (key,) = first.input_requests
    async with Client(second_url, elicitation_callback=never) as client:
        answers = {key: ElicitResult(action="accept", content={"response": "from replica 3"})}
        done = await client.call_tool("test_elicitation", {"message": "Who?"}, input_responses=answers,
                                      request_state=first.request_state)
    return str(done.content[0].text)  # type: ignore[union-attr]


def test_200_concurrent_tasks_over_three_replicas_run_once_each(cluster: Cluster) -> None:
    labels = [f"job-{n}" for n in range(200)]
    proxy_port = cluster.proxy.port

    def start(label: str) -> str:
        created = cluster.call(proxy_port, "tools/call", {"name": "counted", "arguments": {"label": label}})
        return str(created["taskId"])

    with ThreadPoolExecutor(max_workers=16) as pool:
        ids = list(pool.map(start, labels))
    assert len(set(ids)) == 200

    def result(pair: tuple[str, str]) -> bool:
        task_id, label = pair
        task = until(status_is(cluster, proxy_port, task_id, "completed"), f"task {task_id}")
        return bool(task["result"]["content"][0]["text"] == f"ran {label}")

    with ThreadPoolExecutor(max_workers=16) as pool:
        assert all(pool.map(result, zip(ids, labels, strict=True)))
    runs = [line.split() for line in cluster.run_log.read_text().splitlines()]
    assert Counter(label for _, label in runs) == Counter(labels)  # each ran exactly once
    assert len({pid for pid, _ in runs}) == 3  # and the proxy spread them over the three replicas
    assert min(cluster.proxy.picks) > 0


def legacy_post(port: int, message: dict[str, Any], session: str | None = None) -> tuple[int, dict[str, str], Any]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session is not None:
        headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", json.dumps(message).encode(), headers)
        response = conn.getresponse()
        payload = response.read().decode()
        got = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    if got.get("content-type", "").startswith("text/event-stream"):
        events = [json.loads(line[5:]) for line in payload.splitlines()
                  if line.startswith("data:") and line[5:].strip()]
        return response.status, got, next(e for e in events if "id" in e)
    return response.status, got, json.loads(payload) if payload else None


def test_a_legacy_session_is_accepted_by_every_replica(cluster: Cluster) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "0"}}}
    status, headers, reply = legacy_post(cluster.port(0), init)
    assert status == 200 and reply["result"]["protocolVersion"] == "2025-11-25"
    session = headers["mcp-session-id"]
    assert legacy_post(cluster.port(1), {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "slow_compute", "arguments": {"seconds": 0.2, "label": "x"}, "task": {}}}
    task_id = legacy_post(cluster.port(1), call, session)[2]["result"]["task"]["taskId"]
    result = legacy_post(cluster.port(2), {"jsonrpc": "2.0", "id": 3, "method": "tasks/result",
                                           "params": {"taskId": task_id}}, session)[2]
    assert result["result"]["content"][0]["text"] == "computed x after 0.2s"
    listed = legacy_post(cluster.port(0), {"jsonrpc": "2.0", "id": 4, "method": "tasks/list"}, session)[2]
    assert [task["taskId"] for task in listed["result"]["tasks"]] == [task_id]
    assert legacy_post(cluster.port(2), {"jsonrpc": "2.0", "id": 5, "method": "ping"}, "no-such-session")[0] == 404
    long = dict(call, id=7, params={**call["params"], "arguments": {"seconds": 60}})
    running = legacy_post(cluster.port(1), long, session)[2]["result"]["task"]["taskId"]
    delete = http.client.HTTPConnection("127.0.0.1", cluster.port(2), timeout=30)
    delete.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    assert delete.getresponse().status in (200, 204)
    delete.close()
    until(lambda: legacy_post(cluster.port(0), {"jsonrpc": "2.0", "id": 6, "method": "ping"}, session)[0] == 404,
          "the DELETE on replica 3 to reach replica 1")
    store = open_store(cluster.url)
    try:  # the session's task running on replica 2 ended with it
        record = until(lambda: (r := store.get("legacy_tasks", running)) is not None and r.state == "cancelled" and r,
                       "the session's task on replica 2 to be cancelled")
        assert record.body["message"] == "The task was cancelled: its session ended."
    finally:
        store.close()
