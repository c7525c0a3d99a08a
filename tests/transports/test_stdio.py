"""The stdio server as a real process: every error code, concurrency, hygiene, lifecycle."""

from __future__ import annotations

import json
import signal
import time

import pytest

from tests.stdio_peer import StdioPeer, legacy, modern


@pytest.fixture
def peer():
    with StdioPeer() as p:
        yield p


def error_of(reply: dict) -> tuple[int, object]:
    assert "error" in reply, reply
    return reply["error"]["code"], reply["error"].get("data")


def test_parse_error_and_invalid_utf8_keep_the_server_alive(peer: StdioPeer) -> None:
    peer.send_bytes(b'{"jsonrpc": "2.0", "id": 1, "method":\n')
    reply = peer.recv()
    assert reply["error"]["code"] == -32700 and "id" not in reply
    peer.send_bytes(b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"x":"\xff\xfe"}}\n')
    assert peer.recv()["error"]["code"] == -32700
    peer.send_bytes(b"[" * 100_000 + b"\n")
    assert peer.recv()["error"]["code"] == -32700
    assert peer.call(modern(3, "tools/list"))["result"]["tools"]


@pytest.mark.parametrize(
    "raw",
    [
        b"[]",
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]',
        b'"just a string"',
        b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"2.0","id":1,"method":42}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1,2]}',
        b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}',
    ],
)
def test_invalid_requests(peer: StdioPeer, raw: bytes) -> None:
    peer.send_bytes(raw + b"\n")
    assert peer.recv()["error"]["code"] == -32600


def test_ids_keep_their_type(peer: StdioPeer) -> None:
    assert peer.call(modern("abc", "tools/list"))["id"] == "abc"
    assert peer.call(modern(7, "tools/list"))["id"] == 7


def test_notifications_are_never_answered(peer: StdioPeer) -> None:
    peer.send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})
    peer.send({"jsonrpc": "2.0", "method": "tools/list"})
    reply = peer.call(modern(1, "server/discover"))
    assert reply["id"] == 1
    assert peer.lines.empty()


def test_oversized_line_is_refused_and_memory_stays_bounded() -> None:
    with StdioPeer("tests/fixtures/kitchen_server.py") as peer:
        big = json.dumps(modern(1, "tools/call", name="echo", arguments={"text": "x" * 5_000_000}))
        peer.send_bytes(big.encode() + b"\n")
        reply = peer.recv()
        assert reply["error"]["code"] == -32600 and "exceeds" in reply["error"]["message"]
        assert peer.call(modern(2, "tools/list"))["result"]["tools"]


