"""The TCK fixture agent over HTTP: each messageId prefix behaves as the conformance kit expects."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit.loader import load_target

from .conftest import ROOT, Live, start


@pytest.fixture(scope="module")
def tck() -> Iterator[Live]:
    server = start(load_target(f"{ROOT / 'examples' / 'a2a_tck_agent.py'}:agent"))
    yield Live(server)
    server.shutdown()
    server.server_close()


def msg(message_id: str, **extra: Any) -> dict[str, Any]:
    return {"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}], **extra}}


def send(live: Live, message_id: str, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = live.rpc("SendMessage", msg(message_id, **extra))["result"]
    return result


def test_unary_behaviours(tck: Live) -> None:
    task = send(tck, "tck-complete-task-1")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["message"]["parts"] == [{"text": "Hello from TCK"}]
    assert send(tck, "tck-artifact-text-1")["task"]["artifacts"][0]["parts"] == [{"text": "Generated text content"}]
    file_part = send(tck, "tck-artifact-file-2")["task"]["artifacts"][0]["parts"][0]
    assert file_part["filename"] == "output.txt" and file_part["mediaType"] == "text/plain"
    assert base64.b64decode(file_part["raw"])
    url_part = send(tck, "tck-artifact-file-url-1")["task"]["artifacts"][0]["parts"][0]  # longest prefix wins
    assert url_part == {"url": "https://example.com/output.txt", "filename": "output.txt", "mediaType": "text/plain"}
    data = send(tck, "tck-artifact-data-1")["task"]["artifacts"][0]["parts"][0]["data"]
    assert data == {"key": "value", "count": 42}
    reply = send(tck, "tck-message-response-1")
    assert list(reply) == ["message"] and reply["message"]["parts"] == [{"text": "Direct message response"}]
    assert reply["message"]["role"] == "ROLE_AGENT" and reply["message"]["contextId"]
    assert send(tck, "tck-reject-task-1")["task"]["status"]["state"] == "TASK_STATE_REJECTED"
    echoed = tck.rpc(
        "SendMessage",
        {
            "message": {
                "messageId": "m",
                "role": "ROLE_USER",
                "parts": [{"data": {"skill": "echo", "arguments": {"text": "x"}}}],
            }
        },
    )
    assert echoed["result"]["task"]["artifacts"][0]["parts"] == [{"text": "x"}]


def test_multi_turn_keeps_every_message(tck: Live) -> None:
    task = send(tck, "tck-input-required-1")["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    again = send(tck, "tck-input-required-1", taskId=task["id"])["task"]  # same messageId, no contextId
    assert again["contextId"] == task["contextId"] and again["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = send(tck, "tck-complete-task-2", taskId=task["id"])["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    users = [m["messageId"] for m in done["history"] if m["role"] == "ROLE_USER"]
    assert users == ["tck-input-required-1", "tck-input-required-1", "tck-complete-task-2"]


@pytest.mark.parametrize(
    ("prefix", "kinds"),
    [
        ("tck-stream-001", ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]),
        ("tck-stream-002", ["task", "statusUpdate"]),
        ("tck-stream-artifact-file", ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]),
        ("tck-stream-artifact-chunked", ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"]),
        ("tck-message-response", ["message"]),
    ],
)
def test_stream_behaviours(tck: Live, prefix: str, kinds: list[str]) -> None:
    events = [e["result"] for e in tck.stream("SendStreamingMessage", msg(f"{prefix}-x"))]
    assert [next(iter(e)) for e in events] == kinds
    if prefix == "tck-stream-artifact-chunked":
        first, second = events[2]["artifactUpdate"], events[3]["artifactUpdate"]
        assert first["artifact"]["parts"] == [{"text": "chunk-1 "}] and "append" not in first
        assert second["append"] is True and second["lastChunk"] is True
        assert first["artifact"]["artifactId"] == second["artifact"]["artifactId"]
    if kinds[-1] == "statusUpdate":
        assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_json_rpc_at_root_and_card_last_modified(tck: Live) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": msg("tck-complete-task-r")})
    status, _, raw = tck.request("POST", "/", body.encode())
    assert status == 200 and json.loads(raw)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    status, headers, raw = tck.request("GET", "/.well-known/agent-card.json", headers={})
    assert headers["last-modified"].endswith("GMT")
    assert [s["id"] for s in json.loads(raw)["skills"]] == ["tck", "echo"]
