"""Bad input over raw HTTP: each gets the right error, at the right HTTP status, and the server lives on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import Live, call, user_message

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def reason(reply: dict[str, Any]) -> str | None:
    for detail in reply["error"].get("data", []):
        if detail.get("@type") == ERROR_INFO:
            return str(detail["reason"])
    return None


def fields(reply: dict[str, Any]) -> list[str]:
    for detail in reply["error"].get("data", []):
        if "fieldViolations" in detail:
            return [v["field"] for v in detail["fieldViolations"]]
    return []


def still_alive(live: Live) -> None:
    reply = live.rpc("SendMessage", {"message": user_message(call([1, 2]))})
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"\xff\xfe", -32700),
        (b"[]", -32600),
        (b'[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]', -32600),
        (b'{"id":1,"method":"GetTask"}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', -32600),
        (b'{"jsonrpc":"2.0","method":"GetTask","params":{}}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}', -32601),
        (b'{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod"}', -32601),
        (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}', -32600),
    ],
)
def test_envelope_errors(metrics: Live, body: bytes, code: int) -> None:
    status, headers, raw = metrics.request("POST", "/a2a", body)
    assert status == 200 and headers["content-type"] == "application/json"
    reply = json.loads(raw)
    assert reply["error"]["code"] == code
    assert set(reply["error"]) <= {"code", "message", "data"}
    still_alive(metrics)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"messageId": "m", "role": "user", "parts": [{"text": "x"}]}, "message.role"),
        ({"messageId": "m", "role": "ROLE_UNSPECIFIED", "parts": [{"text": "x"}]}, "message.role"),
        ({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x", "url": "https://e.x"}]}, "message.parts[0]"),
        ({"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text"}]}, "message.parts[0]"),
        ({"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "not base64!"}]}, "message.parts[0].raw"),
        ({"messageId": "m", "role": "ROLE_USER", "parts": []}, "message.parts"),
        ({"role": "ROLE_USER", "parts": [{"text": "x"}]}, "message.messageId"),
        (
            {
                "messageId": "m",
                "role": "ROLE_USER",
                "parts": [{"data": {"skill": "calculate_metrics", "arguments": {"values": ["x"]}}}],
            },
            "arguments.values[0]",
        ),
        (
            {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"skill": "nope"}}]},
            "message.parts[0].data.skill",
        ),
    ],
)
def test_invalid_messages_name_the_field(metrics: Live, message: dict[str, Any], field: str) -> None:
    reply = metrics.rpc("SendMessage", {"message": message})
    assert reply["error"]["code"] == -32602, reply
    assert field in fields(reply)
    still_alive(metrics)


def test_huge_body_is_refused_and_server_lives(metrics: Live) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"x":"' + b"a" * (2 << 20) + b'"}}'
    status, _, raw = metrics.request("POST", "/a2a", body)
    assert status == 413
    assert json.loads(raw)["error"]["code"] == -32600
    still_alive(metrics)


def test_versions(metrics: Live) -> None:
    params = {"id": "x"}
    for header, code in ((None, -32009), ("0.3", -32009), ("2.0", -32009), ("1.0", -32001), ("1.0.1", -32001)):
        headers = {"Content-Type": "application/json"} | ({"A2A-Version": header} if header else {})
        reply = metrics.rpc("GetTask", params, headers)
        assert reply["error"]["code"] == code, (header, reply)
    reply = metrics.rpc("GetTask", params, {"Content-Type": "application/json", "A2A-Version": "9.9"})
    assert reason(reply) == "VERSION_NOT_SUPPORTED"
    status, _, raw = metrics.request(
        "POST",
        "/a2a?A2A-Version=1.0",
        b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
        {"Content-Type": "application/json"},
    )
    assert status == 200
    assert json.loads(raw)["error"]["code"] == -32001


def test_wrong_content_type(metrics: Live) -> None:
    headers = {"Content-Type": "text/plain", "A2A-Version": "1.0"}
    status, _, raw = metrics.request("POST", "/a2a", b'{"jsonrpc":"2.0","id":1,"method":"GetTask"}', headers)
    assert status == 200 and json.loads(raw)["error"]["code"] == -32005


def test_unsupported_part_media_type(metrics: Live) -> None:
    part = {"raw": "dGNr", "mediaType": "application/x-unsupported-tck-type"}
    reply = metrics.rpc("SendMessage", {"message": user_message(part)})
    assert reply["error"]["code"] == -32005 and reason(reply) == "CONTENT_TYPE_NOT_SUPPORTED"


def test_message_to_terminal_unknown_and_mismatched_tasks(metrics: Live) -> None:
    task = metrics.rpc("SendMessage", {"message": user_message(call([1]))})["result"]["task"]
    reply = metrics.rpc("SendMessage", {"message": user_message(call([2]), taskId=task["id"])})
    assert reply["error"]["code"] == -32004 and reason(reply) == "UNSUPPORTED_OPERATION"
    assert "terminal" in reply["error"]["message"]
    reply = metrics.rpc("SendMessage", {"message": user_message(call([2]), taskId="no-such-task")})
    assert reply["error"]["code"] == -32001 and reason(reply) == "TASK_NOT_FOUND"
    waiting = metrics.rpc("SendMessage", {"message": user_message({"data": {"skill": "calculate_metrics"}})})
    waiting_task = waiting["result"]["task"]
    assert waiting_task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    reply = metrics.rpc(
        "SendMessage", {"message": user_message(call([2]), taskId=waiting_task["id"], contextId="other")}
    )
    assert reply["error"]["code"] == -32602
    reply = metrics.rpc("SubscribeToTask", {"id": task["id"]})
    assert reply["error"]["code"] == -32004
    reply = metrics.rpc("CancelTask", {"id": task["id"]})
    assert reply["error"]["code"] == -32002 and reason(reply) == "TASK_NOT_CANCELABLE"


def test_optional_features_answer_their_errors(metrics: Live) -> None:
    for method in (
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ):
        reply = metrics.rpc(method, {"taskId": "t", "id": "c"})
        assert reply["error"]["code"] == -32003 and reason(reply) == "PUSH_NOTIFICATION_NOT_SUPPORTED"
    reply = metrics.rpc("GetExtendedAgentCard", {})
    assert reply["error"]["code"] == -32004


@pytest.mark.parametrize(
    "params",
    [
        {"status": "completed"},
        {"status": "TASK_STATE_DONE"},
        {"pageSize": 1000},
        {"pageSize": -1},
        {"pageToken": "garbage!"},
        {"statusTimestampAfter": "2026-01-01T00:00:00"},
        {"includeArtifacts": "yes"},
    ],
)
def test_list_tasks_bad_filters(metrics: Live, params: dict[str, Any]) -> None:
    assert metrics.rpc("ListTasks", params)["error"]["code"] == -32602


def test_get_task_bad_params(metrics: Live) -> None:
    assert metrics.rpc("GetTask", {})["error"]["code"] == -32602
    assert metrics.rpc("GetTask", {"id": "x", "historyLength": -1})["error"]["code"] == -32602
    assert metrics.rpc("SendMessage", {})["error"]["code"] == -32602
    assert (
        metrics.rpc("SendMessage", {"message": user_message(call([1])), "configuration": []})["error"]["code"] == -32602
    )


def test_ids_are_echoed_with_their_type(metrics: Live) -> None:
    for id_ in ("abc-uuid", 17):
        body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": "GetTask", "params": {"id": "x"}}).encode()
        _, _, raw = metrics.request("POST", "/a2a", body)
        assert json.loads(raw)["id"] == id_


def test_giant_declared_body_is_not_read_and_server_lives(metrics: Live) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", metrics.port), timeout=10) as sock:
        head = "POST /a2a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        sock.sendall(f"{head}Content-Length: {1 << 30}\r\n\r\n".encode())
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413")
    still_alive(metrics)
