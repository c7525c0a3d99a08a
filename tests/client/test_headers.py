"""Modern HTTP request headers: Mcp-Method/Mcp-Name, Mcp-Param-* mirroring and value encoding."""

from __future__ import annotations

import base64

import pytest

from mcp_agent_kit.client.headers import encode_value, header_params, header_value, request_headers

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        ("Hello, 世界", _b64("Hello, 世界")),
        (" padded ", _b64(" padded ")),
        ("line1\nline2", _b64("line1\nline2")),
        ("\tindented", _b64("\tindented")),
        ("=?base64?abc?=", _b64("=?base64?abc?=")),
    ],
)
def test_encode_value(value: str, expected: str) -> None:
    assert encode_value(value) == expected


def test_header_values_by_type() -> None:
    assert header_value(42) == "42"
    assert header_value(True) == "true" and header_value(False) == "false"
    assert header_value(3.0) == "3"
    assert header_value(None) is None
    with pytest.raises(ValueError):
        header_value(2**53)
    with pytest.raises(ValueError):
        header_value({"a": 1})


def test_standard_headers_for_each_method() -> None:
    call = {"method": "tools/call", "params": {"_meta": META, "name": "my-tool", "arguments": {}}}
    expected = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "my-tool"}
    assert request_headers(call) == expected
    read = {"method": "resources/read", "params": {"_meta": META, "uri": "file:///a%20b"}}
    assert request_headers(read)["Mcp-Name"] == "file:///a%20b"
    listing = {"method": "tools/list", "params": {"_meta": META}}
    assert "Mcp-Name" not in request_headers(listing)
    assert request_headers({"method": "tools/list"}) == {}  # a legacy body gets no modern headers


def test_param_headers_are_mirrored_and_null_omitted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "nested": {"type": "object", "properties": {"deep": {"type": "string", "x-mcp-header": "Deep"}}},
            "query": {"type": "string"},
        },
    }
    mapping = header_params(schema)
    assert mapping == {
        "Region": ("region",),
        "Priority": ("priority",),
        "Verbose": ("verbose",),
        "Deep": ("nested", "deep"),
    }
    arguments = {"region": " x", "priority": 7, "verbose": None, "nested": {"deep": "d"}, "query": "q"}
    message = {"method": "tools/call", "params": {"_meta": META, "name": "t", "arguments": arguments}}
    headers = request_headers(message, mapping)
    assert headers["Mcp-Param-Region"] == _b64(" x")
    assert headers["Mcp-Param-Priority"] == "7"
    assert headers["Mcp-Param-Deep"] == "d"
    assert "Mcp-Param-Verbose" not in headers and "Mcp-Param-query" not in headers


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "string", "x-mcp-header": ""},
        {"type": "object", "x-mcp-header": "Data"},
        {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"},
        {"type": "null", "x-mcp-header": "Nil"},
        {"type": "number", "x-mcp-header": "Score"},
        {"type": "string", "x-mcp-header": "My Region"},
        {"type": "string", "x-mcp-header": "Region:Primary"},
        {"type": "string", "x-mcp-header": "Région"},
        {"type": "string", "x-mcp-header": "Region\t1"},
        {"type": "array", "items": {"type": "string", "x-mcp-header": "Inner"}},
        {"anyOf": [{"type": "string", "x-mcp-header": "Alt"}]},
    ],
)
def test_invalid_annotations_reject_the_tool(prop: dict[str, object]) -> None:
    assert header_params({"type": "object", "properties": {"p": prop}}) is None


def test_duplicate_header_names_reject_the_tool_case_insensitively() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"},
        },
    }
    assert header_params(schema) is None
