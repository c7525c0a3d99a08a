"""schema_keywords: the keyword checks ``schema`` compiles a JSON Schema into.

Each keyword becomes a ``Kw`` triple: the Python instance types it applies to (None for
all), a fast ``ok(x, depth) -> bool`` and an ``errs(x, path, depth, out)`` that appends
``Violation``s. Rules: keyword values are checked at compile time (``SchemaError``); the
checks never raise for any JSON instance; equality is JSON equality (1 == 1.0,
true != 1). Knows nothing of MCP, JSON-RPC or I/O.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from itertools import islice
from typing import Any
from weakref import WeakKeyDictionary

# ok-functions of schemas that only constrain the JSON type -> the Python types that pass at once
# (registered by schema._dispatch; lets `items` skip a call per element of a homogeneous array).
TYPE_ONLY: WeakKeyDictionary[Callable[..., bool], frozenset[type]] = WeakKeyDictionary()

MAX_DEPTH = 128  # instance nesting levels plus $ref hops during one validation
MAX_VIOLATIONS = 20

OkFn = Callable[[Any, int], bool]
ErrFn = Callable[[Any, str, int, "list[Violation]"], None]
Kw = tuple["frozenset[type] | None", OkFn, ErrFn]
SubFn = Callable[[Any], "Node"]

OBJ: frozenset[type] = frozenset({dict})
_ARR: frozenset[type] = frozenset({list})
_STR: frozenset[type] = frozenset({str})
_NUM: frozenset[type] = frozenset({int, float})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z").match


class SchemaError(ValueError):
    """The schema is malformed or asks for something unsupported (e.g. a remote $ref)."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One failed rule: ``path`` like ``user.tags[2]`` ("" is the root), ``rule`` the keyword."""

    path: str
    rule: str
    message: str


class Node:
    """A compiled (sub)schema; ``$ref`` placeholders get their functions filled in later."""

    __slots__ = ("errs", "ok")

    def __init__(self, ok: OkFn, errs: ErrFn) -> None:
        self.ok = ok
        self.errs = errs


TRUE = Node(lambda x, d: True, lambda x, p, d, out: None)
FALSE = Node(
    lambda x, d: False,
    lambda x, p, d, out: out.append(violation(p, "false", "no value is allowed here")),
)


# ----------------------------------------------------------------------------- messages
def violation(p: str, rule: str, text: str) -> Violation:
    return Violation(p, rule, f"{p or '(root)'}: {text}")


def too_deep(x: Any, p: str, d: int, out: list[Violation]) -> bool:
    """At the depth limit a non-empty container is a violation; True means stop descending."""
    if d < MAX_DEPTH:
        return False
    if x:
        out.append(depth_violation(p))
    return True


def depth_violation(p: str) -> Violation:
    return violation(p, "depth", f"nesting deeper than {MAX_DEPTH} levels (values plus $ref hops)")


quote: Callable[[str], str] = json.encoder.encode_basestring  # a JSON string literal, unescaped


