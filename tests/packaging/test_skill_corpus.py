"""Hand-made bad skills: ours rejects each with the right rule; skills-ref's verdict is pinned.

``sr_accepts`` marks the cases skills-ref 0.1.1 lets through although the spec forbids them;
those are the reason our validator exists.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_agent_kit.packaging.skill_validate import validate_skill

DESC = "description: Use when testing. Do not use for production.\n"


def fm(body: str, rest: str = "Body text.\n") -> str:
    return "---\n" + body + "---\n" + rest


@dataclass(frozen=True)
class Bad:
    label: str
    dir_name: str
    text: str | bytes
    rule: str
    fragment: str
    sr_accepts: bool = False
    line: int | None = None
    skill_md: str = "SKILL.md"


BAD: list[Bad] = [
    Bad("no-frontmatter", "s", "# Title\n", "frontmatter-no-frontmatter", "must start", line=1),
    Bad(
        "bom",
        "s",
        b"\xef\xbb\xbf" + fm("name: s\n" + DESC).encode(),
        "frontmatter-bom",
        "byte order",
    ),
    Bad(
        "leading-blank",
        "s",
        "\n" + fm("name: s\n" + DESC),
        "frontmatter-no-frontmatter",
        "must start",
    ),
    Bad(
        "not-closed", "s", "---\nname: s\n" + DESC, "frontmatter-not-closed", "not properly closed"
    ),
    Bad(
        "marker-quoted",
        "s",
        fm('name: s\ndescription: "a --- b"\n'),
        "frontmatter-marker-in-value",
        "cuts the frontmatter",
        line=3,
    ),
    Bad(
        "marker-plain-truncated",
        "s",
        fm("name: s\ndescription: Use when a---b happens\n"),
        "frontmatter-marker-in-value",
        "cuts the frontmatter",
        sr_accepts=True,
        line=3,
    ),
    Bad(
        "flow-map",
        "s",
        fm("name: s\n" + DESC + "metadata: {a: b}\n"),
        "frontmatter-flow-style",
        "flow style",
        line=4,
    ),
    Bad(
        "flow-seq",
        "s",
        fm("name: s\n" + DESC + "allowed-tools: [Read]\n"),
        "frontmatter-flow-style",
        "flow style",
        line=4,
    ),
    Bad(
        "anchor",
        "s",
        fm("name: s\ndescription: &d Use it\n"),
        "frontmatter-anchor",
        "anchors",
        line=3,
    ),
    Bad(
        "alias",
        "s",
        fm("name: s\n" + DESC + "metadata:\n  a: &x v\n  b: *x\n"),
        "frontmatter-anchor",
        "aliases",
    ),
    Bad("tag", "s", fm("name: s\ndescription: !!str Use it\n"), "frontmatter-tag", "tags", line=3),
    Bad(
        "duplicate",
        "s",
        fm("name: s\n" + DESC + "name: s\n"),
        "frontmatter-duplicate-key",
        "duplicate key 'name' (first defined on line 2)",
        line=4,
    ),
    Bad(
        "colon-plain",
        "s",
        fm("name: s\ndescription: Use when: x\n"),
        "frontmatter-colon-in-plain",
        "quote the value",
        line=3,
    ),
    Bad("reserved", "s", fm("name: s\ndescription: @mention\n"), "frontmatter-reserved", "'@'"),
    Bad("empty-frontmatter", "s", fm(""), "frontmatter-not-mapping", "must be a YAML mapping"),
    Bad("scalar-frontmatter", "s", fm("just words\n"), "frontmatter-not-mapping", "mapping"),
    Bad(
        "unknown-field",
        "s",
        fm("name: s\n" + DESC + "version: 1\n"),
        "unknown-field",
        "'version'",
        line=4,
    ),
    Bad(
        "claude-only-field",
        "s",
        fm("name: s\n" + DESC + "model: opus\n"),
        "unknown-field",
        "'model'",
    ),
    Bad("missing-name", "s", fm(DESC), "field-missing", "name"),
    Bad("missing-description", "s", fm("name: s\n"), "field-missing", "description"),
    Bad(
        "uppercase",
        "My-Skill",
        fm("name: My-Skill\n" + DESC),
        "name-uppercase",
        "lowercase",
        line=2,
    ),
    Bad("leading-hyphen", "-abc", fm("name: -abc\n" + DESC), "name-hyphen-edge", "hyphen"),
    Bad("double-hyphen", "a--b", fm("name: a--b\n" + DESC), "name-double-hyphen", "consecutive"),
    Bad("too-long", "a" * 65, fm("name: " + "a" * 65 + "\n" + DESC), "name-too-long", "65 chars"),
    Bad(
        "underscore", "my_agent", fm("name: my_agent\n" + DESC), "name-chars", "invalid characters"
    ),
    Bad("cjk-name", "技能", fm("name: 技能\n" + DESC), "name-chars", "ASCII", sr_accepts=True),
    Bad(
        "cyrillic-name",
        "мой-навык",
        fm("name: мой-навык\n" + DESC),
        "name-chars",
        "ASCII",
        sr_accepts=True,
    ),
    Bad("ligature-name", "ﬁle", fm("name: ﬁle\n" + DESC), "name-chars", "ASCII", sr_accepts=True),
    Bad("dir-mismatch", "beta", fm("name: alpha\n" + DESC), "name-dir-mismatch", "'beta'"),
    Bad(
        "dir-mismatch-nfkc",
        "ﬁle",
        fm("name: file\n" + DESC),
        "name-dir-mismatch",
        "'ﬁle'",
        sr_accepts=True,
    ),
    Bad(
        "name-whitespace",
        "abc",
        fm('name: " abc"\n' + DESC),
        "name-whitespace",
        "whitespace",
        sr_accepts=True,
    ),
    Bad("name-list", "s", fm("name:\n  - s\n" + DESC), "not-string", "'name' must be a string"),
    Bad(
        "description-empty", "s", fm('name: s\ndescription: ""\n'), "description-empty", "non-empty"
    ),
    Bad(
        "description-long",
        "s",
        fm("name: s\ndescription: " + "x" * 1025 + "\n"),
        "description-too-long",
        "1025 chars",
    ),
    Bad(
        "description-angle",
        "s",
        fm("name: s\ndescription: Use when <html> is needed\n"),
        "description-angle",
        "'<'",
        sr_accepts=True,
    ),
    Bad(
        "compatibility-empty",
        "s",
        fm("name: s\n" + DESC + 'compatibility: ""\n'),
        "compatibility-empty",
        "1-500",
        sr_accepts=True,
    ),
    Bad(
        "compatibility-long",
        "s",
        fm("name: s\n" + DESC + "compatibility: " + "c" * 501 + "\n"),
        "compatibility-too-long",
        "501 chars",
    ),
    Bad(
        "metadata-scalar",
        "s",
        fm("name: s\n" + DESC + "metadata: plain\n"),
        "metadata-not-map",
        "not a str",
        sr_accepts=True,
    ),
    Bad(
        "metadata-nested",
        "s",
        fm("name: s\n" + DESC + "metadata:\n  a:\n    b: c\n"),
        "metadata-not-flat",
        "'a'",
        sr_accepts=True,
    ),
    Bad(
        "metadata-list",
        "s",
        fm("name: s\n" + DESC + "metadata:\n  tags:\n    - x\n"),
        "metadata-not-flat",
        "not a list",
        sr_accepts=True,
    ),
    Bad(
        "allowed-tools-list",
        "s",
        fm("name: s\n" + DESC + "allowed-tools:\n  - Read\n"),
        "allowed-tools-not-string",
        "space-separated",
        sr_accepts=True,
    ),
    Bad(
        "license-map",
        "s",
        fm("name: s\n" + DESC + "license:\n  name: MIT\n"),
        "not-string",
        "'license'",
        sr_accepts=True,
    ),
    Bad(
        "lowercase-file",
        "s",
        fm("name: s\n" + DESC),
        "skill-md-case",
        "exactly 'SKILL.md'",
        sr_accepts=True,
        skill_md="skill.md",
    ),
    Bad(
        "tab-indent",
        "s",
        fm("name: s\n" + DESC + "metadata:\n\tk: v\n"),
        "frontmatter-tab-indent",
        "tab",
    ),
]


def test_corpus_is_big_enough() -> None:
    assert len(BAD) >= 30
    assert sum(case.sr_accepts for case in BAD) >= 12


@pytest.mark.parametrize("case", BAD, ids=[case.label for case in BAD])
def test_ours_rejects_with_the_right_message(
    case: Bad, make_skill: Callable[..., Path], oracle: Callable[[Path], list[str]]
) -> None:
    root = make_skill(case.dir_name, case.text, skill_md=case.skill_md)
    report = validate_skill(root)
    assert not report.valid
    matching = [f for f in report.findings if f.rule == case.rule and f.severity == "error"]
    assert matching, [str(f) for f in report.findings]
    assert any(case.fragment in f.message for f in matching), [f.message for f in matching]
    if case.line is not None:
        assert case.line in [f.line for f in matching]
    sr_errors = oracle(root)
    assert (not sr_errors) == case.sr_accepts, sr_errors


GOOD: list[tuple[str, str, str]] = [
    ("minimal", "pdf-tools", fm("name: pdf-tools\n" + DESC)),
    (
        "all-fields",
        "full",
        fm(
            "name: full\n" + DESC + "license: MIT\ncompatibility: Requires git\n"
            'allowed-tools: Bash(git:*) Read\nmetadata:\n  author: me\n  version: "1.0"\n'
        ),
    ),
    (
        "block-description",
        "blocky",
        fm("name: blocky\ndescription: >-\n  Use when folding text.\n  Do not use for code.\n"),
    ),
    ("quoted-colon", "colon", fm('name: colon\ndescription: "Use when: a colon appears"\n')),
    ("comments-crlf", "crlf", fm("# comment\r\nname: crlf\r\n" + DESC.replace("\n", "\r\n"))),
]


@pytest.mark.parametrize(("label", "dir_name", "text"), GOOD, ids=[g[0] for g in GOOD])
def test_good_skills_pass_both(
    label: str,
    dir_name: str,
    text: str,
    make_skill: Callable[..., Path],
    oracle: Callable[[Path], list[str]],
) -> None:
    root = make_skill(dir_name, text)
    report = validate_skill(root, strict=label != "quoted-colon")
    assert report.valid, [str(f) for f in report.findings]
    assert oracle(root) == []


def test_all_errors_are_collected(make_skill: Callable[..., Path]) -> None:
    root = make_skill(
        "wrong", fm('name: Bad_Name\ndescription: <x>\nextra: 1\ncompatibility: ""\n')
    )
    rules = {f.rule for f in validate_skill(root).findings}
    assert {
        "name-uppercase",
        "name-chars",
        "name-dir-mismatch",
        "description-angle",
        "unknown-field",
        "compatibility-empty",
    } <= rules


def test_warnings_body_and_references(make_skill: Callable[..., Path]) -> None:
    body = "See [guide](references/guide.md) and scripts/run.py and [web](https://x.org).\n"
    body += "Also [up](../other.md).\n" + "line\n" * 600
    root = make_skill("warn", fm("name: warn\n" + DESC, body), files={"scripts/run.py": "pass\n"})
    report = validate_skill(root)
    assert report.valid
    found = {(f.rule, f.line) for f in report.findings}
    assert ("missing-reference", 5) in found
    assert ("reference-escapes", 6) in found
    assert ("body-too-long", 5) in found
    assert not any("run.py" in f.message for f in report.findings)


def test_design_rules_only_in_strict(make_skill: Callable[..., Path]) -> None:
    root = make_skill("plain", fm("name: plain\ndescription: Does PDF things\n"))
    assert validate_skill(root).valid
    strict = validate_skill(root, strict=True)
    assert {"design-description-form", "design-description-length"} <= {
        f.rule for f in strict.findings if f.severity == "error"
    }


def test_paths(tmp_path: Path, make_skill: Callable[..., Path]) -> None:
    assert validate_skill(tmp_path / "nope").findings[0].rule == "path-missing"
    (tmp_path / "file.txt").write_text("x")
    assert validate_skill(tmp_path / "file.txt").findings[0].rule == "not-directory"
    (tmp_path / "empty").mkdir()
    assert validate_skill(tmp_path / "empty").findings[0].rule == "skill-md-missing"
    root = make_skill("ok", fm("name: ok\n" + DESC))
    assert validate_skill(root / "SKILL.md").valid


CLI_CASES = [case for case in BAD if case.label in ("cjk-name", "description-angle", "anchor")]


@pytest.mark.parametrize("case", CLI_CASES, ids=[case.label for case in CLI_CASES])
def test_skills_ref_cli_agrees_with_its_api(case: Bad, make_skill: Callable[..., Path]) -> None:
    root = make_skill(case.dir_name, case.text, skill_md=case.skill_md)
    done = subprocess.run(
        [sys.executable, "-m", "skills_ref.cli", "validate", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == (0 if case.sr_accepts else 1), done.stderr
    if not case.sr_accepts:
        assert done.stderr.startswith(f"Validation failed for {root}:")


def test_directory_name_is_the_one_hosts_see(
    tmp_path: Path, make_skill: Callable[..., Path]
) -> None:
    target = make_skill("checkout-v2", fm("name: greet\n" + DESC))
    link = tmp_path / "greet"
    link.symlink_to(target)
    assert validate_skill(link).valid
    assert not validate_skill(target).valid
