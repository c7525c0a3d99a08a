"""schema: compiles a JSON Schema 2020-12 subset once; validates plain JSON values.

A schema is compiled into a tree of small closures, dispatched by the instance's Python
type, so validating the common case (an object with a few typed, required properties)
costs a handful of dict look-ups. Rules: knows nothing of MCP, JSON-RPC or I/O; only
local ``$ref`` (``#...``) is followed and nothing is ever fetched; ``format`` is an
annotation; unknown or unsupported keywords (``unevaluated*``, ``$dynamicRef``, ...) are
ignored, so validation is never stricter than the spec; instance nesting plus ``$ref``
hops are capped at ``MAX_DEPTH`` so hostile schemas or values yield a violation, never a
crash, and ``$ref`` expansions per validation are capped at ``MAX_REF_HOPS`` so
exponential schemas give up instead of hanging. Assertion keywords and message helpers
live in ``schema_keywords``; applicators, ``$ref`` and the public API live here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from mcp_agent_kit.core.schema_keywords import (
    FALSE,
    MAX_DEPTH,
    MAX_VIOLATIONS,
    OBJ,
    TRUE,
    TYPE_ONLY,
    ErrFn,
    Kw,
    Node,
    OkFn,
    SchemaError,
    SubFn,
    Violation,
    assertions,
    depth_violation,
    detail,
    get_dict,
    get_schemas,
    got,
    quote,
    simple,
    violation,
)

__all__ = [
    "DIALECTS",
    "MAX_DEPTH",
    "MAX_REF_HOPS",
    "MAX_VIOLATIONS",
    "SchemaError",
    "Validator",
    "Violation",
    "compile_schema",
]

DIALECTS = frozenset({"https://json-schema.org/draft/2020-12/schema"})
MAX_SCHEMA_DEPTH = 100  # nesting of subschemas inside one schema document
MAX_REF_HOPS = 1_000_000  # $ref expansions in one validation before giving up
_CACHE_SIZE = 256

_NoneType = type(None)
_PY_TYPES: tuple[type, ...] = (dict, list, str, int, float, bool, _NoneType, object)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (_NoneType,),
}


def _base_type(x: Any) -> type:
    """The JSON-ish Python type of ``x`` (slow path for subclasses and foreign objects)."""
    for t in (bool, int, float, str, dict, list):
        if isinstance(x, t):
            return t
    return _NoneType if x is None else object


def _dispatch(table: dict[type, tuple[Kw, ...]]) -> tuple[OkFn, ErrFn]:
    """Build a node's ``ok``/``errs`` pair from per-instance-type tuples of checks."""
    oks = {t: tuple(k[1] for k in ks) for t, ks in table.items()}
    errs = {t: tuple(k[2] for k in ks) for t, ks in table.items()}
    if not any(oks.values()):
        return TRUE.ok, TRUE.errs
    oget, eget = oks.get, errs.get
    fine = frozenset(t for t, cs in oks.items() if not cs)

    def type_only(x: Any, d: int) -> bool:
        t = type(x)
        return t in fine or (t not in oks and not oks[_base_type(x)])

    def ok(x: Any, d: int) -> bool:
        cs = oget(type(x))
        if cs is None:
            cs = oks[_base_type(x)]
        for c in cs:  # noqa: SIM110 - a plain loop beats all(<genexpr>) on this hot path
            if not c(x, d):
                return False
        return True

    def errs_fn(x: Any, p: str, d: int, out: list[Violation]) -> None:
        cs = eget(type(x))
        if cs is None:
            cs = errs[_base_type(x)]
        for c in cs:
            if len(out) >= MAX_VIOLATIONS:
                return
            c(x, p, d, out)

    pure = all(not cs or cs == (FALSE.ok,) for cs in oks.values())
    if pure:
        TYPE_ONLY[type_only] = fine
    return (type_only if pure else ok), errs_fn


