"""Raw tools (Registry.add_raw_tool): a JSON schema served as given and `fn(ctx, arguments)`, in both eras."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_agent_kit import Context, Server, ToolResult
from mcp_agent_kit.core.content import text
from mcp_agent_kit.testing import accept

ERAS = ("2026-07-28", "2025-11-25")
SCHEMA = {
    "type": "object",
    "properties": {"ctx": {"type": "string"}, "arguments": {"type": "integer"}, "fn": {"type": "boolean"}},
    "required": ["ctx"],
    "additionalProperties": False,
}


@pytest.fixture
def server() -> Server:
    server = Server("raw", "1.0.0")

    def echo(ctx: Context, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult([text(f"{ctx.method}:{sorted(arguments.items())}")], structured={"got": arguments})

    async def later(ctx: Context, arguments: dict[str, Any]) -> str:
        return f"async {arguments['ctx']}"

    def asking(ctx: Context, arguments: dict[str, Any]) -> str:
        return f"{arguments['ctx']}:{ctx.elicit('Go on?', bool).data}"

    server.add_raw_tool("echo", SCHEMA, echo, title="Echo", description="Echo the arguments.",
                        annotations={"readOnlyHint": True}, meta={"x": 1})
    server.add_raw_tool("later", SCHEMA, later)
    server.add_raw_tool("asking", SCHEMA, asking, description="Ask first.")
    return server


def test_the_schema_and_fields_are_served_as_given(server: Server) -> None:
    tools = {tool["name"]: tool for tool in server.test_client().list_tools()}
    assert tools["echo"] == {"name": "echo", "title": "Echo", "description": "Echo the arguments.",
                             "inputSchema": SCHEMA, "annotations": {"readOnlyHint": True}, "_meta": {"x": 1}}
    assert tools["later"] == {"name": "later", "inputSchema": SCHEMA}


@pytest.mark.parametrize("era", ERAS)
def test_arguments_arrive_as_one_dict_whatever_their_names(server: Server, era: str) -> None:
    client = server.test_client(era)
    arguments = {"ctx": "a", "arguments": 2, "fn": True}
    result = client.call_tool("echo", arguments)
    assert result["content"][0]["text"] == "tools/call:[('arguments', 2), ('ctx', 'a'), ('fn', True)]"
    assert result["structuredContent"] == {"got": arguments}
    assert client.call_tool("echo", {"ctx": "b", "arguments": 3.0})["structuredContent"] == {
        "got": {"ctx": "b", "arguments": 3}}  # an integral float for an integer property: an int, as for any tool
    assert client.call_tool("later", {"ctx": "c"})["content"][0]["text"] == "async c"


@pytest.mark.parametrize("era", ERAS)
def test_the_schema_is_enforced(server: Server, era: str) -> None:
    result = server.test_client(era).call_tool("echo", {"ctx": 1, "other": True})
    assert result["isError"] is True and "Invalid arguments for tool 'echo'" in result["content"][0]["text"]


@pytest.mark.parametrize("era", ERAS)
def test_a_raw_tool_can_ask(server: Server, era: str) -> None:
    result = server.test_client(era).call_tool("asking", {"ctx": "x"}, answers=[accept({"value": True})])
    assert result["content"][0]["text"] == "x:True"


def test_bad_registrations_are_refused() -> None:
    server = Server("raw", "1.0.0")
    with pytest.raises(ValueError, match="invalid tool name"):
        server.add_raw_tool("no spaces", SCHEMA, lambda ctx, arguments: "")
    with pytest.raises(ValueError, match="inputSchema must have type 'object'"):
        server.add_raw_tool("arr", {"type": "array"}, lambda ctx, arguments: "")
