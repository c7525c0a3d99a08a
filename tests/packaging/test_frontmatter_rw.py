"""The SKILL.md frontmatter reader and writer, checked against strictyaml where it matters."""

from __future__ import annotations

import pytest
import strictyaml

from mcp_agent_kit.wire import frontmatter as fm

PARSE_CASES: list[tuple[str, str, dict[str, fm.Value]]] = [
    ("plain", "name: a\ndescription: b c\n", {"name": "a", "description": "b c"}),
    ("empty-value", "a:\nb: x\n", {"a": "", "b": "x"}),
    ("quoted-key", '"a b": x\n', {"a b": "x"}),
    ("escapes", 'a: "x-\\u002d-y \\U0001F600 \\x41 \\/ \\e"\n', {"a": "x---y 😀 A / \x1b"}),
    ("seq-same-indent", "a:\n- x\n- y\n", {"a": ["x", "y"]}),
    ("seq-indented", "a:\n  - x\n  - 'y'\n", {"a": ["x", "y"]}),
    ("multiline-plain", "a: foo\n  bar\n\n  baz\n", {"a": "foo bar\nbaz"}),
    ("literal", "a: |\n  x\n  y\n", {"a": "x\ny\n"}),
    ("folded-strip", "b: >-\n  p\n  q\n\n  r\n", {"b": "p q\nr"}),
    ("literal-keep", "a: |+\n  x\n\nb: y\n", {"a": "x\n\n", "b": "y"}),
    ("comments", "# c\na: x #c\nb: x#c\n", {"a": "x", "b": "x#c"}),
    ("single-quote", "a: 'it''s: ok'\n", {"a": "it's: ok"}),
    ("nested", "m:\n  k: v\n  n:\n    x: y\n", {"m": {"k": "v", "n": {"x": "y"}}}),
    ("dq-multiline", 'a: "foo\n  bar\n\n  baz"\n', {"a": "foo bar\nbaz"}),
    (
        "null-is-text",
        "a: null\nb: ~\nc: 12\nd: yes\n",
        {"a": "null", "b": "~", "c": "12", "d": "yes"},
    ),
    ("crlf", "a: x\r\nb: y\r\n", {"a": "x", "b": "y"}),
]


@pytest.mark.parametrize(
    ("label", "text", "expected"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES]
)
def test_reader_agrees_with_strictyaml(
    label: str, text: str, expected: dict[str, fm.Value]
) -> None:
    doc = fm.read("---\n" + text + "---\nbody\n")
    assert doc.problems == []
    assert doc.data == expected
    assert strictyaml.load(text.replace("\r\n", "\n")).data == expected
    assert doc.body == "body\n"


# (label, frontmatter text, rule, file line)
PROBLEM_CASES: list[tuple[str, str, str, int]] = [
    ("flow-map", "name: a\nmetadata: {a: b}\n", "flow-style", 3),
    ("flow-seq", "name: a\n\nallowed-tools: [Read]\n", "flow-style", 4),
    ("anchor", "name: a\ndescription: &d text\n", "anchor", 3),
    ("alias", "name: a\nmetadata:\n  x: v\n  y: *x\n", "anchor", 5),
    ("tag", "description: !!str text\n", "tag", 2),
    ("duplicate", "name: a\ndescription: b\nname: c\n", "duplicate-key", 4),
    ("duplicate-nested", "metadata:\n  k: a\n  k: b\n", "duplicate-key", 4),
    ("marker-quoted", 'name: a\ndescription: "foo --- bar"\n', "marker-in-value", 3),
    ("marker-plain", "description: a---b\n", "marker-in-value", 2),
    ("colon-plain", "description: Use when: x\n", "colon-in-plain", 2),
    ("colon-end", "description: foo:\n", "colon-in-plain", 2),
    ("reserved-at", "description: @x\n", "reserved", 2),
    ("reserved-backtick", "description: `x`\n", "reserved", 2),
    ("dash-value", "description: - x\n", "reserved", 2),
    ("tab", "metadata:\n\tk: v\n", "tab-indent", 3),
    ("unterminated", 'description: "abc\n', "unterminated", 2),
    ("after-quote", 'description: "abc" def\n', "after-quote", 2),
    ("bad-escape", 'description: "a\\qb"\n', "bad-escape", 2),
    ("not-mapping", "just text\n", "not-mapping", 2),
    ("empty", "", "not-mapping", 2),
    ("control", 'description: "a\x80b"\n', "control-char", 2),
]


@pytest.mark.parametrize(
    ("label", "text", "rule", "line"), PROBLEM_CASES, ids=[c[0] for c in PROBLEM_CASES]
)
def test_problems_carry_line_numbers(label: str, text: str, rule: str, line: int) -> None:
    doc = fm.read("---\n" + text + "---\nbody\n")
    assert (line, rule) in [(p.line, p.rule) for p in doc.problems], doc.problems


def test_reader_collects_several_problems() -> None:
    doc = fm.read("---\nname: a\nname: b\nmetadata: {x: y}\ndescription: &a z\n---\n")
    assert [(p.line, p.rule) for p in doc.problems] == [
        (3, "duplicate-key"),
        (4, "flow-style"),
        (5, "anchor"),
    ]
    assert doc.data is not None and doc.data["name"] == "a"


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("\ufeff---\na: b\n---\n", "bom"),
        ("\n---\na: b\n---\n", "no-frontmatter"),
        ("# title\n", "no-frontmatter"),
        ("---\na: b\n", "not-closed"),
    ],
)
def test_document_level_problems(text: str, rule: str) -> None:
    assert rule in [p.rule for p in fm.read(text).problems]


def test_body_and_key_lines() -> None:
    doc = fm.read("---\nname: a\nmetadata:\n  k: v\n---\n# Title\n---\ntext\n")
    assert doc.body == "# Title\n---\ntext\n"
    assert doc.body_line == 6
    assert doc.key_lines == {"name": 2, "metadata": 3, "metadata.k": 4}


TRICKY = [
    "-----x---",
    "a: b # c",
    "\x85\u2028\x80\ufeff\x00\x1f",
    "'\"\\",
    "- x",
    "{a}",
    "[b]",
    "yes",
    "😀 \U000e0001",
    "x\n\ny  ",
    " lead",
    "tab\there",
    "\\u002d",
    "&a *b !c @d `e` %f",
    "",
]


@pytest.mark.parametrize("value", TRICKY)
def test_writer_round_trips_through_both_readers(value: str) -> None:
    text = fm.dump(
        {"name": "x", "description": value, "metadata": {"k-1": value, "odd key": value}}
    )
    inner = text[len("---\n") : -len("---\n")]
    assert "---" not in inner
    loaded = strictyaml.load(inner).data
    doc = fm.read(text + "body")
    assert doc.problems == []
    assert doc.data == loaded
    assert loaded["description"] == value
    assert loaded["metadata"] == {"k-1": value, "odd key": value}
