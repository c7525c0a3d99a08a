"""typed: what a tool's type hints add at registration — dataclass arguments and inferred outputs.

A tool parameter typed as a dataclass (or a list / optional of one) receives the dataclass built
from the validated JSON object; a return annotation that maps to a JSON Schema becomes the
tool's `outputSchema`: an object type (`dict[str, X]`, a TypedDict, a dataclass) as it is, any
other type wrapped as `{"result": ...}` (the content blocks stay what the value gives unwrapped).
Rules: all introspection happens once, at registration; a tool that needs none of this keeps
its own function, so its calls cost nothing more; knows nothing of eras or transports.
"""

from __future__ import annotations

import typing
from collections import abc
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core.content import ToolResult, is_content_block, tool_result
from mcp_agent_kit.core.signature import UnmappableType, is_dataclass_type, schema_for
from mcp_agent_kit.wire.reply import JSONText

Build = Callable[[Any], Any]
# Return annotations that say nothing about the shape: no outputSchema for them.
_SHAPELESS: tuple[Any, ...] = (None, type(None), Any, object, dict, list, tuple, set, frozenset, ToolResult)
_MAPPINGS = (dict, abc.Mapping)
_SEQUENCES = (list, tuple, set, frozenset, abc.Sequence)


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) in (typing.Annotated, typing.Required, typing.NotRequired):
        annotation = typing.get_args(annotation)[0]
    return annotation


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolved forward references: no typed extras
        return {}


def mentions_dataclass(annotation: Any) -> bool:
    """True when a dataclass appears anywhere in the annotation."""
    annotation = _strip(annotation)
    if is_dataclass_type(annotation):
        return True
    return any(mentions_dataclass(arg) for arg in typing.get_args(annotation) if arg is not Ellipsis)


def builder(annotation: Any) -> Build | None:
    """How to build an argument's Python value from its validated JSON, or None when the JSON
    value already is it (only dataclasses, and containers of them, are built)."""
    annotation = _strip(annotation)
    if is_dataclass_type(annotation):
        return _dataclass_builder(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, _union_type()):
        members = [arg for arg in args if arg is not type(None)]
        inner = builder(members[0]) if len(members) == 1 else None
        return None if inner is None else (lambda value: None if value is None else inner(value))
    if origin in _SEQUENCES and args:
        item = builder(args[0])
        return None if item is None else (lambda value: [item(entry) for entry in value])
    if origin in _MAPPINGS and len(args) == 2:
        entry = builder(args[1])
        return None if entry is None else (lambda value: {key: entry(item) for key, item in value.items()})
    return None


def _union_type() -> Any:
    import types

    return types.UnionType


def _dataclass_builder(cls: type) -> Build:
    fields = {name: builder(hint) for name, hint in typing.get_type_hints(cls, include_extras=True).items()}
    nested = {name: build for name, build in fields.items() if build is not None}

    def build(value: Any) -> Any:
        if isinstance(value, cls) or not isinstance(value, dict):
            return value
        if nested:
            value = {key: nested[key](item) if key in nested else item for key, item in value.items()}
        return cls(**value)

    return build


def to_plain(value: Any) -> Any:
    """A value with its dataclass instances (at any depth) turned into dicts."""
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        import dataclasses

        return dataclasses.asdict(value)
    if isinstance(value, list | tuple):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    return value


def output_schema(fn: Callable[..., Any]) -> tuple[dict[str, Any] | None, bool]:
    """(outputSchema, wrapped) inferred from fn's return annotation; (None, False) when it says
    nothing mappable. wrapped: the schema is `{"result": <the type's schema>}`."""
    hints = _hints(fn)
    if "return" not in hints:
        return None, False
    annotation = hints["return"]
    bare = _strip(annotation)
    try:
        if bare in _SHAPELESS:
            return None, False
    except TypeError:  # an unhashable annotation: not one of the shapeless ones
        pass
    if typing.get_origin(bare) in _MAPPINGS and typing.get_args(bare)[-1:] in ((Any,), (object,)):
        return None, False  # dict[str, Any] says nothing (and is how content blocks are typed)
    try:
        schema = schema_for(annotation, strict=True)
    except (UnmappableType, NameError, TypeError):
        return None, False
    if not schema:
        return None, False
    if typing.is_typeddict(bare) or is_dataclass_type(bare) or typing.get_origin(bare) in _MAPPINGS:
        return schema, False
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True


def wrap_result(value: Any) -> ToolResult:
    """structuredContent `{"result": value}`, with the content blocks the value gives today (a
    str stays its own text; other values their compact JSON)."""
    blocks = tool_result(value)["content"]
    for block in blocks:
        if type(block.get("text")) is JSONText:  # it mirrors value, not {"result": value}
            block["text"] = str(block["text"])
    return ToolResult(blocks, structured={"result": value})


def tool_function(
    fn: Callable[..., Any], is_async: bool, skip: frozenset[str], wrapped: bool, shape_output: bool
) -> Callable[..., Any]:
    """fn itself, or a wrapper that builds dataclass arguments and shapes the result."""
    hints = _hints(fn)
    builders = {
        name: build for name, hint in hints.items()
        if name != "return" and name not in skip and (build := builder(hint)) is not None
    }
    plain = shape_output and mentions_dataclass(hints.get("return"))
    if not builders and not wrapped and not plain:
        return fn

    def shape(value: Any) -> Any:
        if isinstance(value, ToolResult) or is_content_block(value):
            return value
        if plain:
            value = to_plain(value)
        return wrap_result(value) if wrapped else value

    def arguments(kwargs: dict[str, Any]) -> dict[str, Any]:
        for name, build in builders.items():
            if kwargs.get(name) is not None:
                kwargs[name] = build(kwargs[name])
        return kwargs

    if is_async:
        async def call_async(**kwargs: Any) -> Any:
            return shape(await fn(**arguments(kwargs)))

        call_async.__wrapped__ = fn  # type: ignore[attr-defined]
        return call_async

    def call(**kwargs: Any) -> Any:
        return shape(fn(**arguments(kwargs)))

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call