def _type_check(spec: Any) -> tuple[frozenset[type] | None, bool, Kw | None]:
    """Parse ``type``: (allowed Python types, float-must-be-integral, rejecting check)."""
    if spec is None:
        return None, False, None
    names = [spec] if isinstance(spec, str) else spec
    if not isinstance(names, list) or not names:
        raise SchemaError(f'"type" must be a type name or a non-empty list of them, got {spec!r}')
    for n in names:
        if not isinstance(n, str) or n not in _JSON_TYPES:
            raise SchemaError(f'"type" names an unknown type {n!r}')
    allowed = frozenset(t for n in names for t in _JSON_TYPES[n])
    float_int = "integer" in names and "number" not in names
    want = " or ".join(names)

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        out.append(violation(p, "type", f"expected {want}, got {got(x)}"))

    return allowed, float_int, (None, FALSE.ok, errs)


def _integral_ok(x: Any, d: int) -> bool:
    return bool(x.is_integer())


def _integral_errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
    if not x.is_integer():
        out.append(violation(p, "type", f"expected integer, got {got(x)}"))


_INTEGRAL: Kw = (None, _integral_ok, _integral_errs)


# ------------------------------------------------------------------------ applicators
def _property_names(node: Node) -> Kw:
    f = node.ok

    def ok(x: Any, d: int) -> bool:
        return all(f(k, d) for k in x)

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        for k in x:
            tmp: list[Violation] = []
            node.errs(k, "", d, tmp)
            if tmp:
                msg = f"invalid property name {quote(k)}: {detail(tmp[0], '')}"
                out.append(violation(p, "propertyNames", msg))

    return OBJ, ok, errs


def _dependent_schemas(deps: dict[str, Any], sub: SubFn) -> Kw:
    pairs = tuple((k, sub(v)) for k, v in deps.items())

    def ok(x: Any, d: int) -> bool:
        return all(k not in x or n.ok(x, d) for k, n in pairs)

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        for k, n in pairs:
            if k in x:
                n.errs(x, p, d, out)

    return OBJ, ok, errs


def _all_of(nodes: list[Node]) -> Kw:
    oks = tuple(n.ok for n in nodes)

    def ok(x: Any, d: int) -> bool:
        for f in oks:  # noqa: SIM110 - cheaper than all(<genexpr>)
            if not f(x, d):
                return False
        return True

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        for n in nodes:
            n.errs(x, p, d, out)

    return None, ok, errs


def _closest(nodes: list[Node], x: Any, p: str, d: int) -> str:
    best: list[Violation] = []
    for n in nodes:
        tmp: list[Violation] = []
        n.errs(x, p, d, tmp)
        if tmp and (not best or len(tmp) < len(best)):
            best = tmp
    return f"; closest: {detail(best[0], p)}" if best else ""


def _any_of(nodes: list[Node]) -> Kw:
    oks = tuple(n.ok for n in nodes)

    def ok(x: Any, d: int) -> bool:
        for f in oks:  # noqa: SIM110 - cheaper than any(<genexpr>)
            if f(x, d):
                return True
        return False

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        if not ok(x, d):
            text = f"must match at least one of {len(nodes)} anyOf alternatives"
            out.append(violation(p, "anyOf", text + _closest(nodes, x, p, d)))

    return None, ok, errs


def _one_of(nodes: list[Node]) -> Kw:
    oks = tuple(n.ok for n in nodes)

    def ok(x: Any, d: int) -> bool:
        c = 0
        for f in oks:
            if f(x, d):
                c += 1
                if c > 1:
                    return False
        return c == 1

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        hits = [i for i, f in enumerate(oks) if f(x, d)]
        if not hits:
            text = f"must match exactly one of {len(nodes)} oneOf alternatives, but matches none"
            out.append(violation(p, "oneOf", text + _closest(nodes, x, p, d)))
        elif len(hits) > 1:
            which = ", ".join(map(str, hits))
            out.append(
                violation(
                    p, "oneOf", f"must match exactly one oneOf alternative, but matches {which}"
                )
            )

    return None, ok, errs


def _not(node: Node) -> Kw:
    f = node.ok
    return simple(
        None, "not", lambda x, d: not f(x, d), lambda x: 'must not match the "not" schema'
    )


def _if(cond: Node, then: Node, other: Node) -> Kw:
    def ok(x: Any, d: int) -> bool:
        return then.ok(x, d) if cond.ok(x, d) else other.ok(x, d)

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        (then if cond.ok(x, d) else other).errs(x, p, d, out)

    return None, ok, errs


