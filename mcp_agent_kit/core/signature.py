"""signature: derives a JSON Schema for a Python callable's parameters from its type hints.

Rules: pure introspection; knows nothing of MCP or transports. Unknown annotations map to the
permissive schema `{}` rather than failing, so any callable can be registered.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
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
}


def schema_for(annotation: Any) -> dict[str, Any]:
    """The JSON Schema for one type annotation (a small, predictable subset of typing)."""
    if annotation is inspect.Parameter.empty:
        return {}
    try:
        scalar = _SCALARS.get(annotation)
    except TypeError:  # unhashable, e.g. Annotated[..., {"maxLength": 5}]
        scalar = None
    if scalar is not None:
        return dict(scalar)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.NotRequired, typing.Required):
        return schema_for(args[0])
    if origin is typing.Annotated:
        schema = schema_for(args[0])
        for extra in args[1:]:
            if isinstance(extra, str):
                schema["description"] = extra
            elif isinstance(extra, dict):
                schema.update(extra)
        return schema
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        members = [schema_for(arg) for arg in args]
        return {"anyOf": members}
    if origin in (list, tuple, set, frozenset) or origin is typing.Sequence:
        schema = {"type": "array"}
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {**schema, "prefixItems": [schema_for(a) for a in args], "items": False}
        if args:
            schema["items"] = schema_for(args[0])
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is dict or origin is typing.Mapping:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = schema_for(args[1])
        return schema
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [member.value for member in annotation]}
    if typing.is_typeddict(annotation):
        return _typeddict_schema(annotation)
    return {}


def _typeddict_schema(annotation: Any) -> dict[str, Any]:
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
        "properties": {name: schema_for(hint) for name, hint in hints.items()},
        "required": required,
    }


def parameters_schema(
    fn: Callable[..., Any], skip: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], bool]:
    """The object schema for fn's parameters, and whether fn takes **kwargs.

    Parameters named in `skip` (the injected context) are left out.
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
        schema = schema_for(hints.get(name, param.annotation))
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
