"""The pure parts of the developer loop: NAME=VALUE arguments, the terminal form, the listing's text."""

from __future__ import annotations

import io
from typing import Any

import pytest

from mcp_agent_kit.cli_common import CliError
from mcp_agent_kit.devtools.arguments import arguments, parse_args_json, split_pairs, value_of
from mcp_agent_kit.devtools.listing import render, type_of
from mcp_agent_kit.devtools.terminal import Invalid, TerminalForm, decline, elicitation_answerer, parse_answer


# ---- arguments -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "schema", "value"), [
    ("3", None, 3),
    ("2.5", None, 2.5),
    ("[1, 2]", None, [1, 2]),
    ('{"a": 1}', None, {"a": 1}),
    ("true", None, True),
    ("null", None, None),
    ("Paris", None, "Paris"),
    ("", None, ""),
    ('"quoted"', None, "quoted"),
    ("02134", {"type": "string"}, "02134"),
    ("42", {"type": "string"}, "42"),
    ("true", {"enum": ["true", "false"]}, "true"),
    ("42", {"type": ["string", "integer"]}, 42),
    ("42", {"type": "number"}, 42),
    ('"x"', {"type": "string"}, "x"),
])
def test_a_value_is_json_when_it_parses_else_the_text(text: str, schema: Any, value: Any) -> None:
    assert value_of(text, schema) == value and type(value_of(text, schema)) is type(value)


def test_pairs_are_laid_over_args() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}}
    got = arguments(split_pairs(["city=01", "n=3", "eq=a=b"]), parse_args_json('{"n": 1, "keep": true}'), schema)
    assert got == {"n": 3, "keep": True, "city": "01", "eq": "a=b"}


@pytest.mark.parametrize("word", ["plain", "=value"])
def test_a_word_without_a_name_is_a_usage_error(word: str) -> None:
    with pytest.raises(CliError) as info:
        split_pairs([word])
    assert info.value.code == 2 and "NAME=VALUE" in info.value.problem


# ---- the terminal form -----------------------------------------------------------------------------------
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "description": "As on your badge."},
        "age": {"type": "integer"},
        "height": {"type": "number", "default": 1.7},
        "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "ok"],
}


def ask(answers: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    out = io.StringIO()
    result = TerminalForm(io.StringIO(answers), out).answer(params or {"message": "Hi?", "requestedSchema": SCHEMA})
    return result, out.getvalue()


def test_a_form_is_asked_field_by_field() -> None:
    result, shown = ask("\n\nAda\n\n\nGreen\n1, c\nmaybe\nyes\n")
    assert result == {"action": "accept", "content": {"name": "Ada", "height": 1.7, "color": "g", "tags": ["a", "c"],
                                                      "ok": True}}
    assert "The server asks: Hi?" in shown and "As on your badge." in shown
    assert "Your name* (string): " in shown and "required: give a value" in shown
    assert "1) Red, 2) Green, Enter to skip" in shown and "answer y or n" in shown


@pytest.mark.parametrize(("answers", "action"), [("n\n", "decline"), ("c\n", "cancel"), ("", "cancel"),
                                                 ("y\nAda\n", "cancel")])
def test_decline_cancel_and_end_of_input(answers: str, action: str) -> None:
    assert ask(answers)[0] == {"action": action}


def test_url_mode_shows_the_url_and_asks_to_go_on() -> None:
    params = {"mode": "url", "message": "Log in", "url": "https://example.com/login", "elicitationId": "e1"}
    result, shown = ask("y\n", params)
    assert result == {"action": "accept"} and "open https://example.com/login" in shown
    assert ask("\n", params)[0] == {"action": "decline"}


@pytest.mark.parametrize(("text", "schema", "value"), [
    ("2", {"enum": ["x", "y"]}, "y"),
    ("x", {"enum": ["x", "y"]}, "x"),
    ("3", {"type": "number"}, 3),
    ("-1.5", {"type": "number"}, -1.5),
    ("no", {"type": "boolean"}, False),
    ("a b", {"type": "string"}, "a b"),
    ("p, q", {"type": "array", "items": {"type": "string"}}, ["p", "q"]),
])
def test_parse_answer(text: str, schema: dict[str, Any], value: Any) -> None:
    assert parse_answer(text, schema) == value


@pytest.mark.parametrize(("text", "schema"), [("3", {"enum": ["x", "y"]}), ("1.5", {"type": "integer"}),
                                              ("true", {"type": "number"}), ("d", {"type": "array",
                                                                                  "items": {"enum": ["a"]}})])
def test_a_wrong_answer_is_invalid(text: str, schema: dict[str, Any]) -> None:
    with pytest.raises(Invalid):
        parse_answer(text, schema)


def test_without_a_terminal_every_request_is_declined(capsys: pytest.CaptureFixture[str]) -> None:
    assert elicitation_answerer(io.StringIO("y\n")) is decline
    assert decline({"message": "Who\nare you?"}) == {"action": "decline"}
    assert capsys.readouterr().err == ("mcp-agent-kit: the server asked for input ('Who are you?'); declined: "
                                       "stdin is not a terminal\n")


# ---- the listing ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("schema", "text"), [
    ({"type": "string"}, "string"),
    ({"type": "array", "items": {"type": "integer"}}, "array of integer"),
    ({"type": ["string", "null"]}, "string | null"),
    ({"anyOf": [{"type": "string"}, {"const": 3}]}, "string | 3"),
    ({"enum": ["a", 1]}, 'one of "a", 1'),
    ({}, "any"),
    (None, "any"),
])
def test_type_of(schema: Any, text: str) -> None:
    assert type_of(schema) == text


def test_render_leaves_out_empty_lists_but_never_the_tools() -> None:
    text = render({"tools": [], "resources": [], "resourceTemplates": [{"uriTemplate": "memo://{name}",
                                                                        "name": "memo"}], "prompts": []})
    assert text.splitlines() == ["tools (0):", "  (none)", "resource templates (1):", "  memo://{name} (memo)"]
    tool = {"name": "t", "description": "Does\n  things.", "inputSchema": {"type": "object"},
            "annotations": {"destructiveHint": True}}
    assert render({"tools": [tool]}).splitlines() == ["tools (1):", "  t [destructive] — Does things.",
                                                     "    (no parameters)"]