def _ref(h: Node, hops: list[int]) -> Kw:
    """Follow ``$ref`` to ``h``; ``hops`` counts expansions in the current validation."""

    def ok(x: Any, d: int) -> bool:
        hops[0] += 1
        return d < MAX_DEPTH and hops[0] <= MAX_REF_HOPS and h.ok(x, d + 1)

    def errs(x: Any, p: str, d: int, out: list[Violation]) -> None:
        hops[0] += 1
        if d >= MAX_DEPTH:
            out.append(depth_violation(p))
        elif hops[0] > MAX_REF_HOPS:
            if not out or out[-1].rule != "$ref":
                msg = f"gave up after {MAX_REF_HOPS} $ref expansions (schema too complex)"
                out.append(violation(p, "$ref", msg))
        else:
            h.errs(x, p, d + 1, out)

    return None, ok, errs


def _keywords(s: dict[str, Any], sub: SubFn, ref: Callable[[Any], Kw]) -> list[Kw]:
    """All checks for schema object ``s`` (bar ``type``): assertions, then applicators."""
    kws = assertions(s, sub)
    if "propertyNames" in s:
        kws.append(_property_names(sub(s["propertyNames"])))
    dep_schemas = get_dict(s, "dependentSchemas")
    if dep_schemas:
        kws.append(_dependent_schemas(dep_schemas, sub))
    for key, make in (("allOf", _all_of), ("anyOf", _any_of), ("oneOf", _one_of)):
        nodes = get_schemas(s, key, sub)
        if nodes is not None:
            kws.append(make(nodes))
    if "not" in s:
        kws.append(_not(sub(s["not"])))
    if "if" in s and ("then" in s or "else" in s):
        kws.append(_if(sub(s["if"]), sub(s.get("then", True)), sub(s.get("else", True))))
    if "$ref" in s:
        kws.append(ref(s["$ref"]))
    return kws


