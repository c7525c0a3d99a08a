"""The skill generator: its output passes skills-ref (API and CLI) and round-trips our reader."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_agent_kit.packaging.fsutil import TargetExistsError
from mcp_agent_kit.packaging.skill_generate import (
    GenerateError,
    generate_skill,
    render_skill,
    skeleton_skill,
    skill_name,
    write_skill,
)
from mcp_agent_kit.packaging.skill_validate import validate_skill
from mcp_agent_kit.wire import frontmatter

WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "title": "Weather",
    "description": "Use when the user asks about weather. Do not use for climate history.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "default": 3},
        },
        "required": ["city"],
    },
    "outputSchema": {"type": "object", "properties": {"temp": {"type": "number"}}},
    "annotations": {"readOnlyHint": True, "openWorldHint": True},
}
LONG: dict[str, Any] = {"name": "bulk.export", "description": "line\n" * 80, "inputSchema": {}}
DESC = "Use when checking the weather. Do not use for climate research."


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("my_agent", "my-agent"),
        ("My Agent!", "my-agent"),
        ("__x__y__", "x-y"),
        ("Café", "cafe"),
        ("a" * 70, "a" * 64),
        ("ab-" + "c" * 61 + "-d", "ab-" + "c" * 61),
    ],
)
def test_skill_name(raw: str, expected: str) -> None:
    assert skill_name(raw) == expected


def test_skill_name_rejects_empty() -> None:
    with pytest.raises(GenerateError):
        skill_name("技能")


def test_generated_skill_passes_everything(
    tmp_path: Path, oracle: Callable[[Path], list[str]]
) -> None:
    root = generate_skill(
        [WEATHER, LONG], tmp_path, name="my_agent", description=DESC, version="1.2.0"
    )
    assert root == tmp_path / "my-agent"
    assert oracle(root) == []
    report = validate_skill(root, strict=True)
    assert report.findings == [], [str(f) for f in report.findings]
    text = (root / "SKILL.md").read_text(encoding="utf-8")
    for needle in (
        "`get_weather`",
        "**Use when:** the user asks about weather",
        "**Do not use for:** climate history",
        "`city` (string, required): City name",
        '{"name": "get_weather", "arguments": {"city": "text"}}',
        "read-only",
        "references/bulk-export.md",
    ):
        assert needle in text
    assert (root / "references" / "bulk-export.md").is_file()
    doc = frontmatter.read(text)
    assert doc.data == {
        "name": "my-agent",
        "description": DESC,
        "metadata": {"version": "1.2.0", "generated-by": "mcp-agent-kit"},
    }


def test_skills_ref_cli_accepts_generated(tmp_path: Path) -> None:
    root = generate_skill([WEATHER], tmp_path, name="weather", description=DESC, version="1")
    done = subprocess.run(
        [sys.executable, "-m", "skills_ref.cli", "validate", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Valid skill: {root}"


def test_generator_refuses_existing_target(tmp_path: Path) -> None:
    files = render_skill([WEATHER], name="w", description=DESC, version="1")
    write_skill(files, tmp_path)
    (tmp_path / "w" / "notes.txt").write_text("mine")
    with pytest.raises(TargetExistsError):
        write_skill(files, tmp_path)
    assert (tmp_path / "w" / "notes.txt").exists()
    write_skill(files, tmp_path, force=True)
    assert not (tmp_path / "w" / "notes.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["w"]


@pytest.mark.parametrize(
    "kwargs",
    [{"description": ""}, {"description": "x" * 1025}, {"description": "Use <b>"}, {"name": "___"}],
)
def test_generator_rejects_bad_input(kwargs: dict[str, str]) -> None:
    args = {"name": "n", "description": DESC, "version": "1"} | kwargs
    with pytest.raises(GenerateError):
        render_skill([WEATHER], **args)


@pytest.mark.parametrize("tools", [[{"description": "no name"}], ["text"], [{"name": " "}]])
def test_generator_rejects_bad_tools(tools: list[Any]) -> None:
    with pytest.raises(GenerateError):
        render_skill(tools, name="n", description=DESC, version="1")


def test_skeleton(tmp_path: Path, oracle: Callable[[Path], list[str]]) -> None:
    root = write_skill(skeleton_skill("My_Tool", DESC), tmp_path)
    assert root.name == "my-tool"
    assert oracle(root) == []
    assert validate_skill(root, strict=True).valid


NASTY = st.sampled_from(
    [
        ":",
        ": ",
        " #",
        "#",
        '"',
        "'",
        "---",
        "-",
        "\n",
        "\\",
        "`",
        "{",
        "[",
        "&",
        "*",
        "!",
        "%",
        "@",
        "|",
        ">-",
        "\t",
        "\u2028",
        "\x85",
        "é",
        "😀",
    ]
)
TEXT = st.lists(
    st.one_of(NASTY, st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)), max_size=12
).map("".join)
TOOL = st.fixed_dictionaries(
    {"name": TEXT.filter(lambda s: s.strip() != ""), "description": TEXT},
    optional={"title": TEXT},
).map(
    lambda tool: (
        tool
        | {
            "inputSchema": {
                "type": "object",
                "properties": {
                    tool["name"]: {"type": "string", "description": tool["description"]}
                },
            }
        }
    )
)
DESCRIPTION = TEXT.filter(lambda s: s.strip() != "" and "<" not in s and ">" not in s)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tools=st.lists(TOOL, max_size=4), name=TEXT, description=DESCRIPTION, version=TEXT)
def test_property_generated_skills_round_trip_and_pass_skills_ref(
    tmp_path: Path,
    oracle: Callable[[Path], list[str]],
    oracle_module: ModuleType,
    tools: list[dict[str, Any]],
    name: str,
    description: str,
    version: str,
) -> None:
    try:
        expected_name = skill_name(name)
    except GenerateError:
        expected_name = None
    if expected_name is None:
        with pytest.raises(GenerateError):
            render_skill(tools, name=name, description=description, version=version)
        return
    files = render_skill(tools, name=name, description=description, version=version)
    doc = frontmatter.read(files["SKILL.md"])
    assert doc.problems == []
    assert doc.data == {
        "name": expected_name,
        "description": description,
        "metadata": {"version": version, "generated-by": "mcp-agent-kit"},
    }
    out = tmp_path / f"run-{abs(hash((name, description, version)))}"
    root = write_skill(files, out, force=True)
    assert oracle(root) == []
    props = oracle_module.read_properties(root)
    assert (props.name, props.description) == (expected_name, description.strip())
    assert props.metadata == {"version": version, "generated-by": "mcp-agent-kit"}
    assert validate_skill(root).valid
