"""wire.reply: the reply encoder that reuses JSON text gives the same JSON as the plain encoder."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_agent_kit.core import content
from mcp_agent_kit.wire import jsonrpc
from mcp_agent_kit.wire.mcp import META_SERVER_INFO
from mcp_agent_kit.wire.reply import JSONText, encode_reply

INFO = {"name": "metrics", "version": "1.0.0", "title": "Metrics"}
TEXT = st.text(st.characters(codec="utf-8"), max_size=8)  # escapes, quotes, non-ASCII, NUL
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda ch: st.lists(ch, max_size=3) | st.dictionaries(TEXT, ch, max_size=3),
    max_leaves=8,
)
IDS = st.integers(-(2**63), 2**63) | TEXT


def tool_reply(id_: Any, structured: Any, info: dict[str, Any] = INFO, **extra: Any) -> dict[str, Any]:
    result = content.tool_result(structured, structured=True)
    result.update({"resultType": "complete", "_meta": {META_SERVER_INFO: info}}, **extra)
    return {"jsonrpc": "2.0", "id": id_, "result": result}


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(IDS, st.dictionaries(TEXT, JSON, max_size=4), st.dictionaries(TEXT, TEXT, min_size=1, max_size=3))
def test_structured_tool_results_encode_byte_for_byte_like_the_plain_encoder(
    id_: Any, structured: dict[str, Any], info: dict[str, Any]
) -> None:
    reply = tool_reply(id_, structured, info)
    assert type(reply["result"]["content"][0]["text"]) is JSONText
    assert encode_reply(reply) == jsonrpc.encode_safely(reply)


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(
    IDS,
    st.dictionaries(TEXT, JSON, max_size=3),
    st.fixed_dictionaries(
        {},
        optional={
            "isError": st.booleans() | JSON,
            "resultType": st.sampled_from(["complete", "input_required", "other"]) | JSON,
            "extra": JSON,
            "_meta": st.just({META_SERVER_INFO: INFO}) | st.dictionaries(TEXT, JSON, max_size=2) | JSON,
        },
    ),
    st.booleans(),
)
def test_any_result_shape_gives_the_same_json_value(
    id_: Any, structured: dict[str, Any], changes: dict[str, Any], drop_content: bool
) -> None:
    reply = tool_reply(id_, structured)
    reply["result"].update(changes)
    if "_meta" not in changes:
        del reply["result"]["_meta"]
    if drop_content:
        reply["result"]["content"] = []
    assert json.loads(encode_reply(reply)) == json.loads(jsonrpc.encode_safely(reply))


def test_non_json_results_become_the_same_internal_error() -> None:
    for bad in ({"x": float("nan")}, {"x": object()}):
        reply = tool_reply(7, {"ok": 1}, extra=bad)
        assert encode_reply(reply) == jsonrpc.encode_safely(reply)
        assert json.loads(encode_reply(reply))["error"]["code"] == jsonrpc.INTERNAL_ERROR


def test_a_changed_server_info_is_never_served_from_the_cache() -> None:
    info = dict(INFO)
    first = json.loads(encode_reply(tool_reply(1, {"a": 1}, info)))
    info["version"] = "2.0.0"  # changed in place: same object, new content
    second = json.loads(encode_reply(tool_reply(2, {"a": 1}, info)))
    assert first["result"]["_meta"][META_SERVER_INFO]["version"] == "1.0.0"
    assert second["result"]["_meta"][META_SERVER_INFO]["version"] == "2.0.0"


def test_other_messages_take_the_plain_encoder() -> None:
    for message in (
        jsonrpc.error_reply(3, -32602, "bad"),
        jsonrpc.notification("notifications/progress", {"progress": 1}),
        {"jsonrpc": "2.0", "id": 4, "result": {"tools": []}},
        {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "{}"}], "structuredContent": {}}},
    ):
        assert encode_reply(message) == jsonrpc.encode_safely(message)


def test_json_text_is_a_plain_string_to_everyone_else() -> None:
    text = JSONText('{"a":1}')
    assert text == '{"a":1}' and isinstance(text, str) and json.loads(text) == {"a": 1}
    assert json.dumps({"t": text}) == json.dumps({"t": '{"a":1}'})


def test_lone_surrogates_become_the_same_internal_error() -> None:
    for reply in (tool_reply(8, {"s": "\ud800"}), tool_reply(9, {"a": 1}, extra={"x": "\udfff"})):
        assert encode_reply(reply) == jsonrpc.encode_safely(reply)
        assert json.loads(encode_reply(reply))["error"]["code"] == jsonrpc.INTERNAL_ERROR