class _Compiler:
    """One compilation: subschema cache by identity, deferred local ``$ref`` targets."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.done: dict[int, Node] = {}
        self.pending: list[tuple[Node, str]] = []
        self.anchors: dict[str, Any] | None = None
        self.hops = [0]

    def node(self, s: Any, depth: int) -> Node:
        if s is True or s is False:
            return TRUE if s else FALSE
        if not isinstance(s, dict):
            raise SchemaError(f"a schema must be an object or a boolean, got {got(s)}")
        hit = self.done.get(id(s))
        if hit is not None:
            return hit
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"schema nesting deeper than {MAX_SCHEMA_DEPTH} levels")
        allowed, float_int, reject = _type_check(s.get("type"))
        kws = _keywords(s, lambda sub: self.node(sub, depth + 1), self.ref)
        table: dict[type, tuple[Kw, ...]] = {}
        for t in _PY_TYPES:
            applicable = tuple(k for k in kws if k[0] is None or t in k[0])
            if allowed is None or t in allowed:
                table[t] = applicable
            elif t is float and float_int:
                table[t] = (_INTEGRAL, *applicable)
            else:
                assert reject is not None
                table[t] = (reject,)
        n = Node(*_dispatch(table))
        self.done[id(s)] = n
        return n

    def ref(self, ref: Any) -> Kw:
        """The check for ``$ref``; its target is compiled after the main pass."""
        if not isinstance(ref, str):
            raise SchemaError(f'"$ref" must be a string, got {ref!r}')
        base = self.root.get("$id") if isinstance(self.root, dict) else None
        if isinstance(base, str) and base.rstrip("#"):
            base = base.rstrip("#")
            if ref == base or ref.startswith(base + "#"):
                ref = "#" + ref[len(base) + 1 :]
        if not ref.startswith("#"):
            raise SchemaError(
                f"only local $ref ('#...') is supported, not {ref!r}; nothing is fetched"
            )
        h = Node(FALSE.ok, FALSE.errs)
        self.pending.append((h, ref))
        return _ref(h, self.hops)

    def resolve_all(self) -> None:
        while self.pending:
            h, ref = self.pending.pop()
            target = self.node(self._lookup(ref), 0)
            h.ok, h.errs = target.ok, target.errs

    def _lookup(self, ref: str) -> Any:
        frag = unquote(ref[1:])
        cur: Any = self.root
        if frag and not frag.startswith("/"):
            cur = self._anchor_map().get(frag)
            if cur is None:
                raise SchemaError(f"$ref {ref!r}: no $anchor named {frag!r}")
        elif frag:
            for tok in frag[1:].split("/"):
                tok = tok.replace("~1", "/").replace("~0", "~")
                if isinstance(cur, dict) and tok in cur:
                    cur = cur[tok]
                elif isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
                    cur = cur[int(tok)]
                else:
                    raise SchemaError(f"$ref {ref!r} points at nothing")
        if not isinstance(cur, dict | bool):
            raise SchemaError(f"$ref {ref!r} does not point at a schema")
        return cur

    def _anchor_map(self) -> dict[str, Any]:
        if self.anchors is None:
            self.anchors = {}
            stack: list[tuple[Any, int]] = [(self.root, 0)]
            while stack:
                cur, depth = stack.pop()
                if depth > MAX_SCHEMA_DEPTH:
                    continue
                if isinstance(cur, dict):
                    if isinstance(cur.get("$anchor"), str):
                        self.anchors.setdefault(cur["$anchor"], cur)
                    skip = ("enum", "const", "default", "examples")
                    stack.extend((v, depth + 1) for k, v in cur.items() if k not in skip)
                elif isinstance(cur, list):
                    stack.extend((v, depth + 1) for v in cur)
        return self.anchors


class Validator:
    """A compiled schema. Build with ``compile_schema`` (cached) or ``Validator(schema)``."""

    __slots__ = ("_errs", "_fast", "_hops", "_ok")

    def __init__(self, schema: dict[str, Any] | bool) -> None:
        self._setup(_parse(_canonical(schema)))

    def _setup(self, schema: Any) -> None:
        root, self._hops, self._fast = _compile(schema)
        self._ok, self._errs = root.ok, root.errs

    def is_valid(self, instance: Any) -> bool:
        """True if ``instance`` satisfies the schema; stops at the first failure.

        The generated shortcut (schema_fast) accepts the everyday case; when it is unsure,
        the closure tree decides.
        """
        self._hops[0] = 0
        try:
            fast = self._fast
            return (fast is not None and fast(instance)) or self._ok(instance, 0)
        except RecursionError:
            return False

    def validate(self, instance: Any) -> list[Violation]:
        """All violations (at most ``MAX_VIOLATIONS``); an empty list means valid."""
        out: list[Violation] = []
        try:
            if self.is_valid(instance):
                return out
            self._hops[0] = 0
            self._errs(instance, "", 0, out)
        except RecursionError:
            out.append(depth_violation(""))
        return out[:MAX_VIOLATIONS]

    def first_error(self, instance: Any) -> Violation | None:
        """The first violation, or None when ``instance`` is valid (cheap when valid)."""
        if self.is_valid(instance):
            return None
        errors = self.validate(instance)
        return errors[0] if errors else depth_violation("")


def compile_schema(schema: dict[str, Any] | bool) -> Validator:
    """Compile ``schema`` (cached on its canonical JSON) or raise ``SchemaError``."""
    return _compile_key(_canonical(schema))


@lru_cache(maxsize=_CACHE_SIZE)
def _compile_key(key: str) -> Validator:
    v = Validator.__new__(Validator)
    v._setup(_parse(key))
    return v


def _canonical(schema: Any) -> str:
    try:
        return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise SchemaError(f"schema is not plain JSON: {e}") from None


def _parse(key: str) -> Any:
    """A private copy of the schema, so later edits to the caller's dict change nothing."""
    try:
        return json.loads(key)
    except RecursionError:
        raise SchemaError("schema is nested too deeply") from None


def _compile(schema: Any) -> tuple[Node, list[int], Callable[[Any], bool] | None]:
    if not isinstance(schema, dict | bool):
        raise SchemaError(f"a schema must be an object or a boolean, got {got(schema)}")
    if isinstance(schema, dict) and "$schema" in schema:
        dialect = schema["$schema"]
        if not isinstance(dialect, str) or dialect.rstrip("#") not in DIALECTS:
            raise SchemaError(
                f"unsupported $schema {dialect!r}; only JSON Schema 2020-12 is supported"
            )
    c = _Compiler(schema)
    try:
        root = c.node(schema, 0)
        c.resolve_all()
    except RecursionError:
        raise SchemaError("schema is nested too deeply") from None
    from mcp_agent_kit.core.schema_fast import generate

    return root, c.hops, generate(schema, c.done)
