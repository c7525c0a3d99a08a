"""elicit_types: typed elicitation — a Python type as a form-mode requestedSchema, and back.

`ctx.elicit(message, SomeType)` asks with the flat object schema MCP allows for forms
(string with enum / format, number, integer, boolean, arrays of enum strings) and returns an
`Elicited` whose `.data` is the typed answer: a dataclass instance, a TypedDict's dict, or for
a bare type (bool, str, int, float, a Literal of strings, an Enum, a list of those) the value of
its one property `value`. Rules: an answer is validated against the schema sent before it is
converted, so a wrong answer is a ToolError and never a wrong type; knows nothing of eras.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any, Generic, TypeVar

from mcp_agent_kit.core.content import ToolError
from mcp_agent_kit.core.signature import is_dataclass_type

T = TypeVar("T")
ACTIONS = frozenset({"accept", "decline", "cancel"})
_PRIMITIVES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
}
_HELP = "use str, int, float, bool, a Literal of strings, an Enum of strings, a list of those choices, or X | None"


class Elicited(Generic[T]):
    """The user's answer: `action` is "accept", "decline" or "cancel"; `data` is the typed value
    when accepted (else None); `content` is the raw form content."""

    __slots__ = ("action", "content", "data")

    def __init__(self, action: str, data: T | None, content: dict[str, Any] | None) -> None:
        self.action = action
        self.data = data
        self.content = content

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    def __repr__(self) -> str:
        return f"Elicited(action={self.action!r}, data={self.data!r})"


class Form:
    """A response type compiled once: its requestedSchema and how to read an answer back."""

    def __init__(self, response_type: Any) -> None:
        self.response_type = response_type
        self.wrapped = not (is_dataclass_type(response_type) or typing.is_typeddict(response_type))
        fields = {"value": response_type} if self.wrapped else typing.get_type_hints(response_type, include_extras=True)
        defaults = _defaults(response_type)
        properties: dict[str, Any] = {}
        required: list[str] = []
        self.readers: dict[str, Any] = {}
        self.optional: set[str] = set()
        for name, hint in fields.items():
            schema, optional, reader = _property(hint, name)
            properties[name] = schema
            self.readers[name] = reader
            if optional or name in defaults or _not_required(response_type, name, hint):
                self.optional.add(name)
            else:
                required.append(name)
        self.schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            self.schema["required"] = required
        self._validator: Any = None

    def read(self, message: str, answer: Any) -> Elicited[Any]:
        if not isinstance(answer, dict) or answer.get("action") not in ACTIONS:
            raise ToolError(f"the client's answer to {message!r} is not an ElicitResult: {answer!r:.200}")
        action = answer["action"]
        if action != "accept":
            return Elicited(action, None, None)
        content = answer.get("content")
        if content is None and not self.schema.get("required"):
            content = {}
        if self._validator is None:
            from mcp_agent_kit.core.schema import compile_schema

            self._validator = compile_schema(self.schema)
        problems = self._validator.validate(content)
        if problems:
            detail = "; ".join(problem.message for problem in problems)
            raise ToolError(f"the answer to {message!r} does not match the form asked: {detail}")
        assert isinstance(content, dict)
        values = {name: read(content[name]) for name, read in self.readers.items() if content.get(name) is not None}
        if self.wrapped:
            return Elicited(action, values.get("value"), content)
        if is_dataclass_type(self.response_type):
            defaults = _defaults(self.response_type)
            for name in self.optional - values.keys() - defaults:
                values[name] = None  # an optional field without a default, left empty
            return Elicited(action, self.response_type(**values), content)
        return Elicited(action, values, content)


def _defaults(response_type: Any) -> set[str]:
    if not is_dataclass_type(response_type):
        return set()
    import dataclasses

    return {
        field.name for field in dataclasses.fields(response_type)
        if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
    }


def _not_required(response_type: Any, name: str, hint: Any) -> bool:
    if not typing.is_typeddict(response_type):
        return False
    mark = typing.get_origin(hint)
    return mark is typing.NotRequired or (not getattr(response_type, "__total__", True) and mark is not typing.Required)


def _same(value: Any) -> Any:
    return value


def _property(hint: Any, name: str) -> tuple[dict[str, Any], bool, Any]:
    """(schema, optional, reader) for one form field; TypeError for a type a form cannot hold."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Required, typing.NotRequired):
        return _property(args[0], name)
    if origin is typing.Annotated:
        schema, optional, reader = _property(args[0], name)
        schema = dict(schema)
        for extra in args[1:]:
            if isinstance(extra, str):
                schema["description"] = extra
            elif isinstance(extra, dict):
                schema.update(extra)
        return schema, optional, reader
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        members = [arg for arg in args if arg is not type(None)]
        if len(members) == 1:
            schema, _, reader = _property(members[0], name)
            return schema, True, reader
    if origin is list and len(args) == 1:
        item, _, read_item = _choices(args[0], name)
        return {"type": "array", "items": item}, False, lambda values: [read_item(v) for v in values]
    if hint in _PRIMITIVES:
        reader = float if hint is float else (int if hint is int else _same)
        return dict(_PRIMITIVES[hint]), False, reader
    return _choices(hint, name)


def _choices(hint: Any, name: str) -> tuple[dict[str, Any], bool, Any]:
    """A Literal of strings or an Enum with string values: a string enum."""
    if typing.get_origin(hint) is typing.Literal and all(isinstance(arg, str) for arg in typing.get_args(hint)):
        return {"type": "string", "enum": list(typing.get_args(hint))}, False, _same
    if isinstance(hint, type) and issubclass(hint, enum.Enum) and all(isinstance(m.value, str) for m in hint):
        enum_type = hint
        return {"type": "string", "enum": [member.value for member in hint]}, False, enum_type
    raise TypeError(f"elicitation field {name!r}: a form cannot ask for {hint!r}; {_HELP}")


def form(response_type: Any) -> Form:
    """The compiled form for a response type (TypeError if it cannot be one)."""
    return Form(response_type)
