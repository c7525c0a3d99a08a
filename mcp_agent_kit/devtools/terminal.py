"""devtools.terminal: answering a server's elicitation on the terminal (`call`), or declining it.

When stdin is a terminal, the message is shown and each field of the requested schema asked in
turn on stderr (stdout stays the tool's result): strings as typed, numbers, integers, yes/no,
one choice of an enum (by number or value), several of a multi-select (comma-separated). Enter
takes the default, or leaves an optional field out; a required one is asked again. End of input
cancels. A URL-mode request shows the URL and asks whether to go on. Without a terminal every
request is declined, with one stderr line saying so. Rules: terminal I/O only, through the
streams given (tests pass their own); the server validates the answer.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

from mcp_agent_kit.cli_common import PROG
from mcp_agent_kit.client.inputs import Callback


class Cancelled(Exception):
    """End of input: the whole elicitation is cancelled."""


class Invalid(ValueError):
    """An answer that does not fit the field; the message says what would."""


def _boolean(text: str, schema: dict[str, Any]) -> bool:
    answers = {"y": True, "yes": True, "true": True, "1": True, "n": False, "no": False, "false": False, "0": False}
    if text.lower() not in answers:
        raise Invalid("answer y or n")
    return answers[text.lower()]


def _integer(text: str, schema: dict[str, Any]) -> int:
    try:
        return int(text)
    except ValueError:
        raise Invalid("give a whole number") from None


def _number(text: str, schema: dict[str, Any]) -> float | int:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid("give a number")
    return value


def _string(text: str, schema: dict[str, Any]) -> str:
    return text


def choices(schema: dict[str, Any]) -> list[tuple[Any, str]]:
    """(value, label) of each choice of an enum field (`enum`, or `oneOf`/`anyOf` of `const`s with titles)."""
    if isinstance(schema.get("enum"), list):
        names = schema.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(schema["enum"]) else schema["enum"]
        return [(value, str(label)) for value, label in zip(schema["enum"], labels, strict=True)]
    options = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(options, list):
        return [(item["const"], str(item.get("title", item["const"]))) for item in options
                if isinstance(item, dict) and "const" in item]
    return []


def _pick(text: str, options: list[tuple[Any, str]]) -> Any:
    for value, label in options:
        if text in (str(value), label):
            return value
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1][0]
    raise Invalid(f"give a number from 1 to {len(options)}, or one of the values")


def _items(schema: dict[str, Any]) -> dict[str, Any]:
    items = schema.get("items")
    return items if isinstance(items, dict) else {}


PARSERS: dict[str, Callable[[str, dict[str, Any]], Any]] = {
    "boolean": _boolean, "integer": _integer, "number": _number, "string": _string,
}


def parse_answer(text: str, schema: dict[str, Any]) -> Any:
    """The value one typed answer gives for a field (Invalid when it does not fit)."""
    options = choices(schema)
    if options:
        return _pick(text, options)
    if schema.get("type") == "array":
        multi = choices(_items(schema))
        return [_pick(part.strip(), multi) if multi else part.strip() for part in text.split(",") if part.strip()]
    parser: Callable[[str, dict[str, Any]], Any] = PARSERS.get(str(schema.get("type")), _string)
    return parser(text, schema)


def _hint(schema: dict[str, Any], required: bool) -> str:
    options = choices(schema) or choices(_items(schema))
    parts = [f"{n}) {label}" for n, (_, label) in enumerate(options, 1)]
    if schema.get("type") == "array":
        parts.append("comma-separated")
    elif not options:
        parts.append({"boolean": "y/n"}.get(str(schema.get("type")), str(schema.get("type", "text"))))
    if "default" in schema:
        parts.append(f"Enter for {json.dumps(schema['default'])}")
    elif not required:
        parts.append("Enter to skip")
    return ", ".join(parts)


class TerminalForm:
    """Asks the user on a terminal; one elicitation at a time."""

    def __init__(self, stdin: IO[str], out: IO[str]) -> None:
        self.stdin = stdin
        self.out = out
        self.lock = threading.Lock()

    def _ask(self, prompt: str) -> str:
        self.out.write(prompt)
        self.out.flush()
        line = self.stdin.readline()
        if not line:
            raise Cancelled
        return line.strip()

    def answer(self, params: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            try:
                return self._answer(params)
            except Cancelled:
                self.out.write("\n(cancelled)\n")
                return {"action": "cancel"}

    def _answer(self, params: dict[str, Any]) -> dict[str, Any]:
        self.out.write(f"\nThe server asks: {params.get('message', '')}\n")
        if params.get("mode") == "url":
            self.out.write(f"  open {params.get('url', '')}\n")
            go_on = self._ask("Go on? [y/N] ").lower() in ("y", "yes")
            return {"action": "accept" if go_on else "decline"}
        choice = self._ask("Answer? [Y]es, [n]o (decline), [c]ancel: ").lower()
        if choice in ("n", "no", "decline"):
            return {"action": "decline"}
        if choice in ("c", "cancel"):
            return {"action": "cancel"}
        found = params.get("requestedSchema")
        schema: dict[str, Any] = found if isinstance(found, dict) else {}
        listed = schema.get("properties")
        properties: dict[str, Any] = listed if isinstance(listed, dict) else {}
        required = set(schema.get("required") or [])
        content: dict[str, Any] = {}
        for name, field in properties.items():
            field = field if isinstance(field, dict) else {}
            value = self._field(name, field, name in required)
            if value is not None:
                content[name] = value
        return {"action": "accept", "content": content}

    def _field(self, name: str, schema: dict[str, Any], required: bool) -> Any:
        label = str(schema.get("title") or name) + ("*" if required else "")
        if schema.get("description"):
            self.out.write(f"  {schema['description']}\n")
        while True:
            text = self._ask(f"{label} ({_hint(schema, required)}): ")
            if not text:
                if "default" in schema:
                    return schema["default"]
                if not required:
                    return None
                self.out.write("  required: give a value (Ctrl-D cancels)\n")
                continue
            try:
                return parse_answer(text, schema)
            except Invalid as exc:
                self.out.write(f"  {exc}\n")


def decline(params: dict[str, Any]) -> dict[str, Any]:
    """Not on a terminal: decline, and say so on stderr."""
    message = " ".join(str(params.get("message", "")).split())[:200]
    print(f"{PROG}: the server asked for input ({message!r}); declined: stdin is not a terminal", file=sys.stderr)
    return {"action": "decline"}


def elicitation_answerer(stdin: IO[str] | None = None, out: IO[str] | None = None) -> Callback:
    """The elicitation callback for `call`: asked on the terminal when stdin is one, else declined."""
    stdin = stdin or sys.stdin
    if stdin is None or not stdin.isatty():
        return decline
    return TerminalForm(stdin, out or sys.stderr).answer
