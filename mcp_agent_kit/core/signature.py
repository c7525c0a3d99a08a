"""signature: derives a JSON Schema for a Python callable's parameters from its type hints.

Rules: pure introspection; knows nothing of MCP or transports. Unknown annotations map to the
permissive schema `{}` rather than failing, so any callable can be registered, unless the caller
asks for `strict=True` (tool parameters), which raises UnmappableType instead.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections import abc
from collections.abc import Callable
from typing import Any

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    dict: {"type": "object"},
    list: {"type": "array"},
    Any: {},
    object: {},
}


_ARRAYS = (list, tuple, set, frozenset, abc.Sequence)
_OBJECTS = (dict, abc.Mapping)


class UnmappableType(TypeError):
    """A type annotation with no JSON Schema (raised by schema_for(..., strict=True))."""

    def __init__(self, annotation: Any) -> None:
        super().__init__(f"no JSON Schema for type {annotation!r}")
        self.annotation = annotation


def is_dataclass_type(annotation: Any) -> bool:
    """True for a dataclass class (without importing dataclasses)."""
    return isinstance(annotation, type) and hasattr(annotation, "__dataclass_fields__")


def schema_for(annotation: Any, strict: bool = False) -> dict[str, Any]:
    """The JSON Schema for one type annotation (a small, predictable subset of typing).

    An annotation it cannot map is `{}`, or UnmappableType when strict.
    """
    if annotation is inspect.Parameter.empty or isinstance(annotation, str):
        return {}  # no hint, or a forward reference that did not resolve
    try:
        scalar = _SCALARS.get(annotation)
    except TypeError:  # unhashable, e.g. Annotated[..., {"maxLength": 5}]
        scalar = None
    if scalar is not None:
        return dict(scalar)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.NotRequired, typing.Required):
        return schema_for(args[0], strict)
    if origin is typing.Annotated:
        schema = schema_for(args[0], strict)
        for extra in args[1:]:
            if isinstance(extra, str):
                schema["description"] = extra
            elif isinstance(extra, dict):
                schema.update(extra)
        return schema
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        members = [schema_for(arg, strict) for arg in args]
        return {"anyOf": members}
    if origin in _ARRAYS:
        schema = {"type": "array"}
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {**schema, "prefixItems": [schema_for(a, strict) for a in args], "items": False}
        if args:
            schema["items"] = schema_for(args[0], strict)
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin in _OBJECTS:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = schema_for(args[1], strict)
        return schema
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [member.value for member in annotation]}
    if typing.is_typeddict(annotation):
        return _typeddict_schema(annotation, strict)
    if is_dataclass_type(annotation):
        return _dataclass_schema(annotation, strict)
    if strict:
        raise UnmappableType(annotation)
    return {}


def _dataclass_schema(annotation: Any, strict: bool) -> dict[str, Any]:
    """A dataclass as an object: its init fields, required unless they have a default."""
    import dataclasses

    hints = typing.get_type_hints(annotation, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in dataclasses.fields(annotation):
        if not field.init:
            continue
        schema = schema_for(hints.get(field.name, field.type), strict)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            required.append(field.name)
        elif field.default is not dataclasses.MISSING and _is_json(field.default):
            schema["default"] = field.default
        properties[field.name] = schema
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _typeddict_schema(annotation: Any, strict: bool = False) -> dict[str, Any]:
    hints = typing.get_type_hints(annotation, include_extras=True)
    total = getattr(annotation, "__total__", True)
    marks = {name: typing.get_origin(hint) for name, hint in hints.items()}
    # Read Required/NotRequired from the hints themselves: __required_keys__ misses them when the
    # class was defined under `from __future__ import annotations`.
    required = sorted(
        name for name, mark in marks.items() if mark is typing.Required or (total and mark is not typing.NotRequired)
    )
    return {
        "type": "object",
        "properties": {name: schema_for(hint, strict) for name, hint in hints.items()},
        "required": required,
    }


def parameters_schema(
    fn: Callable[..., Any], skip: frozenset[str] = frozenset(), strict: bool = False
) -> tuple[dict[str, Any], bool]:
    """The object schema for fn's parameters, and whether fn takes **kwargs.

    Parameters named in `skip` (the injected context) are left out. With strict, a parameter
    whose type has no schema raises ValueError naming it.
    """
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolved forward references: fall back to raw annotations
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    var_keyword = False
    for name, param in signature.parameters.items():
        if name in skip:
            continue
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
            continue
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        hint = hints.get(name, param.annotation)
        try:
            schema = schema_for(hint, strict)
        except UnmappableType as exc:
            raise ValueError(f"parameter {name!r}: no JSON Schema for its type {exc.annotation!r}") from exc
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif _is_json(param.default):
            schema["default"] = param.default
        properties[name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    if not var_keyword:
        result["additionalProperties"] = False
    return result, var_keyword


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


_BOOLS = {"true": True, "false": False}


def _converter(annotation: Any) -> Callable[[Any], Any] | None:
    """How to turn a JSON (or prompt string) argument into what the annotation promises."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        enum_type = annotation
        return lambda value: value if isinstance(value, enum_type) else enum_type(value)
    if annotation in (int, float):
        number: type = annotation
        return lambda value: number(value) if isinstance(value, str) else value
    if annotation is bool:
        return lambda value: _BOOLS[value.lower()] if isinstance(value, str) else value
    return None


def converters(fn: Callable[..., Any], skip: frozenset[str] = frozenset()) -> dict[str, Callable[[Any], Any]]:
    """{parameter: converter} for parameters whose values need converting (Enum members, prompt numbers)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        return {}
    found = {}
    for name in inspect.signature(fn).parameters:
        convert = _converter(hints.get(name)) if name not in skip and name in hints else None
        if convert is not None:
            found[name] = convert
    return found


def context_parameter(fn: Callable[..., Any], context_type: type) -> str | None:
    """The name of fn's parameter that receives the request context, if it has one."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    for name, param in inspect.signature(fn).parameters.items():
        hint = hints.get(name, param.annotation)
        if hint is context_type or (isinstance(hint, str) and hint.split(".")[-1] == context_type.__name__):
            return name
    return None


def docstring_summary(fn: Callable[..., Any]) -> str | None:
    doc = inspect.getdoc(fn)
    return doc.strip() if doc else None
