"""schema_fast: the generated accept-only shortcut never accepts what the schema forbids,
and it is really used for everyday tool schemas. Oracle: jsonschema's Draft202012Validator."""

from __future__ import annotations

import enum
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_agent_kit.core.schema import Validator, compile_schema
from tests.core.test_schema import COUNTS, NAMES, NUMBERS, TYPES, VALUES, jsonschema_module

INLINE_LEAF: dict[str, st.SearchStrategy[Any]] = {
    "type": TYPES | st.lists(TYPES, min_size=1, max_size=3, unique=True),
    "enum": st.lists(st.text("ab", max_size=2), min_size=1, max_size=3),
    "minimum": NUMBERS,
    "maximum": NUMBERS,
    "exclusiveMinimum": NUMBERS,
    "exclusiveMaximum": NUMBERS,
    "minLength": COUNTS,
    "maxLength": COUNTS,
    "minItems": COUNTS,
    "maxItems": COUNTS,
    "required": st.lists(NAMES, max_size=3, unique=True),
    "description": st.just("annotations change nothing"),
    "default": VALUES,
}
DELEGATED_LEAF: dict[str, st.SearchStrategy[Any]] = {  # handed to the closure tree
    "const": VALUES,
    "pattern": st.sampled_from(["a", "^b", "^[ab]*$"]),
    "uniqueItems": st.booleans(),
    "enum": st.lists(VALUES, min_size=1, max_size=3),
}


def _extend(ch: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    apps = st.fixed_dictionaries(
        {},
        optional={
            "properties": st.dictionaries(NAMES, ch, max_size=3),
            "additionalProperties": ch,
            "items": ch,
        },
    )
    return st.tuples(st.fixed_dictionaries({}, optional=INLINE_LEAF), apps).map(lambda t: {**t[0], **t[1]})


LEAVES = (
    st.booleans()
    | st.fixed_dictionaries({}, optional=INLINE_LEAF)
    | st.fixed_dictionaries({}, optional=DELEGATED_LEAF)
)
ROOTS = st.recursive(LEAVES, _extend, max_leaves=8).filter(lambda s: isinstance(s, dict))
SETTINGS = settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(ROOTS, st.lists(VALUES, min_size=1, max_size=8))
def test_shortcut_accepts_only_valid_values(schema: dict[str, Any], instances: list[Any]) -> None:
    validator = Validator(schema)
    oracle = jsonschema_module().Draft202012Validator(schema)
    for x in instances:
        expected = oracle.is_valid(x)
        if validator._fast is not None and validator._fast(x):
            assert expected, (schema, x)
        assert validator.is_valid(x) == expected, (schema, x)


@SETTINGS
@given(st.recursive(st.fixed_dictionaries({}, optional=INLINE_LEAF), _extend, max_leaves=8), st.data())
def test_inline_only_schemas_get_a_shortcut_that_agrees_exactly(schema: dict[str, Any], data: Any) -> None:
    """Without delegated keywords the shortcut is exact on plain JSON values (no fallback needed)."""
    validator = Validator(schema)
    assert validator._fast is not None, schema
    oracle = jsonschema_module().Draft202012Validator(schema)
    for x in data.draw(st.lists(VALUES, min_size=1, max_size=8)):
        assert validator._fast(x) == oracle.is_valid(x), (schema, x)


TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "values": {"type": "array", "items": {"type": "number"}, "minItems": 1, "description": "numbers"},
        "metric_type": {"type": "string", "enum": ["mean", "sum"], "default": "mean"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "query": {"type": "string", "pattern": "^[a-z]+$"},
    },
    "required": ["values"],
    "additionalProperties": False,
}


def test_everyday_tool_schema_takes_the_shortcut() -> None:
    validator = compile_schema(TOOL_SCHEMA)
    assert validator._fast is not None
    good = {"values": [1, 2.5], "metric_type": "sum", "limit": 3.0, "query": "abc"}
    assert validator._fast(good) is True
    for bad in (
        {"values": []}, {"values": [True]}, {"values": [1], "metric_type": "median"},
        {"values": [1], "limit": 0}, {"values": [1], "limit": 1.5}, {"values": [1], "extra": 1},
        {"metric_type": "sum"}, {"values": [1], "query": "ABC"}, [1],
    ):
        assert validator._fast(bad) is False, bad
        assert validator.is_valid(bad) is False, bad
        assert validator.validate(bad), bad


def test_unusual_python_types_fall_back_to_the_closure_tree() -> None:
    class Colour(enum.IntEnum):
        RED = 1

    class Name(str):
        pass

    validator = compile_schema({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}})
    value = {"n": Colour.RED, "s": Name("x")}
    assert validator._fast is not None and validator._fast(value) is False
    assert validator.is_valid(value) is True


def test_schemas_beyond_the_subset_at_the_root_have_no_shortcut() -> None:
    assert compile_schema({"anyOf": [{"type": "string"}, {"type": "null"}]})._fast is None
    assert compile_schema({"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}})._fast is None
    nested = compile_schema(
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}
    )
    assert nested._fast is not None  # the $ref property is delegated to its compiled node
    assert nested.is_valid({"a": "x"}) and not nested.is_valid({"a": 1})


def test_hostile_property_names_are_only_literals() -> None:
    name = "x'): return True\n#"
    validator = compile_schema({"type": "object", "properties": {name: {"type": "integer"}}, "required": [name]})
    assert validator._fast is not None
    assert validator.is_valid({name: 1}) and not validator.is_valid({name: "1"}) and not validator.is_valid({})
