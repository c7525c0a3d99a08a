"""The HTTP transport: card caching, SSE streams with several subscribers, REST binding, security, sqlite restart."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.a2a.http import A2AServer
from mcp_agent_kit.a2a.task_file import open_task_file
from mcp_agent_kit.loader import load_target

from . import agents
from .conftest import METRICS, ROOT, Live, call, start, user_message


@pytest.fixture(scope="module")
def toolbox() -> Iterator[Live]:
    server = start(agents.server)
    yield Live(server)
    server.shutdown()
    server.server_close()


def stop(server: A2AServer) -> None:
    server.shutdown()
    server.server_close()


# ---- card ----------------------------------------------------------------------------------------
def test_card_caching_headers_and_alias(metrics: Live) -> None:
    status, headers, body = metrics.request("GET", "/.well-known/agent-card.json", headers={})
    assert status == 200 and headers["content-type"] == "application/json"
    assert "max-age=" in headers["cache-control"] and headers["etag"] and headers["last-modified"]
    card = json.loads(body)
    assert card["supportedInterfaces"][0]["protocolVersion"] == "1.0"
    assert "securitySchemes" not in card
    schemas = card["capabilities"]["extensions"][0]["params"]["tools"]["calculate_metrics"]
    assert schemas["inputSchema"]["required"] == ["values"] and "outputSchema" in schemas
    status, _, empty = metrics.request(
        "GET", "/.well-known/agent-card.json", headers={"If-None-Match": headers["etag"]}
    )
    assert status == 304 and empty == b""
    status, _, legacy = metrics.request("GET", "/.well-known/agent.json", headers={})
    assert status == 200 and legacy == body


def test_public_url_and_bearer_in_card() -> None:
    server = start(load_target(METRICS), public_url="https://agents.example.com/metrics/", tokens=["s3cret"])
    try:
        live = Live(server)
        _, _, body = live.request("GET", "/.well-known/agent-card.json", headers={})
        card = json.loads(body)
        assert card["supportedInterfaces"][0]["url"] == "https://agents.example.com/metrics/a2a"
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert card["securityRequirements"] == [{"schemes": {"bearer": {"list": []}}}]
    finally:
        stop(server)


# ---- streaming --------------------------------------------------------------------------------------
def test_send_stream_events_in_order(metrics: Live) -> None:
    events = metrics.stream("SendStreamingMessage", {"message": user_message(call([1, 2]))})
    assert all(e["id"] == "s" and e["jsonrpc"] == "2.0" for e in events)
    kinds = [next(iter(e["result"])) for e in events]
    assert kinds == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    states = [e["result"]["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e["result"]]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert all("kind" not in json.dumps(e) and '"final"' not in json.dumps(e) for e in events)


def test_stream_error_before_start_is_plain_json(metrics: Live) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": "nope"}}
    status, headers, body = metrics.request("POST", "/a2a", json.dumps(message).encode())
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["code"] == -32001


def _subscribe(live: Live, task_id: str, out: list[dict[str, Any]], stop_after: int | None = None) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": task_id}})
    conn.request("POST", "/a2a", body=body, headers=live.headers)
    response = conn.getresponse()
    for line in response:
        if line.startswith(b"data: "):
            out.append(json.loads(line[6:])["result"])
            if stop_after is not None and len(out) >= stop_after:
                break
    conn.close()


def test_several_subscribers_get_every_event_in_the_same_order(toolbox: Live) -> None:
    agents.GATE.clear()
    params = {
        "message": user_message({"data": {"skill": "wait", "arguments": {"steps": 2}}}),
        "configuration": {"returnImmediately": True},
    }
    task_id = toolbox.rpc("SendMessage", params)["result"]["task"]["id"]
    engine = toolbox.server.engine
    for _ in range(500):
        if len(engine.get("", {"id": task_id}).get("history", [])) == 3:  # request + two progress messages
            break
        time.sleep(0.01)
    seen: list[list[dict[str, Any]]] = [[], [], []]
    quitter: list[dict[str, Any]] = []
    threads = [threading.Thread(target=_subscribe, args=(toolbox, task_id, out)) for out in seen]
    threads.append(threading.Thread(target=_subscribe, args=(toolbox, task_id, quitter, 1)))
    for thread in threads:
        thread.start()
    for _ in range(500):  # the quitter stays registered until the next event fails to reach it
        if len(engine._subs.get(task_id, [])) == 4:
            break
        time.sleep(0.01)
    agents.GATE.set()
    for thread in threads:
        thread.join(10)
    assert seen[0] == seen[1] == seen[2]
    kinds = [next(iter(e)) for e in seen[0]]
    assert kinds == ["task", "artifactUpdate", "statusUpdate"]
    assert seen[0][-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(quitter) == 1 and "task" in quitter[0]


# ---- HTTP+JSON binding ------------------------------------------------------------------------------
def test_rest_binding(metrics: Live) -> None:
    body = json.dumps({"message": user_message(call([4, 6], "sum"))}).encode()
    status, headers, raw = metrics.request("POST", "/a2a/rest/message:send", body)
    assert status == 200 and headers["content-type"] == "application/json"
    task = json.loads(raw)["task"]
    assert task["artifacts"][0]["parts"][0]["data"]["value"] == 10
    status, _, raw = metrics.request("GET", f"/a2a/rest/tasks/{task['id']}?historyLength=0")
    assert status == 200 and "history" not in json.loads(raw)
    status, _, raw = metrics.request("GET", f"/a2a/rest/tasks?contextId={task['contextId']}")
    assert [t["id"] for t in json.loads(raw)["tasks"]] == [task["id"]]
    status, _, raw = metrics.request("POST", f"/a2a/rest/tasks/{task['id']}:cancel", b"")
    error = json.loads(raw)["error"]
    assert status == 400 and error["status"] == "FAILED_PRECONDITION"
    assert error["details"][0]["reason"] == "TASK_NOT_CANCELABLE"
    status, _, raw = metrics.request("GET", "/a2a/rest/tasks/nope")
    assert status == 404 and json.loads(raw)["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
    status, headers, raw = metrics.request(
        "POST", "/a2a/rest/message:stream", json.dumps({"message": user_message(call([1]))}).encode()
    )
    events = [json.loads(line[6:]) for line in raw.decode().split("\n") if line.startswith("data: ")]
    assert headers["content-type"] == "text/event-stream"
    assert [next(iter(e)) for e in events] == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    status, _, _ = metrics.request("DELETE", "/a2a/rest/message:send")
    assert status == 405
    status, _, raw = metrics.request("GET", "/a2a/rest/tasks", headers={})
    assert status == 400 and json.loads(raw)["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"


# ---- security ---------------------------------------------------------------------------------------
def test_bearer_tokens_isolate_principals() -> None:
    server = start(load_target(METRICS), tokens=["alice-token", "bob-token"])
    try:
        alice, bob, anon = Live(server), Live(server), Live(server)
        alice.headers = {**alice.headers, "Authorization": "Bearer alice-token"}
        bob.headers = {**bob.headers, "Authorization": "Bearer bob-token"}
        status, headers, _ = anon.request("POST", "/a2a", b"{}")
        assert status == 401 and headers["www-authenticate"].startswith("Bearer")
        assert anon.request("GET", "/.well-known/agent-card.json", headers={})[0] == 200
        shared = {"contextId": "ctx-1"}
        mine = alice.rpc("SendMessage", {"message": user_message({"data": {"skill": "calculate_metrics"}}, **shared)})
        task = mine["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert bob.rpc("GetTask", {"id": task["id"]})["error"]["code"] == -32001
        assert bob.rpc("CancelTask", {"id": task["id"]})["error"]["code"] == -32001
        assert bob.rpc("SubscribeToTask", {"id": task["id"]})["error"]["code"] == -32001
        hijack = bob.rpc("SendMessage", {"message": user_message(call([1]), taskId=task["id"])})
        assert hijack["error"]["code"] == -32001
        bob.rpc("SendMessage", {"message": user_message(call([5]), **shared)})
        assert [t["id"] for t in alice.rpc("ListTasks", shared)["result"]["tasks"]] == [task["id"]]
        assert alice.rpc("GetTask", {"id": task["id"]})["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert bob.rpc("ListTasks", shared)["result"]["totalSize"] == 1
    finally:
        stop(server)


def test_host_header_is_checked_on_loopback(metrics: Live) -> None:
    headers = {**metrics.headers, "Host": "evil.example.com"}
    status, _, _ = metrics.request("POST", "/a2a", b"{}", headers)
    assert status == 400


def test_cli_refuses_an_open_bind_without_a_token() -> None:
    from mcp_agent_kit.a2a.cli import main
    from mcp_agent_kit.cli_common import CliError

    with pytest.raises(CliError) as info:  # the front door's guard prints it as one line, exit 2
        main([METRICS, "--host", "0.0.0.0"])
    assert info.value.code == 2 and "--token or --oauth-issuer" in str(info.value.fix)
    assert main(["no/such/file.py:server"]) == 2


def test_cli_serves_the_metrics_example(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_agent_kit", "a2a", "examples/metrics_server.py:server", "--port", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        url = line.rsplit(" ", 1)[-1].strip()
        port = int(url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/.well-known/agent-card.json")
        card = json.loads(conn.getresponse().read())
        assert card["skills"][0]["id"] == "calculate_metrics"
    finally:
        proc.terminate()
        proc.wait(10)


# ---- durability -------------------------------------------------------------------------------------
def test_sqlite_store_survives_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "tasks.db")
    server = start(load_target(METRICS), open_task_file(path, "replica", 30.0))
    live = Live(server)
    done = [live.rpc("SendMessage", {"message": user_message(call([n, 1]))})["result"]["task"] for n in range(3)]
    waiting = live.rpc("SendMessage", {"message": user_message({"data": {"skill": "calculate_metrics"}})})
    waiting_task = waiting["result"]["task"]
    stop(server)
    server.engine.close()

    again = start(load_target(METRICS), open_task_file(path, "replica", 30.0))
    try:
        live = Live(again)
        listed = live.rpc("ListTasks", {"pageSize": 2})["result"]
        assert listed["totalSize"] == 4 and len(listed["tasks"]) == 2 and listed["nextPageToken"]
        rest = live.rpc("ListTasks", {"pageSize": 2, "pageToken": listed["nextPageToken"]})["result"]
        assert rest["nextPageToken"] == ""
        ids = [t["id"] for t in listed["tasks"] + rest["tasks"]]
        assert sorted(ids) == sorted([t["id"] for t in done] + [waiting_task["id"]])
        for task in done:
            got = live.rpc("GetTask", {"id": task["id"]})["result"]
            assert got == task
        finished = live.rpc(
            "SendMessage", {"message": user_message({"data": {"values": [7]}}, taskId=waiting_task["id"])}
        )
        assert finished["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        stop(again)
        again.engine.close()
