"""Tests for ${name}: the tools work, and the server answers real MCP requests."""

from ${pkg}.server import server
from ${pkg}.tools.example import ${example_tool}

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def test_example_tool() -> None:
    assert ${example_tool}("hello big world") == {"words": 3, "characters": 15}


def test_tools_list_and_call() -> None:
    listed = server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}})
    assert listed is not None
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["${example_tool}"]
    call = {"name": "${example_tool}", "arguments": {"text": "a b"}, "_meta": META}
    reply = server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    assert reply is not None
    assert reply["result"]["structuredContent"] == {"words": 2, "characters": 3}


def test_invalid_arguments_are_a_tool_error() -> None:
    call = {"name": "${example_tool}", "arguments": {"text": 42}, "_meta": META}
    reply = server.handle({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
    assert reply is not None and reply["result"]["isError"] is True
