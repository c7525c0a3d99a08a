"""Arguments arrive as the annotations promise; results keep their structure; errors stay terse."""

from __future__ import annotations

import enum
from typing import Annotated, NotRequired, TypedDict

from mcp_agent_kit import Server
from mcp_agent_kit.core.signature import schema_for
from tests.stdio_peer import modern


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Options(TypedDict):
    size: int
    label: NotRequired[str]


def make() -> Server:
    server = Server("conv")

    @server.tool(read_only=True)
    def paint(color: Color) -> str:
        assert isinstance(color, Color)
        return color.name

    @server.tool(output_schema={"type": "array", "items": {"type": "string"}})
    def names() -> list[str]:
        return ["a", "b"]

    @server.prompt()
    def repeat(word: str, times: int = 1) -> str:
        assert isinstance(times, int)
        return " ".join([word] * times)

    @server.resource("conv://broken")
    def broken() -> str:
        raise OSError("secret path /etc/shadow")

    return server


def test_enum_arguments_arrive_as_members() -> None:
    reply = make().handle(modern(1, "tools/call", name="paint", arguments={"color": "blue"}))
    assert reply is not None and reply["result"]["content"][0]["text"] == "BLUE"


def test_prompt_numbers_are_converted_and_bad_ones_refused() -> None:
    server = make()
    ok = server.handle(modern(1, "prompts/get", name="repeat", arguments={"word": "hi", "times": "3"}))
    assert ok is not None and ok["result"]["messages"][0]["content"]["text"] == "hi hi hi"
    bad = server.handle(modern(2, "prompts/get", name="repeat", arguments={"word": "hi", "times": "many"}))
    assert bad is not None and bad["error"]["code"] == -32602 and "times" in bad["error"]["message"]


def test_output_schema_makes_any_value_structured() -> None:
    reply = make().handle(modern(1, "tools/call", name="names", arguments={}))
    assert reply is not None and reply["result"]["structuredContent"] == ["a", "b"]
    assert reply["result"]["content"] == [{"type": "text", "text": '["a","b"]'}]


def test_internal_errors_do_not_leak_exception_text() -> None:
    reply = make().handle(modern(1, "resources/read", uri="conv://broken"))
    assert reply is not None and reply["error"]["code"] == -32603
    assert "shadow" not in reply["error"]["message"]


def test_schema_extras_and_not_required() -> None:
    assert schema_for(Annotated[str, "A label.", {"maxLength": 5}]) == {
        "type": "string", "description": "A label.", "maxLength": 5
    }
    schema = schema_for(Options)
    assert schema["properties"]["label"] == {"type": "string"} and schema["required"] == ["size"]


def test_extra_arguments_a_schema_allows_do_not_break_the_call() -> None:
    server = Server("extra")

    @server.tool(input_schema={"type": "object", "properties": {"a": {"type": "integer"}}})
    def only_a(a: int = 0) -> int:
        return a

    reply = server.handle(modern(1, "tools/call", name="only_a", arguments={"a": 2, "surprise": True}))
    assert reply is not None and reply["result"]["structuredContent"] == {"result": 2}  # inferred from -> int
