"""devtools.arguments: a tool's arguments from the shell — `NAME=VALUE` words and `--args JSON`.

A VALUE that parses as JSON is that JSON (`n=3`, `flags=[1,2]`, `on=true`), anything else the
string as typed (`city=Paris`); when the tool's inputSchema says the parameter is a string, the
string as typed wins (`zip=02134` stays "02134"). `--args` gives the whole object; NAME=VALUE
words are laid over it. Rules: pure functions; a malformed word is a CliError (exit 2).
"""

from __future__ import annotations

import json
from typing import Any

from mcp_agent_kit.cli_common import USAGE, CliError

_JSON_TYPES: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array",
                                dict: "object", type(None): "null"}


def _declared_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {item for item in declared if isinstance(item, str)}
    if isinstance(schema.get("enum"), list) and all(isinstance(item, str) for item in schema["enum"]):
        return {"string"}
    return set()


def _fits(value: Any, types: set[str]) -> bool:
    kind = _JSON_TYPES.get(type(value), "")
    return kind in types or (kind == "integer" and "number" in types)


def value_of(text: str, schema: Any = None) -> Any:
    """The argument VALUE means: JSON when it parses, else the text; the text when the schema wants a
    string and the JSON is not one."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    types = _declared_types(schema)
    if "string" in types and not _fits(parsed, types):
        return text
    return parsed


def parse_args_json(text: str | None) -> dict[str, Any]:
    """The object `--args JSON` gives (empty without it)."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"--args is not JSON: {exc}", "give a JSON object, e.g. --args '{\"n\": 3}'", USAGE) from None
    if not isinstance(value, dict):
        raise CliError(f"--args must be a JSON object, got {type(value).__name__}",
                       "give a JSON object, e.g. --args '{\"n\": 3}'", USAGE)
    return value


def split_pairs(words: list[str]) -> list[tuple[str, str]]:
    """NAME=VALUE words as (name, raw value) pairs."""
    pairs = []
    for word in words:
        name, sep, raw = word.partition("=")
        if not sep or not name:
            raise CliError(f"expected NAME=VALUE, got {word!r}",
                           "write each argument as NAME=VALUE, or use --args JSON", USAGE)
        pairs.append((name, raw))
    return pairs


def arguments(pairs: list[tuple[str, str]], base: dict[str, Any], input_schema: Any = None) -> dict[str, Any]:
    """The tool's arguments: `base` (from --args) with each NAME=VALUE laid over it."""
    found = input_schema.get("properties") if isinstance(input_schema, dict) else None
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    result = dict(base)
    for name, raw in pairs:
        result[name] = value_of(raw, properties.get(name))
    return result
