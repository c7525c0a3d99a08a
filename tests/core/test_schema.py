"""Tests for mcp_agent_kit.core.schema: keywords, messages, refs, limits, and a
differential check against jsonschema's Draft202012Validator."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_agent_kit.core.schema import (
    MAX_VIOLATIONS,
    SchemaError,
    Validator,
    Violation,
    compile_schema,
)


def ok(schema: Any, instance: Any) -> bool:
    v = compile_schema(schema)
    valid = v.is_valid(instance)
    errors = v.validate(instance)
    assert valid == (errors == []), (schema, instance, errors)
    assert (v.first_error(instance) is None) == valid
    return valid


def errs(schema: Any, instance: Any) -> list[Violation]:
    return compile_schema(schema).validate(instance)


def rules(schema: Any, instance: Any) -> list[str]:
    return [e.rule for e in errs(schema, instance)]


# ---------------------------------------------------------------------------- type
@pytest.mark.parametrize(
    ("type_", "good", "bad"),
    [
        ("null", [None], [0, False, "", [], {}]),
        ("boolean", [True, False], [0, 1, None, "true"]),
        ("object", [{}, {"a": 1}], [[], None, "x"]),
        ("array", [[], [1, "a"]], [{}, "ab", None]),
        ("string", ["", "x"], [1, None, b"x"]),
        ("number", [0, -1, 2.5, 10**30], [True, False, "1", None]),
        ("integer", [0, 3, 3.0, -7, 10**30], [3.5, True, "3", float("inf"), float("nan")]),
    ],
)
def test_type(type_: str, good: list[Any], bad: list[Any]) -> None:
    for g in good:
        assert ok({"type": type_}, g), g
    for b in bad:
        assert not ok({"type": type_}, b), b


def test_type_list_and_message() -> None:
    s = {"type": ["string", "null"]}
    assert ok(s, None) and ok(s, "x") and not ok(s, 1)
    (e,) = errs(s, 1)
    assert e == Violation("", "type", "(root): expected string or null, got integer (1)")
    assert errs({"type": "integer"}, 2.5)[0].message == "(root): expected integer, got number (2.5)"
    assert (
        errs({"type": "number"}, True)[0].message == "(root): expected number, got boolean (true)"
    )


def test_type_accepts_subclasses_of_json_types() -> None:
    class S(str):
        pass

    assert ok({"type": "string", "minLength": 2}, S("ab"))
    assert not ok({"type": "string"}, object())
    assert ok({"minimum": 1}, object())  # not a number: numeric keywords do not apply


# ------------------------------------------------------------------------- objects
def test_properties_required_and_paths() -> None:
    s = {
        "type": "object",
        "properties": {
            "values": {"type": "array", "items": {"type": "number"}},
            "metric_type": {"enum": ["mean", "sum", "max", "min"]},
            "user": {"properties": {"name": {"type": "string"}}, "required": ["name"]},
        },
        "required": ["values"],
    }
    assert ok(s, {"values": [1, 2.5]})
    assert [e.message for e in errs(s, {})] == ['(root): missing required property "values"']
    found = errs(s, {"values": [1, 2, "x"], "metric_type": "avg", "user": {"name": 5}})
    assert [(e.path, e.rule) for e in found] == [
        ("values[2]", "type"),
        ("metric_type", "enum"),
        ("user.name", "type"),
    ]
    assert found[0].message == 'values[2]: expected number, got string ("x")'
    assert found[1].message.startswith('metric_type: must be one of "mean", "sum", "max", "min"')
    assert (
        errs(s, {"values": [], "user": {}})[0].message == 'user: missing required property "name"'
    )


def test_paths_quote_odd_keys_and_root_arrays() -> None:
    s = {"properties": {"a b": {"type": "string"}, "x-mcp-header": {"type": "string"}}}
    assert errs(s, {"a b": 1})[0].path == '["a b"]'
    assert errs(s, {"x-mcp-header": 1})[0].path == "x-mcp-header"
    assert errs({"items": {"type": "string"}}, ["a", 1])[0].path == "[1]"
    nested = {"properties": {"o": {"properties": {"a.b": {"type": "null"}}}}}
    assert errs(nested, {"o": {"a.b": 1}})[0].path == 'o["a.b"]'


def test_additional_properties() -> None:
    closed = {"properties": {"a": {}}, "additionalProperties": False}
    assert ok(closed, {"a": 1}) and not ok(closed, {"a": 1, "b": 2})
    (e,) = errs(closed, {"a": 1, "b": 2})
    assert (e.path, e.rule, e.message) == (
        "",
        "additionalProperties",
        '(root): unexpected property "b"',
    )
    typed = {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}
    assert ok(typed, {"a": "x", "b": 2}) and not ok(typed, {"b": "x"})
    assert errs(typed, {"b": "x"})[0].path == "b"
    with_patterns = {"patternProperties": {"^x-": {}}, "additionalProperties": False}
    assert ok(with_patterns, {"x-a": 1}) and not ok(with_patterns, {"y": 1})


def test_pattern_properties_apply_alongside_properties() -> None:
    s = {"properties": {"ab": {"type": "string"}}, "patternProperties": {"b": {"minLength": 2}}}
    assert ok(s, {"ab": "xy", "cb": "zz", "other": 1})
    assert not ok(s, {"ab": "x"})
    assert not ok(s, {"cb": "z"})


def test_property_names_and_counts() -> None:
    s = {"propertyNames": {"pattern": "^[a-z]+$"}, "minProperties": 1, "maxProperties": 2}
    assert ok(s, {"ab": 1})
    assert rules(s, {}) == ["minProperties"]
    assert rules(s, {"a": 1, "b": 2, "c": 3}) == ["maxProperties"]
    (e,) = errs(s, {"Ab": 1})
    assert e.rule == "propertyNames" and '"Ab"' in e.message and "pattern" in e.message


def test_dependent_required_and_schemas() -> None:
    s = {"dependentRequired": {"card": ["cvv", "expiry"]}}
    assert ok(s, {}) and ok(s, {"card": 1, "cvv": 1, "expiry": 1})
    found = errs(s, {"card": 1, "cvv": 1})
    assert [e.rule for e in found] == ["dependentRequired"]
    assert found[0].message == '(root): property "expiry" is required when "card" is present'
    ds = {"dependentSchemas": {"a": {"required": ["b"]}}}
    assert ok(ds, {"c": 1}) and ok(ds, {"a": 1, "b": 1}) and not ok(ds, {"a": 1})


# -------------------------------------------------------------------- enum / const
def test_enum_and_const_use_json_equality() -> None:
    assert ok({"enum": [1, "a"]}, 1.0)
    assert not ok({"enum": [1, "a"]}, True)
    assert not ok({"enum": [False]}, 0)
    assert ok({"enum": [[1, {"a": 2}]]}, [1.0, {"a": 2.0}])
    assert not ok({"enum": [[1]]}, [True])
    assert ok({"const": 1}, 1.0) and not ok({"const": 1}, True) and not ok({"const": True}, 1)
    assert ok({"const": None}, None) and not ok({"const": None}, 0)
    assert ok({"const": {"a": [1, 2]}}, {"a": [1, 2]})
    assert not ok({"const": {"a": [1, 2]}}, {"a": [2, 1]})
    assert errs({"const": 5}, 4)[0].message == "(root): must be 5 (got 4)"
    m = errs({"enum": ["mean", "sum", "max", "min"]}, "avg")[0].message
    assert m == '(root): must be one of "mean", "sum", "max", "min" (got "avg")'


# ------------------------------------------------------------------------ numbers
def test_numeric_bounds() -> None:
    s = {"minimum": 1, "maximum": 10, "exclusiveMaximum": 10.5}
    assert ok(s, 1) and ok(s, 10) and ok(s, 5.5)
    assert rules(s, 0) == ["minimum"] and rules(s, 11) == ["maximum", "exclusiveMaximum"]
    assert not ok({"exclusiveMinimum": 0}, 0) and ok({"exclusiveMinimum": 0}, 1e-9)
    assert ok({"minimum": 5}, "x") and ok({"minimum": 5}, True)  # not numbers
    assert errs({"minimum": 1}, 0)[0].message == "(root): must be >= 1 (got 0)"
    assert ok({"maximum": 1e308}, 10**400) is False and ok({"minimum": 0}, 10**400)


def test_multiple_of() -> None:
    assert ok({"multipleOf": 3}, 9) and ok({"multipleOf": 3}, 9.0) and not ok({"multipleOf": 3}, 10)
    assert ok({"multipleOf": 0.5}, 2.5) and not ok({"multipleOf": 0.5}, 2.25)
    assert ok({"multipleOf": 0.1}, 0.3)  # decimal divisors compare as written
    assert ok({"multipleOf": 0.01}, 19.99) and not ok({"multipleOf": 0.01}, 0.001)
    assert not ok({"multipleOf": 2}, float("inf")) and not ok({"multipleOf": 0.5}, float("nan"))
    assert ok({"multipleOf": 0.5}, 10**400) and ok({"multipleOf": 1e-300}, 1e300)
    assert errs({"multipleOf": 3}, 4)[0].message == "(root): must be a multiple of 3 (got 4)"


# ------------------------------------------------------------------------ strings
def test_string_length_counts_code_points() -> None:
    s = {"minLength": 2, "maxLength": 3}
    assert ok(s, "😀😀") and ok(s, "abc") and not ok(s, "😀") and not ok(s, "abcd")
    assert ok(s, 5)  # not a string
    m = errs({"minLength": 3}, "ab")[0].message
    assert m == "(root): must be at least 3 characters long (got 2)"


def test_pattern_is_search_not_match() -> None:
    assert ok({"pattern": "b"}, "abc") and not ok({"pattern": "^b"}, "abc")
    assert ok({"pattern": "^[0-9]+$"}, 12)  # not a string
    assert errs({"pattern": "^a"}, "b")[0].message == '(root): must match pattern "^a" (got "b")'


def test_format_is_annotation_only() -> None:
    assert ok({"type": "string", "format": "email"}, "not an email")
    assert ok({"format": "date-time"}, "yesterday")


# ------------------------------------------------------------------------- arrays
def test_items_and_prefix_items() -> None:
    s = {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": {"type": "boolean"}}
    assert ok(s, []) and ok(s, ["a"]) and ok(s, ["a", 1, True, False])
    assert not ok(s, [1]) and not ok(s, ["a", 1, 2])
    assert errs(s, ["a", 1, 2])[0].path == "[2]"
    closed = {"prefixItems": [{}], "items": False}
    assert ok(closed, [1]) and not ok(closed, [1, 2])
    assert errs(closed, [1, 2])[0].message == "(root): must have at most 1 item (got 2)"
    assert ok({"prefixItems": [False]}, []) and not ok({"prefixItems": [False]}, [1])
    legacy = {"items": [{"type": "string"}], "additionalItems": False}  # draft-07 tuple form
    assert ok(legacy, ["a"]) and not ok(legacy, [1]) and not ok(legacy, ["a", "b"])


def test_contains() -> None:
    s = {"contains": {"type": "integer"}}
    assert ok(s, ["a", 1]) and not ok(s, ["a"]) and not ok(s, [])
    assert rules(s, ["a"]) == ["contains"]
    r = {"contains": {"const": 1}, "minContains": 2, "maxContains": 3}
    assert ok(r, [1, 1]) and ok(r, [1, 1, 1, 2])
    assert rules(r, [1]) == ["minContains"] and rules(r, [1, 1, 1, 1]) == ["maxContains"]
    assert ok({"contains": {"const": 1}, "minContains": 0}, [])
    assert not ok({"contains": {"const": 1}, "minContains": 0, "maxContains": 0}, [1])
    assert ok({"maxContains": 0}, [1])  # no "contains": ignored


def test_item_counts_and_unique_items() -> None:
    assert rules({"minItems": 1}, []) == ["minItems"] and ok({"maxItems": 1}, [1])
    u = {"uniqueItems": True}
    assert ok(u, [1, "1", True, None, [1], {"a": 1}])
    assert not ok(u, [1, 1.0]) and not ok(u, [{"a": 1, "b": 2}, {"b": 2, "a": 1.0}])
    assert ok(u, [1, True]) and ok(u, [0, False]) and ok(u, [[1], [True]])
    assert (
        errs(u, ["a", "b", "a"])[0].message
        == "(root): items must be unique, but [0] and [2] are equal"
    )
    assert ok({"uniqueItems": False}, [1, 1])


# -------------------------------------------------------------------- applicators
def test_all_any_one_not() -> None:
    assert ok({"allOf": [{"type": "integer"}, {"minimum": 2}]}, 3)
    assert rules({"allOf": [{"type": "integer"}, {"minimum": 2}]}, 1) == ["minimum"]
    any_ = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert ok(any_, "x") and ok(any_, 3) and not ok(any_, 2.5)
    (e,) = errs(any_, 2.5)
    assert e.rule == "anyOf" and "expected string, got number (2.5)" in e.message
    one = {"oneOf": [{"type": "integer"}, {"minimum": 2}]}
    assert ok(one, 1) and ok(one, 2.5) and not ok(one, 3) and not ok(one, 0.5)
    assert "matches 0, 1" in errs(one, 3)[0].message
    assert "matches none" in errs(one, 0.5)[0].message
    assert ok({"not": {"type": "string"}}, 1) and rules({"not": {"type": "string"}}, "a") == ["not"]


def test_if_then_else() -> None:
    s = {
        "if": {"properties": {"kind": {"const": "a"}}},
        "then": {"required": ["a"]},
        "else": {"required": ["b"]},
    }
    assert ok(s, {"kind": "a", "a": 1}) and ok(s, {"kind": "z", "b": 1})
    assert rules(s, {"kind": "a"}) == ["required"] and not ok(s, {"kind": "z", "a": 1})
    assert ok({"if": {"type": "string"}}, 1)  # no then/else: no effect
    assert ok({"then": False}, 1)  # no if: no effect


def test_boolean_schemas() -> None:
    assert ok(True, {"any": "thing"}) and not ok(False, None)
    assert errs(False, 1) == [Violation("", "false", "(root): no value is allowed here")]
    assert not ok({"properties": {"a": False}}, {"a": 1}) and ok({"properties": {"a": False}}, {})


def test_unknown_keywords_are_ignored() -> None:
    s = {
        "title": "T",
        "description": "D",
        "default": 3,
        "examples": [1],
        "x-mcp-header": "X-Thing",
        "deprecated": True,
        "nonsense": {"type": "integer"},
    }
    assert ok(s, "anything")


# --------------------------------------------------------------------------- $ref
def test_local_refs() -> None:
    s = {
        "$defs": {"pos": {"type": "integer", "minimum": 1}},
        "definitions": {"name": {"type": "string"}},
        "properties": {"n": {"$ref": "#/$defs/pos"}, "s": {"$ref": "#/definitions/name"}},
    }
    assert ok(s, {"n": 1, "s": "x"})
    assert errs(s, {"n": 0})[0] == Violation("n", "minimum", "n: must be >= 1 (got 0)")
    assert not ok(s, {"s": 1})


def test_ref_pointer_escapes_and_anchor_and_id() -> None:
    s = {
        "$id": "https://example.com/schemas/thing",
        "$defs": {"a/b": {"type": "integer"}, "m~n": {"type": "string"}, "c d": {"type": "null"}},
        "prefixItems": [
            {"$ref": "#/$defs/a~1b"},
            {"$ref": "#/$defs/m~0n"},
            {"$ref": "#/$defs/c%20d"},
            {"$ref": "#here"},
            {"$ref": "https://example.com/schemas/thing#/$defs/a~1b"},
            {"$ref": "#/prefixItems/0"},
        ],
        "items": {"$anchor": "here", "type": "boolean"},
    }
    assert ok(s, [1, "x", None, True, 2, 3])
    assert not ok(s, ["1"]) and not ok(s, [1, 2]) and not ok(s, [1, "x", 0])
    assert not ok(s, [1, "x", None, 1]) and not ok(s, [1, "x", None, True, "2"])


def test_recursive_ref_tree() -> None:
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "kids": {"items": {"$ref": "#/$defs/node"}},
                },
                "required": ["v"],
            }
        },
        "$ref": "#/$defs/node",
    }
    value: Any = {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}, {"v": 4}]}
    assert ok(tree, value)
    bad = copy.deepcopy(value)
    bad["kids"][0]["kids"][0]["v"] = "x"
    assert errs(tree, bad)[0].path == "kids[0].kids[0].v"
    assert ok({"items": {"$ref": "#"}, "type": "array"}, [[], [[]]])


def test_ref_cycles_and_deep_instances_end_in_a_depth_violation() -> None:
    for s in (
        {"$ref": "#"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"allOf": [{"$ref": "#"}]},
        {"anyOf": [{"$ref": "#"}], "not": {"$ref": "#"}},
    ):
        v = compile_schema(s)
        assert v.is_valid(1) is False
        assert [e.rule for e in v.validate(1)][-1:] in (["depth"], ["anyOf"], ["not"])
    nested: Any = []
    for _ in range(2000):
        nested = [nested]
    v = compile_schema({"type": "array", "items": {"$ref": "#"}})
    assert v.is_valid(nested) is False
    (e,) = v.validate(nested)
    assert e.rule == "depth" and e.path.startswith("[0][0][0]")
    shallow: Any = []
    for _ in range(40):
        shallow = [shallow]
    assert v.is_valid(shallow)
    objs: Any = {}
    for _ in range(2000):
        objs = {"a": objs}
    assert not compile_schema({"properties": {"a": {"$ref": "#"}}}).is_valid(objs)


def test_exponential_ref_fan_out_gives_up(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_agent_kit.core.schema as schema_module

    monkeypatch.setattr(schema_module, "MAX_REF_HOPS", 20_000)
    chain = {f"a{i}": {"anyOf": [{"$ref": f"#/$defs/a{i + 1}"}] * 2} for i in range(40)}
    for s in (
        {"anyOf": [{"$ref": "#"}, {"$ref": "#"}]},  # 2**128 paths without the budget
        {"$defs": {**chain, "a40": False}, "$ref": "#/$defs/a0"},  # 2**40, no cycle
    ):
        v = compile_schema(s)
        assert v.is_valid(1) is False
        (e,) = v.validate(1)
        assert "gave up after 20000 $ref expansions" in e.message
    fine = {"items": {"$ref": "#/$defs/n"}, "$defs": {"n": {"type": "integer"}}}
    v = compile_schema(fine)
    assert v.is_valid(list(range(15_000))) and v.is_valid(list(range(15_000)))  # per call


def test_hostile_instances_never_raise() -> None:
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    # Comparing the whole value overflows Python's recursion: that is a depth violation, never a pass.
    for s in ({"const": [1]}, {"uniqueItems": True}, {"enum": [[1], 2]}, {"items": {"$ref": "#"}}):
        v = compile_schema(s)
        assert v.is_valid(deep) is False, s
        assert [e.rule for e in v.validate(deep)] == ["depth"], s
        first = v.first_error(deep)
        assert first is not None and first.rule == "depth", s
    # A keyword that never looks inside gives its ordinary verdict, however deep the value is.
    for s, verdict in (({"type": "array"}, True), ({"type": "object"}, False), ({}, True)):
        v = compile_schema(s)
        assert v.is_valid(deep) is verdict and (v.validate(deep) == []) is verdict, s
        assert (v.first_error(deep) is None) is verdict, s
    deep_object: Any = {}
    for _ in range(100_000):
        deep_object = {"a": deep_object}
    assert compile_schema({"const": {"a": {}}}).is_valid(deep_object) is False
    assert compile_schema({"additionalProperties": {"$ref": "#"}}).is_valid(deep_object) is False
    huge = 10**5000
    assert ok({"type": "integer"}, huge)
    assert "huge" in errs({"type": "string"}, huge)[0].message
    assert ok({"multipleOf": 7}, huge * 7)


# ------------------------------------------------------------------ bad schemas
@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": "http://json-schema.org/draft-07/schema#"},
        {"$schema": "https://example.com/my-dialect"},
        {"minimum": "x"},
        {"maximum": True},
        {"multipleOf": 0},
        {"multipleOf": -2},
        {"minLength": -1},
        {"maxItems": 1.5},
        {"pattern": "("},
        {"pattern": 3},
        {"patternProperties": {"[": {}}},
        {"type": "float"},
        {"type": []},
        {"type": ["string", 3]},
        {"required": "a"},
        {"required": [1]},
        {"enum": "a"},
        {"properties": []},
        {"properties": {"a": 3}},
        {"items": "x"},
        {"allOf": []},
        {"anyOf": {}},
        {"not": None},
        {"uniqueItems": "yes"},
        {"dependentRequired": {"a": "b"}},
        {"$ref": 5},
        {"$ref": "#/$defs/missing"},
        {"$ref": "#/properties/a/0"},
        {"$ref": "#nowhere"},
        {"$defs": {"x": 1}, "$ref": "#/$defs/x"},
        {"minimum": float("inf")},
        {"enum": [{1, 2}]},
        [1, 2],
        "string",
    ],
)
def test_bad_schemas_raise_schema_error(schema: Any) -> None:
    with pytest.raises(SchemaError):
        compile_schema(schema)
    with pytest.raises(SchemaError):
        Validator(schema)


def test_schema_error_is_value_error_and_dialects() -> None:
    assert issubclass(SchemaError, ValueError)
    assert compile_schema({"$schema": "https://json-schema.org/draft/2020-12/schema"}).is_valid(1)
    assert compile_schema({"$schema": "https://json-schema.org/draft/2020-12/schema#"}).is_valid(1)


@pytest.mark.parametrize(
    "ref",
    [
        "https://example.com/schema.json",
        "http://json-schema.org/draft-07/schema#",
        "other.json#/defs/a",
        "file:///etc/passwd",
        "//host/x",
    ],
)
def test_non_local_refs_are_refused_without_io(ref: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import urllib.request

    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(urllib.request, "urlopen", boom)
    monkeypatch.setattr(socket, "create_connection", boom)
    with pytest.raises(SchemaError, match="local"):
        compile_schema({"properties": {"a": {"$ref": ref}}})


def test_schema_nesting_limit() -> None:
    s: Any = {"type": "integer"}
    for _ in range(500):
        s = {"not": s}
    with pytest.raises(SchemaError):
        compile_schema(s)
    cyclic: dict[str, Any] = {}
    cyclic["not"] = cyclic
    with pytest.raises(SchemaError):
        compile_schema(cyclic)
    with pytest.raises(SchemaError):
        Validator(cyclic)


# ------------------------------------------------------------------ API behaviour
def test_compile_cache_and_isolation() -> None:
    s: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    v1 = compile_schema(s)
    assert compile_schema(json.loads(json.dumps(s))) is v1
    assert compile_schema({"properties": {"a": {"type": "integer"}}, "type": "object"}) is v1
    s["properties"]["a"]["type"] = "string"  # mutating the caller's dict changes nothing
    assert v1.is_valid({"a": 1}) and not v1.is_valid({"a": "x"})
    assert compile_schema(s) is not v1 and compile_schema(s).is_valid({"a": "x"})


def test_violation_cap_and_first_error() -> None:
    v = compile_schema({"items": {"type": "integer"}})
    found = v.validate(["x"] * 100)
    assert len(found) == MAX_VIOLATIONS == 20
    assert v.first_error(["x"] * 100) == found[0]
    assert v.first_error([1]) is None and v.validate([1]) == []
    with pytest.raises(AttributeError):
        found[0].rule = "other"  # type: ignore[misc]


# -------------------------------------------------- differential test vs jsonschema
def jsonschema_module() -> Any:
    """The differential oracle; missing, it fails (it is pinned), and only the tests that use it."""
    from tests.pinned import require

    return require("jsonschema", "jsonschema==4.26.0")


NAMES = st.sampled_from(["a", "b", "c"])
TYPES = st.sampled_from(["null", "boolean", "object", "array", "string", "number", "integer"])
NUMBERS = st.integers(-4, 4) | st.integers(-16, 16).map(lambda n: n / 4)
SCALARS = st.none() | st.booleans() | NUMBERS | st.text("ab", max_size=3)
VALUES = st.recursive(
    SCALARS,
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(NAMES | st.just("ab"), ch, max_size=4),
    max_leaves=10,
)
COUNTS = st.integers(0, 3)
LEAF_KEYWORDS: dict[str, st.SearchStrategy[Any]] = {
    "type": TYPES | st.lists(TYPES, min_size=1, max_size=3, unique=True),
    "enum": st.lists(VALUES, min_size=1, max_size=4),
    "const": VALUES,
    "minimum": NUMBERS,
    "maximum": NUMBERS,
    "exclusiveMinimum": NUMBERS,
    "exclusiveMaximum": NUMBERS,
    "multipleOf": st.sampled_from([1, 2, 3, 0.5, 0.25, 1.5]),
    "minLength": COUNTS,
    "maxLength": COUNTS,
    "pattern": st.sampled_from(["a", "^b", "a$", "^[ab]*$", "b{2}", ""]),
    "minItems": COUNTS,
    "maxItems": COUNTS,
    "uniqueItems": st.booleans(),
    "minProperties": COUNTS,
    "maxProperties": COUNTS,
    "required": st.lists(NAMES, max_size=3, unique=True),
    "dependentRequired": st.dictionaries(
        NAMES, st.lists(NAMES, max_size=2, unique=True), max_size=2
    ),
    "minContains": COUNTS,
    "maxContains": COUNTS,
    "format": st.sampled_from(["email", "date-time", "uri"]),
}
REFS = st.sampled_from([{"$ref": "#/$defs/leaf"}, {"$ref": "#/$defs/tree"}])


def _leaf() -> st.SearchStrategy[Any]:
    return st.booleans() | st.fixed_dictionaries({}, optional=LEAF_KEYWORDS)


def _extend(ch: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    some = st.lists(ch, min_size=1, max_size=3)
    applicators: dict[str, st.SearchStrategy[Any]] = {
        "properties": st.dictionaries(NAMES, ch, max_size=3),
        "patternProperties": st.dictionaries(st.sampled_from(["^a", "b", "c$"]), ch, max_size=2),
        "additionalProperties": ch,
        "propertyNames": ch,
        "items": ch,
        "prefixItems": some,
        "contains": ch,
        "allOf": some,
        "anyOf": some,
        "oneOf": some,
        "not": ch,
        "if": ch,
        "then": ch,
        "else": ch,
        "dependentSchemas": st.dictionaries(NAMES, ch, max_size=2),
    }
    leaf_part = st.fixed_dictionaries({}, optional=LEAF_KEYWORDS)
    apps = st.fixed_dictionaries({}, optional=applicators)
    return st.tuples(leaf_part, apps).map(lambda t: {**t[0], **t[1]})


SCHEMAS = st.recursive(_leaf(), _extend, max_leaves=6)
SCHEMAS_WITH_REFS = st.tuples(
    st.recursive(_leaf() | REFS, _extend, max_leaves=6),
    st.recursive(_leaf(), _extend, max_leaves=4),
).map(
    lambda t: {
        "$defs": {
            "leaf": t[1],
            "tree": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/tree"}},
        },
        "allOf": [t[0]],
    }
)
SETTINGS = settings(
    max_examples=250,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _agree(schema: Any, instances: list[Any]) -> None:
    mine = compile_schema(schema)
    oracle = jsonschema_module().Draft202012Validator(schema)
    for x in instances:
        expected = oracle.is_valid(x)
        assert mine.is_valid(x) == expected, (schema, x)
        found = mine.validate(x)
        assert (found == []) == expected, (schema, x, found)


@SETTINGS
@given(SCHEMAS, st.lists(VALUES, min_size=1, max_size=8))
def test_differential_against_jsonschema(schema: Any, instances: list[Any]) -> None:
    _agree(schema, instances)


@SETTINGS
@given(SCHEMAS_WITH_REFS, st.lists(VALUES, min_size=1, max_size=8))
def test_differential_with_refs_against_jsonschema(schema: Any, instances: list[Any]) -> None:
    _agree(schema, instances)