def test_modern_envelope_errors(peer: StdioPeer) -> None:
    assert peer.call(modern(0, "server/discover"))["result"]["supportedVersions"] == ["2026-07-28"]
    bare = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    assert error_of(peer.call(bare))[0] == -32602
    no_caps = modern(2, "tools/list")
    del no_caps["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert error_of(peer.call(no_caps))[0] == -32602
    wrong_type = modern(3, "tools/list")
    wrong_type["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = 20260728
    assert error_of(peer.call(wrong_type))[0] == -32602
    old = modern(4, "tools/list")
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01"
    code, data = error_of(peer.call(old))
    assert code == -32022 and data == {"supported": ["2026-07-28"], "requested": "1900-01-01"}
    init = legacy(
        5, "initialize", protocolVersion="2025-11-25", capabilities={}, clientInfo={"name": "x", "version": "1"}
    )
    code, data = error_of(peer.call(init))
    assert code == -32022 and data["supported"] == ["2026-07-28"]


@pytest.mark.parametrize(
    "method", ["ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "nope/x"]
)
def test_removed_and_unknown_methods(peer: StdioPeer, method: str) -> None:
    assert error_of(peer.call(modern(1, method, uri="kitchen://menu", level="info")))[0] == -32601


def test_invalid_params(peer: StdioPeer) -> None:
    cases = [
        modern(1, "tools/call", name="no_such_tool", arguments={}),
        modern(2, "tools/call", arguments={}),
        modern(3, "tools/call", name="echo", arguments=[1]),
        modern(4, "tools/list", cursor="not-a-cursor"),
        modern(5, "prompts/get", name="greet"),
        modern(6, "prompts/get", name="nope"),
        modern(7, "resources/read", uri="kitchen://nothing"),
        modern(8, "tools/call", name="ask_name", arguments={}, requestState="forged.state", inputResponses={}),
    ]
    for case in cases:
        assert error_of(peer.call(case))[0] == -32602, case
    code, data = error_of(peer.call(modern(9, "resources/read", uri="kitchen://items/missing")))
    assert code == -32602 and data == {"uri": "kitchen://items/missing"}


def test_tool_failures_are_results_and_internal_errors_are_errors(peer: StdioPeer) -> None:
    result = peer.call(modern(1, "tools/call", name="boom", arguments={}))["result"]
    assert result["isError"] is True and result["content"][0]["text"] == "kaboom"
    bad = peer.call(modern(2, "tools/call", name="add", arguments={"a": "1", "b": 2}))["result"]
    assert bad["isError"] is True and "a: expected integer" in bad["content"][0]["text"]
    not_json = peer.call(modern(3, "tools/call", name="bad_output", arguments={}))["result"]
    assert not_json["isError"] is True and "not JSON serializable" in not_json["content"][0]["text"]
    assert error_of(peer.call(modern(5, "resources/read", uri="kitchen://broken")))[0] == -32603
    assert error_of(peer.call(modern(6, "tools/call", name="liar", arguments={})))[0] == -32603
    assert peer.call(modern(4, "tools/call", name="add", arguments={"a": 1, "b": 2.0}))["result"][
        "structuredContent"
    ] == {"sum": 3}


def test_missing_client_capability(peer: StdioPeer) -> None:
    code, data = error_of(peer.call(modern(1, "tools/call", name="ask_name", arguments={})))
    assert code == -32021 and data == {"requiredCapabilities": {"elicitation": {}}}
    code, data = error_of(peer.call(modern(2, "tools/call", name="ask_model", arguments={})))
    assert code == -32021 and data == {"requiredCapabilities": {"sampling": {}}}


def test_input_required_round_trip_and_tampering(peer: StdioPeer) -> None:
    caps = {"elicitation": {}}
    first = peer.call(modern(1, "tools/call", caps, name="ask_name", arguments={}))["result"]
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
    assert "ttlMs" not in first and "cacheScope" not in first
    answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
    state = first["requestState"]
    done = peer.call(
        modern(2, "tools/call", caps, name="ask_name", arguments={}, inputResponses=answer, requestState=state)
    )["result"]
    assert done["content"][0]["text"] == "Hello, Ada!" and done["resultType"] == "complete"
    body, tag = state.split(".")
    forged = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + tag
    reply = peer.call(
        modern(3, "tools/call", caps, name="ask_name", arguments={}, inputResponses=answer, requestState=forged)
    )
    assert error_of(reply)[0] == -32602
    other_args = peer.call(
        modern(4, "tools/call", caps, name="two_rounds", arguments={}, inputResponses=answer, requestState=state)
    )
    assert error_of(other_args)[0] == -32602


def test_multi_round_input(peer: StdioPeer) -> None:
    caps = {"elicitation": {}}
    r1 = peer.call(modern(1, "tools/call", caps, name="two_rounds", arguments={}))["result"]
    assert list(r1["inputRequests"]) == ["elicitation_1"]
    r2 = peer.call(
        modern(
            2,
            "tools/call",
            caps,
            name="two_rounds",
            arguments={},
            requestState=r1["requestState"],
            inputResponses={"elicitation_1": {"action": "accept", "content": {"v": "a"}}},
        )
    )["result"]
    assert list(r2["inputRequests"]) == ["elicitation_2"]
    r3 = peer.call(
        modern(
            3,
            "tools/call",
            caps,
            name="two_rounds",
            arguments={},
            requestState=r2["requestState"],
            inputResponses={"elicitation_2": {"action": "accept", "content": {"v": "b"}}},
        )
    )["result"]
    assert r3["content"][0]["text"] == "a+b"


def test_progress_and_log_notifications(peer: StdioPeer) -> None:
    message = modern(1, "tools/call", name="with_progress", arguments={"steps": 3})
    message["params"]["_meta"]["progressToken"] = "tok"
    message["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "info"
    peer.send(message)
    seen = []
    while True:
        reply = peer.recv()
        if "id" in reply:
            break
        seen.append(reply)
    progress = [n["params"]["progress"] for n in seen if n["method"] == "notifications/progress"]
    assert progress == [1, 2, 3]
    assert all(n["params"]["progressToken"] == "tok" for n in seen if n["method"] == "notifications/progress")
    assert [n["params"]["data"] for n in seen if n["method"] == "notifications/message"] == [
        {"step": 1},
        {"step": 2},
        {"step": 3},
    ]
    quiet = peer.call(modern(2, "tools/call", name="with_progress", arguments={"steps": 2}))
    assert quiet["result"]["content"][0]["text"] == "done"
    assert peer.lines.empty()


def test_slow_tool_never_blocks_listing(peer: StdioPeer) -> None:
    # That the cancel reaches the tool (and no reply follows) is observed from the tool's side in
    # tests/core/test_cancellation_observed.py.
    peer.send(modern("slow", "tools/call", name="slow", arguments={"seconds": 30}))
    started = time.monotonic()
    assert peer.call(modern("list", "tools/list"))["result"]["tools"]
    assert time.monotonic() - started < 5
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
    assert peer.call(modern("after", "server/discover"))["id"] == "after"


def test_printing_tool_cannot_corrupt_stdout(peer: StdioPeer) -> None:
    result = peer.call(modern(1, "tools/call", name="noisy", arguments={}))["result"]
    assert result["content"][0]["text"] == "still fine"
    assert peer.close() == 0
    for line in peer.raw:
        json.loads(line)
    assert b"print() to stdout" in peer.stderr and b"raw write to fd 1" in peer.stderr


def _slow_call_in_flight(peer: StdioPeer) -> None:
    """Send a slow call and return once the server has read it: lines are read in order, so the
    reply to a quick request sent after it proves the slow one is being worked on."""
    peer.send(modern(1, "tools/call", name="slow", arguments={"seconds": 0.5}))
    assert peer.call(modern("ready", "tools/list"))["id"] == "ready"


def test_eof_lets_in_flight_work_finish_then_exits_zero() -> None:
    with StdioPeer() as peer:
        _slow_call_in_flight(peer)
        assert peer.close() == 0
        assert json.loads(peer.raw[-1])["result"]["content"][0]["text"] == "slept 0.5"


def test_sigterm_finishes_in_flight_work_and_exits_zero() -> None:
    with StdioPeer() as peer:
        _slow_call_in_flight(peer)
        peer.proc.send_signal(signal.SIGTERM)
        assert peer.wait(10) == 0
        assert json.loads(peer.raw[-1])["result"]["content"][0]["text"] == "slept 0.5"


def test_legacy_era_handshake_shapes_and_codes(peer: StdioPeer) -> None:
    init = peer.call(
        legacy(1, "initialize", protocolVersion="2025-06-18", capabilities={}, clientInfo={"name": "t", "version": "1"})
    )["result"]
    assert init["protocolVersion"] == "2025-06-18" and init["serverInfo"]["name"] == "kitchen"
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert peer.call(legacy(2, "ping"))["result"] == {}
    tools = peer.call(legacy(3, "tools/list"))["result"]
    assert "resultType" not in tools and "ttlMs" not in tools and "_meta" not in tools
    assert error_of(peer.call(legacy(4, "resources/read", uri="kitchen://nothing")))[0] == -32002
    assert peer.call(legacy(5, "logging/setLevel", level="warning"))["result"] == {}
    assert error_of(peer.call(legacy(6, "logging/setLevel", level="loud")))[0] == -32602
    assert peer.call(legacy(7, "resources/subscribe", uri="kitchen://menu"))["result"] == {}
    assert error_of(peer.call(modern(8, "tools/list")))[0] == -32600
    assert error_of(peer.call(legacy(9, "server/discover")))[0] == -32601


def test_legacy_version_negotiation(peer: StdioPeer) -> None:
    init = peer.call(legacy(1, "initialize", protocolVersion="2099-01-01", capabilities={}))["result"]
    assert init["protocolVersion"] == "2025-11-25"


def test_legacy_elicitation_is_a_server_to_client_request(peer: StdioPeer) -> None:
    peer.call(legacy(1, "initialize", protocolVersion="2025-11-25", capabilities={"elicitation": {}}))
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    peer.send(legacy(2, "tools/call", name="ask_name", arguments={}))
    request = peer.recv()
    assert request["method"] == "elicitation/create" and request["params"]["mode"] == "form"
    peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Bo"}}})
    reply = peer.recv()
    assert reply["id"] == 2 and reply["result"]["content"][0]["text"] == "Hello, Bo!"


def test_legacy_without_elicitation_capability_is_a_tool_error(peer: StdioPeer) -> None:
    peer.call(legacy(1, "initialize", protocolVersion="2025-11-25", capabilities={}))
    result = peer.call(legacy(2, "tools/call", name="ask_name", arguments={}))["result"]
    assert result["isError"] is True and "elicitation" in result["content"][0]["text"]


def test_pagination_walks_every_tool_in_order(peer: StdioPeer) -> None:
    names, cursor, rounds = [], None, 0
    while True:
        params = {"cursor": cursor} if cursor else {}
        page = peer.call(modern(rounds, "tools/list", **params))["result"]
        names += [tool["name"] for tool in page["tools"]]
        assert page["ttlMs"] == 0 and page["cacheScope"] == "private"
        rounds += 1
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert names == sorted(names) and len(names) == len(set(names)) > 2 and rounds > 1


@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_an_open_listen_does_not_keep_the_server_alive(how: str) -> None:
    with StdioPeer() as peer:
        peer.send(modern("sub", "subscriptions/listen", notifications={"toolsListChanged": True}))
        ack = peer.recv()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        if how == "eof":
            assert peer.close(10) == 0
        else:
            peer.proc.send_signal(signal.SIGTERM)
            assert peer.wait(10) == 0
        final = json.loads(peer.raw[-1])
        assert final["id"] == "sub" and final["result"]["resultType"] == "complete"


def test_legacy_client_error_to_elicitation_is_a_tool_error(peer: StdioPeer) -> None:
    peer.call(legacy(1, "initialize", protocolVersion="2025-11-25", capabilities={"elicitation": {}}))
    peer.send(legacy(2, "tools/call", name="ask_name", arguments={}))
    request = peer.recv()
    peer.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "Method not found"}})
    reply = peer.recv()
    assert reply["id"] == 2 and reply["result"]["isError"] is True
    assert "elicitation/create" in reply["result"]["content"][0]["text"]