def show(v: Any, limit: int = 60) -> str:
    """A short JSON rendering of ``v`` for messages."""
    t = type(v)
    if t is str:
        s = quote(v)
    elif t is int:
        s = repr(v) if -(10**limit) < v < 10**limit else "(a huge integer)"
    elif t is bool or v is None:
        s = "null" if v is None else "true" if v else "false"
    elif isinstance(v, dict | list) and len(v) > 8:
        return "{...}" if isinstance(v, dict) else "[...]"
    else:
        try:
            s = json.dumps(v, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            s = repr(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def got(x: Any) -> str:
    """JSON type name of ``x``, plus its value when it is a scalar: ``string ("x")``."""
    if isinstance(x, bool):
        return f"boolean ({show(x)})"
    for t, name in ((int, "integer"), (float, "number"), (str, "string")):
        if isinstance(x, t):
            return f"{name} ({show(x)})"
    names = ((dict, "object"), (list, "array"), (type(None), "null"))
    return next((n for t, n in names if isinstance(x, t)), type(x).__name__)


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"1 {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") else f"{n} {word}s"


def key_path(p: str, k: str) -> str:
    if _IDENT(k):
        return f"{p}.{k}" if p else k
    return f"{p}[{quote(k)}]"


def detail(v: Violation, p: str) -> str:
    """A violation's text, without its location when that is ``p``."""
    return v.message[len(p or "(root)") + 2 :] if v.path == p else v.message


def canon(v: Any) -> Any:
    """A hashable key with JSON equality: canon(1) == canon(1.0), canon(True) != canon(1)."""
    t = type(v)
    if t is str:
        return v
    if t is int or t is float:
        return (0, v)
    if t is bool:
        return (1, v)
    if v is None:
        return (2,)
    if t is list:
        return (3, tuple(map(canon, v)))
    if t is dict:
        return (4, frozenset((k, canon(x)) for k, x in v.items()))
    base: Any
    for base in (bool, int, float, str, list, dict):  # subclasses
        if isinstance(v, base):
            return canon(base(v))
    return (5, repr(v))


# ------------------------------------------------------------------- keyword-value checks
def _number(s: dict[str, Any], k: str) -> int | float | None:
    if k not in s:
        return None
    v = s[k]
    if type(v) is int or (type(v) is float and math.isfinite(v)):
        return v
    raise SchemaError(f'"{k}" must be a finite number, got {show(v)}')


def _count(s: dict[str, Any], k: str) -> int | None:
    if k not in s:
        return None
    v = s[k]
    if (type(v) is int or (type(v) is float and v.is_integer())) and v >= 0:
        return int(v)
    raise SchemaError(f'"{k}" must be a non-negative integer, got {show(v)}')


def _list(s: dict[str, Any], k: str, item: type = object) -> list[Any] | None:
    v = s.get(k)
    if v is None and k not in s:
        return None
    if not isinstance(v, list) or not all(isinstance(i, item) for i in v):
        kind = "strings" if item is str else "values"
        raise SchemaError(f'"{k}" must be a list of {kind}, got {show(v)}')
    return v


def get_dict(s: dict[str, Any], k: str) -> dict[str, Any] | None:
    v = s.get(k)
    if v is None and k not in s:
        return None
    if not isinstance(v, dict):
        raise SchemaError(f'"{k}" must be an object, got {show(v)}')
    return v


def _regex(pattern: Any) -> Callable[[str], Any]:
    if not isinstance(pattern, str):
        raise SchemaError(f"a pattern must be a string, got {show(pattern)}")
    try:
        return re.compile(pattern).search
    except (re.error, RecursionError, OverflowError) as e:
        raise SchemaError(f"pattern {pattern!r} does not compile: {e}") from None


def get_schemas(s: dict[str, Any], k: str, sub: SubFn) -> list[Node] | None:
    v = _list(s, k)
    if v is not None and not v:
        raise SchemaError(f'"{k}" must be a non-empty list of schemas')
    return None if v is None else [sub(i) for i in v]


# --------------------------------------------------------------------------- keywords
def simple(types: frozenset[type] | None, rule: str, ok: OkFn, text: Callable[[Any], str]) -> Kw:
    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        if not ok(x, d):
            out.append(violation(p, rule, text(x)))

    return types, ok, errs


_CMP = {
    "minimum": (operator.ge, ">="),
    "maximum": (operator.le, "<="),
    "exclusiveMinimum": (operator.gt, ">"),
    "exclusiveMaximum": (operator.lt, "<"),
}


def _bound(rule: str, limit: int | float) -> Kw:
    op, sym = _CMP[rule]
    return simple(
        _NUM, rule, lambda x, d: op(x, limit), lambda x: f"must be {sym} {limit} (got {show(x)})"
    )


def _multiple_of(m: int | float) -> Kw:
    fm = Fraction(repr(m)) if type(m) is float else Fraction(m)

    def ok(x: Any, d: int) -> bool:
        if isinstance(x, int) and type(m) is int:
            return x % m == 0
        if isinstance(x, float):
            if not math.isfinite(x):
                return False
            q = x / m
            if math.isfinite(q) and q.is_integer():
                return True
            return (Fraction(repr(x)) / fm).denominator == 1
        return (Fraction(x) / fm).denominator == 1

    return simple(_NUM, "multipleOf", ok, lambda x: f"must be a multiple of {m} (got {show(x)})")


def _size(types: frozenset[type], rule: str, n: int, noun: str) -> Kw:
    least = rule.startswith("min")
    word = "at least" if least else "at most"
    verb = "be" if noun == "character" else "have"
    tail = " long" if noun == "character" else ""

    def ok(x: Any, d: int) -> bool:
        return len(x) >= n if least else len(x) <= n

    return simple(
        types, rule, ok, lambda x: f"must {verb} {word} {_plural(n, noun)}{tail} (got {len(x)})"
    )


def _enum(vals: list[Any]) -> Kw:
    keys = frozenset(canon(v) for v in vals)
    shown = ", ".join(show(v) for v in vals[:12]) + (", ..." if len(vals) > 12 else "")

    def ok(x: Any, d: int) -> bool:
        return (x if type(x) is str else canon(x)) in keys

    return simple(None, "enum", ok, lambda x: f"must be one of {shown} (got {show(x)})")


def _const(v: Any) -> Kw:
    key = canon(v)
    return simple(
        None, "const", lambda x, d: canon(x) == key, lambda x: f"must be {show(v)} (got {show(x)})"
    )


def _unique() -> Kw:
    def ok(x: Any, d: int) -> bool:
        return len(set(map(canon, x))) == len(x)

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        seen: dict[Any, int] = {}
        for i, v in enumerate(x):
            j = seen.setdefault(canon(v), i)
            if j != i:
                msg = f"items must be unique, but [{j}] and [{i}] are equal"
                out.append(violation(p, "uniqueItems", msg))
                return

    return _ARR, ok, errs


def _required(names: list[str]) -> Kw:
    need = frozenset(names)
    order = tuple(dict.fromkeys(names))

    def ok(x: dict[str, Any], d: int) -> bool:
        return x.keys() >= need

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        out.extend(
            violation(p, "required", f"missing required property {quote(k)}")
            for k in order
            if k not in x
        )

    return OBJ, ok, errs


def _dependent_required(deps: dict[str, Any]) -> Kw:
    for v in deps.values():
        if not isinstance(v, list) or not all(isinstance(i, str) for i in v):
            raise SchemaError('"dependentRequired" values must be lists of strings')
    pairs = tuple((k, tuple(v), frozenset(v)) for k, v in deps.items())

    def ok(x: Any, d: int) -> bool:
        return all(k not in x or x.keys() >= need for k, _, need in pairs)

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        for k, names, _ in pairs:
            for n in names if k in x else ():
                if n not in x:
                    msg = f"property {quote(n)} is required when {quote(k)} is present"
                    out.append(violation(p, "dependentRequired", msg))

    return OBJ, ok, errs


def _members(s: dict[str, Any], sub: SubFn) -> Kw | None:
    """properties + patternProperties + additionalProperties, in one pass over the object."""
    props, pats = get_dict(s, "properties"), get_dict(s, "patternProperties")
    extra = sub(s["additionalProperties"]) if "additionalProperties" in s else None
    if extra is TRUE:
        extra = None
    nodes = {k: sub(v) for k, v in (props or {}).items()}
    regs = tuple((_regex(k), sub(v)) for k, v in (pats or {}).items())
    if not nodes and not regs and extra is None:
        return None
    pget = {k: n.ok for k, n in nodes.items()}.get
    closed = frozenset(nodes) if extra is FALSE and not regs else None
    aok = extra.ok if extra is not None else None

    def ok(x: Any, d: int) -> bool:
        if d >= MAX_DEPTH:
            return not x
        if closed is not None and not closed.issuperset(x):
            return False
        d += 1
        for k, v in x.items():
            f = pget(k)
            if f is not None:
                if not f(v, d):
                    return False
                if not regs:
                    continue
            hit = f is not None
            for rx, n in regs:
                if rx(k):
                    hit = True
                    if not n.ok(v, d):
                        return False
            if not hit and aok is not None and not aok(v, d):
                return False
        return True

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        if too_deep(x, p, d, out):
            return
        for k, v in x.items():
            if len(out) >= MAX_VIOLATIONS:
                return
            cp, n = key_path(p, k), nodes.get(k)
            if n is not None:
                n.errs(v, cp, d + 1, out)
            hit = n is not None
            for rx, pn in regs:
                if rx(k):
                    hit = True
                    pn.errs(v, cp, d + 1, out)
            if not hit and extra is FALSE:
                out.append(violation(p, "additionalProperties", f"unexpected property {quote(k)}"))
            elif not hit and extra is not None:
                extra.errs(v, cp, d + 1, out)

    return OBJ, ok, errs


def _items(s: dict[str, Any], sub: SubFn) -> Kw | None:
    """prefixItems + items (a list-valued ``items`` is read as the older tuple form)."""
    items, prefix_key = s.get("items"), "prefixItems"
    if isinstance(items, list):
        items, prefix_key = s.get("additionalItems"), "items"
    prefix = [sub(v) for v in (_list(s, prefix_key) or [])]
    rest = sub(items) if items is not None else None
    if rest is TRUE:
        rest = None
    if not prefix and rest is None:
        return None
    pok, np = tuple(n.ok for n in prefix), len(prefix)
    rok = rest.ok if rest is not None else None
    fine = TYPE_ONLY.get(rok, frozenset()) if rok is not None else frozenset()

    def ok(x: Any, d: int) -> bool:
        if d >= MAX_DEPTH:
            return not x
        d += 1
        for f, v in zip(pok, x, strict=False):
            if not f(v, d):
                return False
        if rok is not None:
            for v in islice(x, np, None) if np else x:
                if type(v) not in fine and not rok(v, d):  # `fine`: a type-only item schema's types
                    return False
        return True

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        if too_deep(x, p, d, out):
            return
        if rest is FALSE and len(x) > np:
            msg = f"must have at most {_plural(np, 'item')} (got {len(x)})"
            out.append(violation(p, "items", msg))
        for i, v in enumerate(x):
            node = prefix[i] if i < np else rest
            if node is None or (i >= np and node is FALSE) or len(out) >= MAX_VIOLATIONS:
                break
            node.errs(v, f"{p}[{i}]", d + 1, out)

    return _ARR, ok, errs


def _contains(s: dict[str, Any], sub: SubFn) -> Kw | None:
    if "contains" not in s:
        return None
    node = sub(s["contains"])
    lo, hi = _count(s, "minContains"), _count(s, "maxContains")
    lo = 1 if lo is None else lo
    if lo == 0 and hi is None:
        return None
    f = node.ok

    def count(x: Any, d: int, stop: bool) -> int:
        c = 0
        for v in x:
            if f(v, d + 1):
                c += 1
                if stop and (c > hi if hi is not None else c >= lo):
                    break
        return c

    def ok(x: Any, d: int) -> bool:
        if d >= MAX_DEPTH and x:
            return False
        c = count(x, d, True)
        return lo <= c and (hi is None or c <= hi)

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        if d >= MAX_DEPTH and x:
            out.append(depth_violation(p))
            return
        c = count(x, d, False)
        what = f'matching the "contains" schema (got {c})'
        if c < lo:
            rule, msg = "minContains", f"must have at least {_plural(lo, 'item')} {what}"
            out.append(violation(p, rule if "minContains" in s else "contains", msg))
        elif hi is not None and c > hi:
            msg = f"must have at most {_plural(hi, 'item')} {what}"
            out.append(violation(p, "maxContains", msg))

    return _ARR, ok, errs


def assertions(s: dict[str, Any], sub: SubFn) -> list[Kw]:
    """The checks for ``s`` that look at one kind of value (bar ``type``), cheapest first."""
    kws: list[Kw] = []
    if "enum" in s:
        kws.append(_enum(_list(s, "enum") or []))
    if "const" in s:
        kws.append(_const(s["const"]))
    for rule in _CMP:
        limit = _number(s, rule)
        if limit is not None:
            kws.append(_bound(rule, limit))
    m = _number(s, "multipleOf")
    if m is not None:
        if m <= 0:
            raise SchemaError(f'"multipleOf" must be greater than 0, got {m}')
        kws.append(_multiple_of(m))
    sizes = (
        (_STR, "minLength", "maxLength", "character"),
        (_ARR, "minItems", "maxItems", "item"),
        (OBJ, "minProperties", "maxProperties", "property"),
    )
    for types, lo_rule, hi_rule, noun in sizes:
        for rule in (lo_rule, hi_rule):
            n = _count(s, rule)
            if n is not None:
                kws.append(_size(types, rule, n, noun))
    if "pattern" in s:
        rx, pat = _regex(s["pattern"]), s["pattern"]
        text: Callable[[Any], str] = lambda x: f"must match pattern {quote(pat)} (got {show(x)})"  # noqa: E731
        kws.append(simple(_STR, "pattern", lambda x, d: rx(x) is not None, text))
    if "uniqueItems" in s and not isinstance(s["uniqueItems"], bool):
        raise SchemaError(f'"uniqueItems" must be a boolean, got {show(s["uniqueItems"])}')
    if s.get("uniqueItems") is True:
        kws.append(_unique())
    required = _list(s, "required", str)
    if required:
        kws.append(_required(required))
    deps = get_dict(s, "dependentRequired")
    if deps:
        kws.append(_dependent_required(deps))
    for kw in (_members(s, sub), _items(s, sub), _contains(s, sub)):
        if kw is not None:
            kws.append(kw)
    return kws
