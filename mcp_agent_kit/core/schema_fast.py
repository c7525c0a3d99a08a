"""schema_fast: one generated Python function that accepts the common case of a schema.

The closure tree in ``schema`` is exact but pays a function call per keyword; tool arguments
and results go through it on every call. This module writes the everyday keywords of a
schema (type, properties, required, additionalProperties, items, item and length bounds,
number bounds, string enums) as straight-line Python and compiles it once. Rules: the
generated function is only a *shortcut to acceptance*: it returns True only for values the
closure tree accepts, and False whenever it is unsure (an exotic Python type, a keyword it
does not inline, a failing check), after which the caller asks the closure tree. A subschema
using any other keyword is handed to its compiled closure node, so semantics live in one
place. Source text never contains schema strings except as ``repr`` literals; it knows
nothing of MCP or I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core.schema_keywords import Node

FastFn = Callable[[Any], bool]

# Keywords with no effect on validity here ($ref/$defs targets are reached only through a
# delegated "$ref", which is not in INLINE).
_ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "$comment", "format", "deprecated", "readOnly",
    "writeOnly", "contentMediaType", "contentEncoding", "contentSchema", "$schema", "$id", "$anchor",
    "$defs", "definitions",
})
_INLINE = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
    "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum",
})
_TYPE_TESTS = {  # JSON type -> test on the exact Python type {t} of value {v}
    "object": "{t} is dict",
    "array": "{t} is list",
    "string": "{t} is str",
    "number": "{t} is int or {t} is float",
    "integer": "{t} is int or ({t} is float and {v}.is_integer())",
    "boolean": "{t} is bool",
    "null": "{v} is None",
}
_BOUNDS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
MAX_NESTING = 6  # loops nest in the generated code; CPython allows 20 nested blocks
MAX_LINES = 600


class _Unsupported(Exception):
    """The schema is too large or deep to be worth generating."""


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _trivial(s: Any) -> bool:
    """A schema that accepts everything."""
    return s is True or (isinstance(s, dict) and not s.keys() - _ANNOTATIONS)


class _Writer:
    def __init__(self, nodes: dict[int, Node]) -> None:
        self.nodes = nodes
        self.lines: list[str] = []
        self.names: dict[str, Any] = {}
        self.counter = 0

    def emit(self, indent: int, text: str) -> None:
        if len(self.lines) >= MAX_LINES:
            raise _Unsupported
        self.lines.append("    " * indent + text)

    def const(self, value: Any) -> str:
        self.counter += 1
        name = f"_k{self.counter}"
        self.names[name] = value
        return name

    def var(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def schema(self, s: Any, v: str, indent: int, depth: int) -> None:
        """Emit code that leaves `return False` unless value `v` surely satisfies `s`."""
        if s is True:
            return
        if s is False or not isinstance(s, dict):
            self.emit(indent, "return False")
            return
        keys = s.keys() - _ANNOTATIONS
        if not keys:
            return
        if depth > MAX_NESTING or not keys <= _INLINE or not self._inlinable(s):
            node = self.nodes.get(id(s))
            if node is None:
                raise _Unsupported
            self.emit(indent, f"if not {self.const(node.ok)}({v}, {depth}): return False")
            return
        t = self.var()
        self.emit(indent, f"{t} = type({v})")
        names = s.get("type")
        if names is not None:
            names = [names] if isinstance(names, str) else names
            tests = " or ".join(_TYPE_TESTS[n].format(t=t, v=v) for n in names)
            self.emit(indent, f"if not ({tests}): return False")
        self._object(s, v, t, indent, depth)
        self._array(s, v, t, indent, depth)
        self._scalars(s, v, t, indent)

    def _inlinable(self, s: dict[str, Any]) -> bool:
        """Keyword values this writer can turn into code (anything odd goes to the closure node)."""
        names = s.get("type")
        if names is not None:
            listed = [names] if isinstance(names, str) else names
            if not isinstance(listed, list) or not all(isinstance(n, str) and n in _TYPE_TESTS for n in listed):
                return False
        if "enum" in s and not (isinstance(s["enum"], list) and all(type(e) is str for e in s["enum"])):
            return False
        if any(k in s and not _is_number(s[k]) for k in _BOUNDS):
            return False
        if any(k in s and type(s[k]) is not int for k in ("minItems", "maxItems", "minLength", "maxLength")):
            return False
        required = s.get("required", [])
        props = s.get("properties", {})
        extra = s.get("additionalProperties", True)
        return (
            isinstance(required, list) and all(type(r) is str for r in required)
            and isinstance(props, dict) and isinstance(extra, dict | bool)
            and isinstance(s.get("items", True), dict | bool)
        )

    def _object(self, s: dict[str, Any], v: str, t: str, indent: int, depth: int) -> None:
        props: dict[str, Any] = s.get("properties", {})
        required: list[str] = s.get("required", [])
        extra = s.get("additionalProperties", True)
        if _trivial(extra):
            extra = True
        if not props and not required and extra is True:
            return
        self.emit(indent, f"if {t} is dict:")
        inner = indent + 1
        self.emit(inner, "pass")
        for name in required:
            self.emit(inner, f"if {name!r} not in {v}: return False")
        for name, sub in props.items():
            if _trivial(sub):
                continue
            item = self.var()
            self.emit(inner, f"{item} = {v}.get({name!r}, _MISSING)")
            self.emit(inner, f"if {item} is not _MISSING:")
            self.schema(sub, item, inner + 1, depth + 1)
            self.emit(inner + 1, "pass")
        if extra is False:
            self.emit(inner, f"if not {v}.keys() <= {self.const(frozenset(props))}: return False")
        elif extra is not True:
            known = self.const(frozenset(props))
            key, value = self.var(), self.var()
            self.emit(inner, f"for {key}, {value} in {v}.items():")
            self.emit(inner + 1, f"if {key} not in {known}:")
            self.schema(extra, value, inner + 2, depth + 1)
            self.emit(inner + 2, "pass")

    def _array(self, s: dict[str, Any], v: str, t: str, indent: int, depth: int) -> None:
        items = s.get("items", True)
        if _trivial(items):
            items = True
        if items is True and "minItems" not in s and "maxItems" not in s:
            return
        self.emit(indent, f"if {t} is list:")
        if "minItems" in s:
            self.emit(indent + 1, f"if len({v}) < {s['minItems']!r}: return False")
        if "maxItems" in s:
            self.emit(indent + 1, f"if len({v}) > {s['maxItems']!r}: return False")
        if items is not True:
            element = self.var()
            self.emit(indent + 1, f"for {element} in {v}:")
            self.schema(items, element, indent + 2, depth + 1)
            self.emit(indent + 2, "pass")
        self.emit(indent + 1, "pass")

    def _scalars(self, s: dict[str, Any], v: str, t: str, indent: int) -> None:
        if "enum" in s:  # strings only (see _inlinable): membership is JSON equality
            self.emit(indent, f"if {t} is not str or {v} not in {self.const(frozenset(s['enum']))}: return False")
        if "minLength" in s or "maxLength" in s:
            self.emit(indent, f"if {t} is str:")
            if "minLength" in s:
                self.emit(indent + 1, f"if len({v}) < {s['minLength']!r}: return False")
            if "maxLength" in s:
                self.emit(indent + 1, f"if len({v}) > {s['maxLength']!r}: return False")
        bounds = [(k, op) for k, op in _BOUNDS.items() if k in s]
        if bounds:
            self.emit(indent, f"if {t} is int or {t} is float:")
            for keyword, op in bounds:
                self.emit(indent + 1, f"if not ({v} {op} {s[keyword]!r}): return False")


def generate(schema: Any, nodes: dict[int, Node]) -> FastFn | None:
    """The accept-only shortcut for ``schema`` (already compiled: ``nodes`` maps id(subschema)
    to its closure node), or None when generating is not worthwhile."""
    if not isinstance(schema, dict) or not (schema.keys() - _ANNOTATIONS) <= _INLINE:
        return None
    writer = _Writer(nodes)
    try:
        writer.schema(schema, "x", 1, 0)
    except (_Unsupported, RecursionError):
        return None
    source = "def fast(x):\n" + "\n".join(writer.lines) + "\n    return True\n"
    namespace: dict[str, Any] = {"_MISSING": object(), **writer.names}
    exec(compile(source, "<schema_fast>", "exec"), namespace)  # our own generated code, schema text only as repr
    fn: FastFn = namespace["fast"]
    return fn
