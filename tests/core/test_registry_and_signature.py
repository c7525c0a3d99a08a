"""core.registry and core.signature: schemas from type hints, ordering, templates, duplicates."""

from __future__ import annotations

import enum
from typing import Annotated, Literal, TypedDict

import pytest

from mcp_agent_kit import Context, Server
from mcp_agent_kit.core.registry import template_pattern
from mcp_agent_kit.core.signature import parameters_schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: int
    y: int


def sample(
    name: str,
    count: int,
    ratio: float = 0.5,
    flag: bool = False,
    tags: list[str] | None = None,
    mode: Literal["a", "b"] = "a",
    color: Color = Color.RED,
    point: Point | None = None,
    note: Annotated[str, "A note."] = "",
    extra: dict[str, int] | None = None,
) -> None:
    """Docstring."""


def test_schema_from_signature() -> None:
    schema, var_kw = parameters_schema(sample)
    assert var_kw is False and schema["additionalProperties"] is False
    assert schema["required"] == ["name", "count"]
    props = schema["properties"]
    assert props["name"] == {"type": "string"}
    assert props["count"] == {"type": "integer"}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["tags"]["anyOf"] == [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    assert props["mode"] == {"enum": ["a", "b"], "default": "a"}
    assert props["color"] == {"enum": ["red", "blue"]}
    assert props["point"]["anyOf"][0]["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}
    assert props["note"] == {"type": "string", "description": "A note.", "default": ""}
    assert props["extra"]["anyOf"][0] == {"type": "object", "additionalProperties": {"type": "integer"}}


def test_context_parameter_is_injected_not_exposed() -> None:
    server = Server("t")

    @server.tool
    def uses_ctx(text: str, ctx: Context) -> str:
        return text

    tool = server.get_tool("uses_ctx")
    assert tool is not None and tool.handler.context_arg == "ctx"
    assert list(tool.input_schema["properties"]) == ["text"]


def test_lists_are_sorted_whatever_the_registration_order() -> None:
    server = Server("t")
    for name in ["zeta", "alpha", "mid"]:
        server.add_tool(lambda: None, name=name, input_schema={"type": "object"})
    assert [tool.name for tool in server.listing("tools")] == ["alpha", "mid", "zeta"]


def test_duplicates_and_bad_names_are_refused() -> None:
    server = Server("t")
    server.add_tool(lambda: None, name="x", input_schema={"type": "object"})
    with pytest.raises(ValueError, match="already registered"):
        server.add_tool(lambda: None, name="x", input_schema={"type": "object"})
    with pytest.raises(ValueError, match="invalid tool name"):
        server.add_tool(lambda: None, name="has space", input_schema={"type": "object"})
    with pytest.raises(ValueError, match="type 'object'"):
        server.add_tool(lambda: None, name="y", input_schema={"type": "array"})


def test_templates() -> None:
    pattern = template_pattern("file:///{+path}/x/{id}")
    found = pattern.fullmatch("file:///a/b/x/7")
    assert found is not None and found.groupdict() == {"path": "a/b", "id": "7"}
    assert template_pattern("t://{id}").fullmatch("t://a/b") is None


def test_change_listeners() -> None:
    server = Server("t")
    seen: list[tuple[str, str | None]] = []
    server.on_change(lambda kind, uri: seen.append((kind, uri)))
    server.add_tool(lambda: None, name="a", input_schema={"type": "object"})
    server.remove_tool("a")
    server.notify_resource_updated("x://1")
    assert seen == [("tools", None), ("tools", None), ("resources/updated", "x://1")]
