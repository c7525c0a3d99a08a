"""An idle subscription sends keep-alives, and its thread ends once the client has gone."""

from __future__ import annotations

import http.client
import json
import time

import pytest

from mcp_agent_kit.a2a import engine

from .conftest import Live, user_message


def test_idle_stream_keeps_alive_and_frees_its_thread(metrics: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "KEEPALIVE_S", 0.1)
    sent = metrics.rpc("SendMessage", {"message": user_message({"data": {"skill": "calculate_metrics"}})})
    task = sent["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # waits for input: the stream stays open
    subscribers = metrics.server.engine._subs  # task id -> the queues of its open streams
    conn = http.client.HTTPConnection("127.0.0.1", metrics.port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task["id"]}})
    conn.request("POST", "/a2a", body=body, headers=metrics.headers)
    response = conn.getresponse()
    lines = [response.readline() for _ in range(6)]
    assert b": keep-alive\n" in lines, lines
    assert subscribers.get(task["id"])
    response.close()  # the client goes away while the task is still waiting
    conn.close()
    deadline = time.monotonic() + 10
    while subscribers.get(task["id"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not subscribers.get(task["id"]), "the stream's thread is still waiting on an idle task"
