"""wire.jsonrpc: classification of every message shape, and encoding."""

from __future__ import annotations

import json

import pytest

from mcp_agent_kit.wire import jsonrpc


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"a"}', "request"),
        (b'{"jsonrpc":"2.0","id":"x","method":"a","params":{}}', "request"),
        (b'{"jsonrpc":"2.0","method":"a"}', "notification"),
        (b'{"jsonrpc":"2.0","id":1,"result":{}}', "response"),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}', "response"),
        (b'{"jsonrpc":"2.0","id":1,"result":{},"error":{}}', "invalid"),
        (b'{"jsonrpc":"2.0","id":true,"method":"a"}', "invalid"),
        (b'{"jsonrpc":"2.0","id":1,"method":"a","result":1}', "invalid"),
        (b'{"jsonrpc":"2.0","id":1,"method":""}', "invalid"),
        (b"[]", "invalid"),
        (b"17", "invalid"),
    ],
)
def test_classification(raw: bytes, kind: str) -> None:
    assert jsonrpc.decode(raw).kind == kind


@pytest.mark.parametrize("raw", [b"{", b"\xff", b'{"a": NaN}', b'{"a": Infinity}', b"[" * 50_000])
def test_parse_errors_have_no_id(raw: bytes) -> None:
    incoming = jsonrpc.decode(raw)
    assert incoming.kind == "invalid" and incoming.reply is not None
    assert incoming.reply["error"]["code"] == jsonrpc.PARSE_ERROR and "id" not in incoming.reply


def test_invalid_request_keeps_a_readable_id() -> None:
    reply = jsonrpc.decode(b'{"jsonrpc":"1.0","id":"q","method":"a"}').reply
    assert reply == {
        "jsonrpc": "2.0",
        "id": "q",
        "error": {"code": -32600, "message": 'Invalid Request: "jsonrpc" must be "2.0"'},
    }


def test_encode_is_compact_utf8_and_rejects_nan() -> None:
    assert jsonrpc.encode({"a": "é"}) == '{"a":"é"}'.encode()
    with pytest.raises(ValueError):
        jsonrpc.encode({"a": float("nan")})
    fallback = json.loads(jsonrpc.encode_safely({"jsonrpc": "2.0", "id": 3, "result": {"x": object()}}))
    assert fallback["id"] == 3 and fallback["error"]["code"] == jsonrpc.INTERNAL_ERROR


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"a"} x', "Extra data"),
        (b'{"jsonrpc":"2.0","id":1,"method":"a"}{}', "Extra data"),
        (b"", "Expecting value"),
        (b"   ", "Expecting value"),
        (b'{"a": -Infinity}', "not valid JSON"),
        (b'{"a": "\\ud800\\x"}', "Invalid \\escape"),
    ],
)
def test_parse_errors_name_the_problem(raw: bytes, message: str) -> None:
    reply = jsonrpc.decode(raw).reply
    assert reply is not None and reply["error"]["code"] == jsonrpc.PARSE_ERROR
    assert message in reply["error"]["message"]


def test_surrounding_whitespace_is_fine() -> None:
    incoming = jsonrpc.decode(b' \t{"jsonrpc":"2.0","id":1,"method":"a"}\r\n ')
    assert incoming.kind == "request" and incoming.message["id"] == 1


def test_decoding_matches_the_standard_parser() -> None:
    raw = '{"jsonrpc":"2.0","id":"é","method":"m","params":{"a":[1,2.5,-0.0,1e400,null,true],"b":{"c":"\\u00e9\\n"}}}'
    assert jsonrpc.decode(raw.encode()).message == json.loads(raw)


def test_encoding_a_circular_result_is_an_internal_error() -> None:
    loop: list[object] = []
    loop.append(loop)
    reply = json.loads(jsonrpc.encode_safely({"jsonrpc": "2.0", "id": 4, "result": {"x": loop}}))
    assert reply["id"] == 4 and reply["error"]["code"] == jsonrpc.INTERNAL_ERROR
    assert jsonrpc.dumps_compact({"k": ["é", 1.5, None]}) == '{"k":["é",1.5,null]}'
