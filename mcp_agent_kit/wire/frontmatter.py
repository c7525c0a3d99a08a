"""frontmatter: reads and writes the YAML subset that SKILL.md frontmatter uses.

It lives in wire/ because three layers read SKILL.md: packaging (validator, generator), core (the
entries the Skills extension serves) and client (hosts verifying what they fetch). Rules: standard
library only, imports nothing of ours; knows nothing about skill fields (that is
``packaging.skill_validate``).
The reader accepts what strictyaml (the parser behind skills-ref) accepts for skills: block
mappings, block sequences of scalars, plain / single-quoted / double-quoted / block (``|`` ``>``)
scalars and comments. Every scalar is a string, as in strictyaml without a schema. Flow style,
anchors, aliases, tags, reserved indicators, duplicate keys, plain values containing ``": "`` and
any ``---`` inside the frontmatter (skills-ref cuts the frontmatter at the first ``---`` it finds)
are reported as problems with their 1-based line number in the file. The reader recovers from
each problem and keeps going, so a caller can report them all. The writer emits only what
skills-ref reads back unchanged: JSON-style double-quoted scalars, block mappings, no ``---``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

Value: TypeAlias = "str | list[Value] | dict[str, Value]"

MARKER = "---"


@dataclass(frozen=True)
class Problem:
    """One reader finding: a 1-based file line, a rule id and a message."""

    line: int
    rule: str
    message: str


@dataclass
class Frontmatter:
    """The result of reading a SKILL.md text.

    ``data`` is None when there is no usable mapping. ``key_lines`` maps ``"name"`` or
    ``"metadata.author"`` to the line of that key. ``body_line`` is the first line of the body.
    """

    data: dict[str, Value] | None
    body: str
    body_line: int
    key_lines: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


# Reader problems: rule id -> message template.
MESSAGES: dict[str, str] = {
    "bom": "SKILL.md starts with a UTF-8 byte order mark; skills-ref rejects it",
    "no-frontmatter": "SKILL.md must start with YAML frontmatter (---) on its first line",
    "not-closed": "SKILL.md frontmatter not properly closed with a '---' line",
    "marker-in-value": "'---' inside the frontmatter: skills-ref cuts the frontmatter here; "
    "write it as \"-\\u002d-\" in a double-quoted value",
    "not-mapping": "SKILL.md frontmatter must be a YAML mapping of 'key: value' lines",
    "tab-indent": "tab used for indentation; YAML allows spaces only",
    "bad-indent": "unexpected indentation",
    "duplicate-key": "duplicate key '{key}' (first defined on line {first})",
    "flow-style": "flow style ({{...}} or [...]) is not allowed; use block style",
    "anchor": "anchors (&) and aliases (*) are not allowed",
    "tag": "tags (!) are not allowed",
    "reserved": "a value cannot start with '{char}'; quote it",
    "colon-in-plain": "plain value contains ': ' or ends with ':'; quote the value",
    "unterminated": "unterminated {kind}-quoted string",
    "after-quote": "unexpected text after the closing quote",
    "bad-escape": "invalid escape '\\{esc}' in double-quoted string",
    "bad-key": "expected 'key: value'",
    "seq-item": "only scalar items are supported in a sequence",
    "block-header": "invalid block scalar header '{header}'",
    "control-char": "non-printable or line-break character in the frontmatter; escape it "
    "in a double-quoted value",
}

_BLOCK_HEADER = re.compile(r"([|>])([+-]?)([1-9]?)([+-]?)\s*(?:#.*)?")
_DQ_ESCAPES: dict[str, str] = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
    "_": "\xa0", "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_REJECTED_STARTS: dict[str, str] = {
    "{": "flow-style", "[": "flow-style", "&": "anchor", "*": "anchor", "!": "tag",
    "@": "reserved", "`": "reserved", "%": "reserved", "?": "reserved",
}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _strip_comment(text: str) -> str:
    """Drop a trailing ' #comment' from plain text."""
    match = re.search(r"(^|\s)#", text)
    return (text[: match.start()] if match else text).rstrip()


class _YamlLines:
    """Recursive-descent reader over the frontmatter lines (file line = index + first)."""

    def __init__(self, lines: list[str], first: int) -> None:
        self.lines = lines
        self.first = first
        self.pos = 0
        self.problems: list[Problem] = []
        self.key_lines: dict[str, int] = {}

    def report(self, index: int, rule: str, **fmt: object) -> None:
        self.problems.append(Problem(index + self.first, rule, MESSAGES[rule].format(**fmt)))

    def skip_blank(self) -> None:
        while self.pos < len(self.lines) and _is_blank(self.lines[self.pos]):
            self.pos += 1

    def next_content(self) -> int | None:
        index = self.pos
        while index < len(self.lines) and _is_blank(self.lines[index]):
            index += 1
        return index if index < len(self.lines) else None

    # -- structures ------------------------------------------------------------------------
    def mapping(self, indent: int, prefix: str) -> dict[str, Value]:
        result: dict[str, Value] = {}
        first_seen: dict[str, int] = {}
        while True:
            self.skip_blank()
            if self.pos >= len(self.lines):
                return result
            index, line = self.pos, self.lines[self.pos]
            column = _indent(line)
            if column < indent:
                return result
            if column > indent:
                self.report(index, "bad-indent")
                self.pos += 1
                continue
            parsed = self.key(line[column:], index)
            if parsed is None:
                self.pos += 1
                continue
            key, rest = parsed
            self.pos += 1
            value = self.value(rest, index, indent, f"{prefix}{key}.")
            if key in first_seen:
                self.report(index, "duplicate-key", key=key, first=first_seen[key] + self.first)
                continue
            first_seen[key] = index
            self.key_lines[prefix + key] = index + self.first
            result[key] = value

    def key(self, text: str, index: int) -> tuple[str, str] | None:
        if text[:1] in ("'", '"'):
            value, end, closed = self.quoted_inline(text, index)
            rest = text[end:]
            if closed and (rest.startswith(": ") or rest.rstrip() == ":"):
                return value, rest[1:].strip()
            self.report(index, "bad-key")
            return None
        match = re.match(r"(.*?):(?:\s+|$)(.*)", text)
        if match is None or not match.group(1).strip():
            self.report(index, "bad-key")
            return None
        key = match.group(1).rstrip()
        if key[:1] in _REJECTED_STARTS or key.startswith("- ") or key == "-":
            self.report(index, "bad-key")
            return None
        return key, match.group(2)

    def sequence(self, indent: int) -> list[Value]:
        items: list[Value] = []
        while True:
            self.skip_blank()
            if self.pos >= len(self.lines):
                return items
            index, line = self.pos, self.lines[self.pos]
            body = line[indent:]
            if _indent(line) != indent or not (body == "-" or body.startswith("- ")):
                return items
            self.pos += 1
            rest = body[1:].strip()
            if re.match(r"[^'\"].*?:(\s|$)", rest) or rest.startswith("- "):
                self.report(index, "seq-item")
                continue
            items.append(self.scalar(rest, index, indent + 1))

    # -- values ----------------------------------------------------------------------------
    def value(self, rest: str, index: int, indent: int, prefix: str) -> Value:
        rest = rest.strip()
        if not rest or rest.startswith("#"):
            nxt = self.next_content()
            if nxt is None:
                return ""
            line = self.lines[nxt]
            column = _indent(line)
            is_item = line[column:] == "-" or line[column:].startswith("- ")
            if column > indent and is_item:
                self.pos = nxt
                return self.sequence(column)
            if column == indent and is_item:
                self.pos = nxt
                return self.sequence(column)
            if column > indent:
                self.pos = nxt
                return self.mapping(column, prefix)
            return ""
        return self.scalar(rest, index, indent)

    def scalar(self, rest: str, index: int, indent: int) -> str:
        lead = rest[0]
        if lead in ('"', "'"):
            return self.quoted(rest, index)
        if lead in "|>":
            return self.block(rest, index, indent)
        if lead in _REJECTED_STARTS:
            rule = _REJECTED_STARTS[lead]
            self.report(index, rule, char=lead)
            return self.plain(rest, index, indent, check=False)
        if rest == "-" or rest.startswith("- "):
            self.report(index, "reserved", char="-")
        return self.plain(rest, index, indent, check=True)

    def plain(self, rest: str, index: int, indent: int, *, check: bool) -> str:
        parts = [_strip_comment(rest)]
        blanks = 0
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if not line.strip():
                blanks += 1
                self.pos += 1
                continue
            if _indent(line) <= indent or line.strip().startswith("#"):
                break
            parts.append("\n" * blanks if blanks else " ")
            parts.append(_strip_comment(line.strip()))
            blanks = 0
            self.pos += 1
        text = "".join(parts)
        if check and (re.search(r":(\s|$)", text) or text.startswith(": ")):
            self.report(index, "colon-in-plain")
        return text

    def block(self, rest: str, index: int, indent: int) -> str:
        header = _BLOCK_HEADER.fullmatch(rest)
        if header is None or (header.group(2) and header.group(4)):
            self.report(index, "block-header", header=rest)
            return ""
        style, chomp, digit = header.group(1), header.group(2) or header.group(4), header.group(3)
        raw: list[str] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.strip() and _indent(line) <= indent:
                break
            raw.append(line)
            self.pos += 1
        content_indent = indent + int(digit) if digit else min(
            (_indent(line) for line in raw if line.strip()), default=indent + 1
        )
        lines = [line[content_indent:] if line.strip() else "" for line in raw]
        while lines and not lines[-1]:
            lines.pop()
        trailing = len(raw) - len(lines)
        text = _fold(lines) if style == ">" else "\n".join(lines)
        if chomp == "-" or not lines:
            return text
        return text + "\n" + ("\n" * trailing if chomp == "+" else "")

    def quoted(self, rest: str, index: int) -> str:
        """A quoted scalar that may continue over following lines."""
        text = rest
        start = self.pos
        while True:
            value, end, closed = self.quoted_inline(text, index, final=False)
            if closed or self.pos >= len(self.lines):
                break
            text += "\n" + self.lines[self.pos]
            self.pos += 1
        if not closed:
            self.pos = start
            self.report(index, "unterminated", kind="double" if rest[0] == '"' else "single")
            return rest[1:]
        value, end, closed = self.quoted_inline(text, index)
        after = text[end:].strip()
        if after and not after.startswith("#"):
            self.report(index, "after-quote")
        return value

    def quoted_inline(self, text: str, index: int, *, final: bool = True) -> tuple[str, int, bool]:
        """Decode a quoted scalar at the start of ``text``: (value, end offset, closed)."""
        quote = text[0]
        out: list[str] = []
        i = 1
        while i < len(text):
            char = text[i]
            if char == quote:
                if quote == "'" and text[i + 1 : i + 2] == "'":
                    out.append("'")
                    i += 2
                    continue
                return "".join(out), i + 1, True
            if char == "\\" and quote == '"':
                i = self.escape(text, i, out, index, final)
                continue
            if char == "\n":
                i = _fold_break(text, i, out)
                continue
            out.append(char)
            i += 1
        return "".join(out), i, False

    def escape(self, text: str, i: int, out: list[str], index: int, final: bool) -> int:
        code = text[i + 1 : i + 2]
        if code == "\n":
            j = i + 2
            while j < len(text) and text[j] in " \t":
                j += 1
            return j
        if code in _DQ_ESCAPES:
            out.append(_DQ_ESCAPES[code])
            return i + 2
        width = _HEX_ESCAPES.get(code)
        digits = text[i + 2 : i + 2 + width] if width else ""
        if width and re.fullmatch(r"[0-9a-fA-F]+", digits) and len(digits) == width:
            out.append(chr(min(int(digits, 16), 0x10FFFF)))
            return i + 2 + width
        if final:
            self.report(index, "bad-escape", esc=code)
        out.append(code)
        return i + 2


def _fold_break(text: str, i: int, out: list[str]) -> int:
    """Fold a line break inside a quoted scalar: one break -> space, n empty lines -> n LF."""
    while out and out[-1] in (" ", "\t"):
        out.pop()
    breaks = 0
    j = i
    while j < len(text) and text[j] in " \t\n":
        if text[j] == "\n":
            breaks += 1
        j += 1
    out.append("\n" * (breaks - 1) if breaks > 1 else " ")
    return j


def _fold(lines: list[str]) -> str:
    """Folded block scalar (``>``): join lines with spaces, keep empty lines as breaks."""
    out: list[str] = []
    breaks = 0
    previous: str | None = None
    for line in lines:
        if not line:
            breaks += 1
            continue
        if previous is None:
            out.append("\n" * breaks)
        else:
            keep = line.startswith(" ") or previous.startswith(" ")
            out.append("\n" * (breaks + keep) if breaks or keep else " ")
        out.append(line)
        previous, breaks = line, 0
    return "".join(out)


def read(text: str) -> Frontmatter:
    """Split a SKILL.md text into frontmatter data and body, collecting every problem."""
    text = text.replace("\r\n", "\n")
    problems: list[Problem] = []
    if text.startswith("\ufeff"):
        problems.append(Problem(1, "bom", MESSAGES["bom"]))
        text = text[1:]
    lines = text.split("\n")
    if lines[0].rstrip() != MARKER:
        problems.append(Problem(1, "no-frontmatter", MESSAGES["no-frontmatter"]))
        return Frontmatter(None, text, 1, problems=problems)
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() == MARKER), None)
    if closing is None:
        problems.append(Problem(len(lines), "not-closed", MESSAGES["not-closed"]))
        return Frontmatter(None, "", len(lines), problems=problems)
    fm_lines = lines[1:closing]
    for number, line in enumerate(fm_lines, start=2):
        if MARKER in line:
            problems.append(Problem(number, "marker-in-value", MESSAGES["marker-in-value"]))
        if re.match(r" *\t", line) and line.strip():
            problems.append(Problem(number, "tab-indent", MESSAGES["tab-indent"]))
        if any(char != "\t" and not _printable(ord(char)) for char in line):
            problems.append(Problem(number, "control-char", MESSAGES["control-char"]))
    body = "\n".join(lines[closing + 1 :])
    reader = _YamlLines(fm_lines, 2)
    first = reader.next_content()
    data: dict[str, Value] | None = None
    if first is None or reader.key(reader.lines[first].lstrip(" "), first) is None:
        reader.problems = [p for p in reader.problems if p.rule != "bad-key"]
        line_no = (first + 2) if first is not None else 2
        problems.append(Problem(line_no, "not-mapping", MESSAGES["not-mapping"]))
    else:
        data = reader.mapping(_indent(reader.lines[first]), "")
        reader.skip_blank()
        if reader.pos < len(reader.lines):
            reader.report(reader.pos, "bad-indent")
    problems.extend(reader.problems)
    problems.sort(key=lambda p: p.line)
    return Frontmatter(data, body, closing + 2, reader.key_lines, problems)


# -- writer ---------------------------------------------------------------------------------
_WRITE_ESCAPES: dict[str, str] = {
    "\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0",
    "\x85": "\\N", "\u2028": "\\L", "\u2029": "\\P",
}
_SAFE_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _printable(code: int) -> bool:
    return (
        0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
        or code >= 0x10000
    )


def quote(value: str) -> str:
    """A double-quoted YAML scalar that strictyaml and this reader decode back to ``value``.

    Non-printable characters are escaped, and every third dash in a run of dashes is written
    as ``\\u002d`` so the text never contains ``---``.
    """
    out: list[str] = ['"']
    dashes = 0
    for char in value:
        if char == "-":
            dashes += 1
            if dashes == 3:
                out.append("\\u002d")
                dashes = 0
                continue
            out.append(char)
            continue
        dashes = 0
        code = ord(char)
        if char in _WRITE_ESCAPES:
            out.append(_WRITE_ESCAPES[char])
        elif _printable(code):
            out.append(char)
        else:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _key(key: str) -> str:
    return key if _SAFE_KEY.fullmatch(key) and MARKER not in key else quote(key)


def dump(fields: Mapping[str, str | Mapping[str, str]]) -> str:
    """Frontmatter text, ``---`` lines included, for string fields and flat string maps."""
    lines = [MARKER]
    for key, value in fields.items():
        if isinstance(value, str):
            lines.append(f"{_key(key)}: {quote(value)}")
            continue
        lines.append(f"{_key(key)}:")
        lines.extend(f"  {_key(sub)}: {quote(text)}" for sub, text in value.items())
    lines.append(MARKER)
    return "\n".join(lines) + "\n"


def render(fields: Mapping[str, str | Mapping[str, str]], body: str) -> str:
    """A whole SKILL.md text: frontmatter, then the body."""
    return dump(fields) + body
