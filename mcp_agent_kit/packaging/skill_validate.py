"""skill_validate: checks one Agent Skill directory and reports every finding with file:line.

Rules: standard library only; reads files but never writes them; knows nothing about plugins,
servers or the CLI. It makes every check skills-ref 0.1.1 makes, plus the spec rules
skills-ref lets through (ASCII names, exact directory match, 1-500 character compatibility,
flat string metadata, string allowed-tools, no angle brackets in descriptions, an exactly named
SKILL.md) and warnings for long bodies and missing referenced files. ``strict`` adds the kit's
design rules. Checks are tables: a rule id maps to its message, a field maps to its checker.
Files are read through safefile: SKILL.md must be a regular file inside the skill of at most
MAX_SKILL_MD_BYTES; a symlink leaving the skill (or, in a plugin, the plugin root), a symlink to
a directory, a FIFO, device or socket anywhere in the skill, and a skill over fsutil's entry or
byte limits are errors, so `skill install` refuses them. `skill_dirs` expands a folder of skills
into its skills, so one path validates each.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mcp_agent_kit.safefile import UnsafeFileError
from mcp_agent_kit.safefile import read_bytes as safe_read
from mcp_agent_kit.wire import frontmatter

from .findings import ERROR, WARNING, Finding, errors, warnings
from .fsutil import scan_tree

SKILL_MD = "SKILL.md"
ALLOWED_FIELDS = ("allowed-tools", "compatibility", "description", "license", "metadata", "name")
REQUIRED_FIELDS = ("name", "description")
MAX_NAME, MAX_DESCRIPTION, MAX_COMPATIBILITY, MAX_BODY_LINES = 64, 1024, 500, 500
MIN_DESIGN_DESCRIPTION = 20
MAX_SKILL_MD_BYTES = 1 << 20  # 1 MiB: a SKILL.md is loaded into a model's context whole
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

RULES: dict[str, str] = {
    "path-missing": "Path does not exist: {path}",
    "not-directory": "Not a directory: {path}",
    "skill-md-missing": "Missing required file: SKILL.md",
    "flat-skill-file": "skills are directories: move {file} to {suggested}/SKILL.md (the directory "
    "name must equal the skill's name)",
    "skill-md-misnamed": "Missing required file: SKILL.md; found {found}: skills are directories "
    "holding exactly SKILL.md, so rename it to {dir}/SKILL.md",
    "skill-md-case": "the file must be named exactly 'SKILL.md' (found '{found}'); Claude "
    "Code and Agent Plugins clients look for that exact name",
    "not-utf8": "SKILL.md is not valid UTF-8 ({detail})",
    "skill-md-outside": "SKILL.md resolves outside the skill directory ({detail}); a host would "
    "read a file the skill does not hold",
    "skill-md-special": "SKILL.md is not a regular file ({detail})",
    "skill-md-too-large": "SKILL.md is over the 1 MiB limit ({detail})",
    "skill-md-unreadable": "SKILL.md cannot be read ({detail})",
    "symlink-outside": "{detail}; a symlink must stay inside the skill",
    "symlink-directory": "{detail}",
    "special-file": "{detail}; a skill holds only directories and regular files",
    "too-many-entries": "the skill has {detail}",
    "tree-too-large": "the skill's {detail}",
    "unreadable": "{detail}",
    "unknown-field": "Unexpected field in frontmatter: '{key}'. Only "
    + ", ".join(ALLOWED_FIELDS)
    + " are allowed; put client-specific data under metadata",
    "field-missing": "Missing required field in frontmatter: {field}",
    "not-string": "Field '{field}' must be a string, not a {kind}",
    "name-empty": "Field 'name' must be a non-empty string",
    "name-whitespace": "Skill name '{name}' has leading or trailing whitespace",
    "name-too-long": "Skill name '{name}' exceeds 64 character limit ({length} chars)",
    "name-uppercase": "Skill name '{name}' must be lowercase",
    "name-hyphen-edge": "Skill name cannot start or end with a hyphen",
    "name-double-hyphen": "Skill name cannot contain consecutive hyphens",
    "name-chars": "Skill name '{name}' contains invalid characters; only ASCII a-z, 0-9 and "
    "'-' are allowed",
    "name-dir-mismatch": "Directory name '{dir}' must match skill name '{name}'",
    "description-empty": "Field 'description' must be a non-empty string",
    "description-too-long": "Description exceeds 1024 character limit ({length} chars)",
    "description-angle": "Description must not contain '<' or '>'",
    "compatibility-empty": "Field 'compatibility' must be 1-500 characters when present "
    "(it is empty)",
    "compatibility-too-long": "Compatibility exceeds 500 character limit ({length} chars)",
    "metadata-not-map": "Field 'metadata' must be a map of string keys to string values, "
    "not a {kind}",
    "metadata-not-flat": "metadata '{key}' must be a string value, not a {kind}",
    "allowed-tools-not-string": "Field 'allowed-tools' must be a space-separated string, "
    "not a {kind}",
    "body-too-long": "SKILL.md body has {count} lines; keep it under 500 and move detail "
    "into references/",
    "body-empty": "SKILL.md body is empty; say how to use the skill",
    "missing-reference": "the body references '{target}', which does not exist in the skill",
    "reference-escapes": "the body references '{target}', which is outside the skill directory",
    "design-description-form": "Description should read 'Use when X. Do not use for Y.'",
    "design-description-length": "Description should be 20-1024 characters ({length} chars)",
}
WARNING_RULES = frozenset(
    {"body-too-long", "body-empty", "missing-reference", "reference-escapes"}
)

Issue = tuple[str, dict[str, object]]  # (rule id, message arguments)


@dataclass
class SkillReport:
    """Every finding for one skill directory."""

    path: str
    name: str | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not errors(self.findings)

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "name": self.name,
            "valid": self.valid,
            "errors": [finding.as_dict() for finding in errors(self.findings)],
            "warnings": [finding.as_dict() for finding in warnings(self.findings)],
        }


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "list"
    return "map" if isinstance(value, dict) else type(value).__name__


# -- field checkers: value -> issues -------------------------------------------------------
def _check_name(value: frontmatter.Value, dir_name: str | None) -> list[Issue]:
    if not isinstance(value, str):
        return [("not-string", {"field": "name", "kind": _kind(value)})]
    if not value.strip():
        return [("name-empty", {})]
    issues: list[Issue] = []
    if value != value.strip():
        issues.append(("name-whitespace", {"name": value}))
    name = value.strip()
    checks: list[tuple[bool, str]] = [
        (len(name) > MAX_NAME, "name-too-long"),
        (name != name.lower(), "name-uppercase"),
        (name.startswith("-") or name.endswith("-"), "name-hyphen-edge"),
        ("--" in name, "name-double-hyphen"),
        (re.fullmatch(r"[a-z0-9-]+", name.lower()) is None, "name-chars"),
        (dir_name is not None and dir_name != name, "name-dir-mismatch"),
    ]
    args = {"name": name, "length": len(name), "dir": dir_name}
    issues.extend((rule, args) for failed, rule in checks if failed)
    return issues


def _check_description(value: frontmatter.Value, _dir: str | None) -> list[Issue]:
    if not isinstance(value, str):
        return [("not-string", {"field": "description", "kind": _kind(value)})]
    if not value.strip():
        return [("description-empty", {})]
    issues: list[Issue] = []
    if len(value) > MAX_DESCRIPTION:
        issues.append(("description-too-long", {"length": len(value)}))
    if "<" in value or ">" in value:
        issues.append(("description-angle", {}))
    return issues


def _check_compatibility(value: frontmatter.Value, _dir: str | None) -> list[Issue]:
    if not isinstance(value, str):
        return [("not-string", {"field": "compatibility", "kind": _kind(value)})]
    if not value.strip():
        return [("compatibility-empty", {})]
    if len(value) > MAX_COMPATIBILITY:
        return [("compatibility-too-long", {"length": len(value)})]
    return []


def _check_license(value: frontmatter.Value, _dir: str | None) -> list[Issue]:
    if isinstance(value, str):
        return []
    return [("not-string", {"field": "license", "kind": _kind(value)})]


def _check_metadata(value: frontmatter.Value, _dir: str | None) -> list[Issue]:
    if not isinstance(value, dict):
        return [("metadata-not-map", {"kind": _kind(value)})]
    return [
        ("metadata-not-flat", {"key": key, "kind": _kind(item)})
        for key, item in value.items()
        if not isinstance(item, str)
    ]


def _check_allowed_tools(value: frontmatter.Value, _dir: str | None) -> list[Issue]:
    return [] if isinstance(value, str) else [("allowed-tools-not-string", {"kind": _kind(value)})]


FIELD_CHECKS: dict[str, Callable[[frontmatter.Value, str | None], list[Issue]]] = {
    "name": _check_name,
    "description": _check_description,
    "compatibility": _check_compatibility,
    "license": _check_license,
    "metadata": _check_metadata,
    "allowed-tools": _check_allowed_tools,
}


def _check_design(data: dict[str, frontmatter.Value]) -> list[Issue]:
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        return []
    issues: list[Issue] = []
    if not MIN_DESIGN_DESCRIPTION <= len(description) <= MAX_DESCRIPTION:
        issues.append(("design-description-length", {"length": len(description)}))
    if not re.search(r"(?s)\bUse when\b.+?\.\s+Do not use for\b.+?\.", description):
        issues.append(("design-description-form", {}))
    return issues


# -- body checks ---------------------------------------------------------------------------
_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_BARE = re.compile(r"(?<![\w/.-])((?:scripts|references|assets)/[\w./-]*\w)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def referenced_paths(body: str) -> list[tuple[int, str]]:
    """(body line offset, relative path) for each local file the body points at."""
    found: list[tuple[int, str]] = []
    for offset, line in enumerate(body.split("\n")):
        targets = [m.group(1) for m in _LINK.finditer(line)] + _BARE.findall(line)
        for target in targets:
            target = target.split("#", 1)[0].split("?", 1)[0]
            if target and not _SCHEME.match(target) and not target.startswith("/"):
                found.append((offset, target))
    return found


BodyIssue = tuple[str, dict[str, object], int]


def _check_body(body: str, body_line: int, root: Path | None) -> list[BodyIssue]:
    issues: list[BodyIssue] = []
    lines = body.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or not any(line.strip() for line in lines):
        issues.append(("body-empty", {}, body_line))
    elif len(lines) > MAX_BODY_LINES:
        issues.append(("body-too-long", {"count": len(lines)}, body_line))
    if root is None:
        return issues
    resolved_root = root.resolve()
    seen: set[str] = set()
    for offset, target in referenced_paths(body):
        if target in seen:
            continue
        seen.add(target)
        candidate = (root / target).resolve()
        if not candidate.is_relative_to(resolved_root):
            issues.append(("reference-escapes", {"target": target}, body_line + offset))
        elif not candidate.exists():
            issues.append(("missing-reference", {"target": target}, body_line + offset))
    return issues


# -- entry points --------------------------------------------------------------------------
def _finding(rule: str, args: dict[str, object], path: str, line: int | None) -> Finding:
    severity = WARNING if rule in WARNING_RULES else ERROR
    return Finding(severity, rule, RULES[rule].format(**args), path, line)


def validate_text(
    text: str, *, path: str = SKILL_MD, dir_name: str | None = None,
    root: Path | None = None, strict: bool = False,
) -> tuple[list[Finding], dict[str, frontmatter.Value] | None]:
    """Findings for a SKILL.md text, and its frontmatter data when it has a mapping."""
    doc = frontmatter.read(text)
    findings = [
        Finding(ERROR, f"frontmatter-{p.rule}", p.message, path, p.line) for p in doc.problems
    ]
    data = doc.data
    if data is None:
        return findings, None

    def add(rule: str, args: dict[str, object], line: int | None) -> None:
        findings.append(_finding(rule, args, path, line))

    for key in data:
        if key not in ALLOWED_FIELDS:
            add("unknown-field", {"key": key}, doc.key_lines.get(key))
    for required in REQUIRED_FIELDS:
        if required not in data:
            add("field-missing", {"field": required}, 1)
    for name, checker in FIELD_CHECKS.items():
        if name in data:
            for rule, args in checker(data[name], dir_name):
                add(rule, args, doc.key_lines.get(name))
    if strict:
        for rule, args in _check_design(data):
            add(rule, args, doc.key_lines.get("description"))
    for rule, args, line in _check_body(doc.body, doc.body_line, root):
        add(rule, args, line)
    findings.sort(key=lambda f: (f.line or 0))
    return findings, data


def find_skill_md(directory: Path) -> tuple[Path | None, str | None]:
    """The SKILL.md in ``directory`` and, when its name is not exactly SKILL.md, that name."""
    names = os.listdir(directory)
    if SKILL_MD in names:
        return directory / SKILL_MD, None
    other = next((n for n in sorted(names) if n.lower() == SKILL_MD.lower()), None)
    return (directory / other, other) if other else (None, None)


def skill_dirs(path: Path) -> list[Path]:
    """The skills `path` stands for: itself when it is a skill (or anything but a directory), else
    each visible sub-directory holding a SKILL.md, by name (a folder of skills such as
    ~/.claude/skills); itself again when it holds none, so the report says what is missing."""
    try:
        if not path.is_dir() or find_skill_md(path)[0] is not None:
            return [path]
        children = sorted(child for child in path.iterdir() if child.is_dir() and not child.name.startswith("."))
        return [child for child in children if find_skill_md(child)[0] is not None] or [path]
    except OSError:  # unreadable: validate_skill reports it
        return [path]


def _suggested_name(flat: Path) -> str:
    """The directory a flat NAME.md skill belongs in: its frontmatter name, else NAME as a skill name."""
    try:
        data = frontmatter.read(safe_read(flat, limit=MAX_SKILL_MD_BYTES).decode("utf-8")).data
    except (OSError, UnicodeDecodeError):
        data = None
    name = data.get("name") if data is not None else None
    if isinstance(name, str) and NAME_PATTERN.fullmatch(name.strip()):
        return name.strip()
    return re.sub(r"[^a-z0-9]+", "-", flat.stem.lower()).strip("-") or "my-skill"


def _not_a_skill_dir(given: Path) -> Finding:
    """The finding for a path that is not a skill directory: a flat NAME.md gets the way to fix it."""
    if given.is_file() and given.suffix.lower() == ".md":
        args: dict[str, object] = {"file": given.name, "suggested": _suggested_name(given)}
        return _finding("flat-skill-file", args, str(given), None)
    return _finding("not-directory", {"path": given}, str(given), None)


def _missing_skill_md(given: Path) -> Finding:
    """SKILL.md is missing: name a lone NAME.md beside it as the file to rename."""
    markdown = sorted(n for n in os.listdir(given) if n.lower().endswith(".md") and (given / n).is_file())
    others = [n for n in markdown if n.lower() not in ("readme.md", "license.md", "changelog.md")]
    if len(others) == 1:
        args: dict[str, object] = {"found": others[0], "dir": given.name}
        return _finding("skill-md-misnamed", args, str(given / others[0]), None)
    return _finding("skill-md-missing", {}, str(given / SKILL_MD), None)


READ_RULES = {"symlink-outside": "skill-md-outside", "special-file": "skill-md-special",
              "file-too-large": "skill-md-too-large"}


def validate_skill(
    path: Path | str, *, strict: bool = False, root: Path | None = None, dir_name: str | None = None
) -> SkillReport:
    """Validate a skill directory (or a path to its SKILL.md) and collect every finding.

    Symlinks in the skill must stay inside ``root`` (default: the skill directory itself; a
    plugin passes its own root). ``dir_name`` is the name the directory will have, for a copy
    staged under a temporary name (default: its own name).
    """
    given = Path(path)
    if given.name.lower() == SKILL_MD.lower() and os.path.lexists(given) and not given.is_dir():
        given = given.parent
    report = SkillReport(str(given))
    if not given.exists():
        report.findings.append(_finding("path-missing", {"path": given}, str(given), None))
        return report
    if not given.is_dir():
        report.findings.append(_not_a_skill_dir(given))
        return report
    skill_md, odd_name = find_skill_md(given)
    if skill_md is None:
        report.findings.append(_missing_skill_md(given))
        return report
    if odd_name is not None:
        report.findings.append(_finding("skill-md-case", {"found": odd_name}, str(skill_md), None))
    try:
        text = safe_read(skill_md, limit=MAX_SKILL_MD_BYTES, root=root or given).decode("utf-8")
    except UnicodeDecodeError as exc:
        report.findings.append(_finding("not-utf8", {"detail": exc.reason}, str(skill_md), None))
        return report
    except UnsafeFileError as exc:
        rule = READ_RULES.get(exc.rule, "skill-md-unreadable")
        report.findings.append(_finding(rule, {"detail": exc.message}, str(skill_md), None))
        return report
    except OSError as exc:
        report.findings.append(_finding("skill-md-unreadable", {"detail": exc.strerror}, str(skill_md), None))
        return report
    for rule, rel, message in scan_tree(given, root=root):
        report.findings.append(_finding(rule, {"detail": message}, str(given / rel), None))
    dir_name = dir_name or Path(os.path.abspath(given)).name  # the name hosts see, even via a symlink
    found, data = validate_text(
        text, path=str(skill_md), dir_name=dir_name, root=given, strict=strict
    )
    report.findings.extend(found)
    if data is not None and isinstance(data.get("name"), str):
        report.name = str(data["name"]).strip()
    return report
