"""skill_generate: turns MCP tool definitions into an Agent Skill directory.

Rules: standard library only; tools arrive as plain dicts in the MCP ``Tool`` wire shape
(``name``, ``title``, ``description``, ``inputSchema``, ``outputSchema``, ``annotations``), so
this module knows nothing about the server registry. The SKILL.md it writes always passes
skills-ref and our own validator: the name is normalised (``my_agent`` -> ``my-agent``), every
frontmatter value is written by ``frontmatter.quote`` and long tool docs move to
``references/`` so the body stays short. Invalid input raises ``GenerateError``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_agent_kit.wire import frontmatter

from . import skill_validate
from .findings import errors
from .fsutil import install_tree, write_files

GENERATOR = "mcp-agent-kit"
MAX_INLINE_SECTION = 40  # lines; a longer tool section moves to references/
MAX_INLINE_TOTAL = 400  # body lines before every tool section moves to references/

ANNOTATION_TEXT: dict[str, tuple[str, str]] = {
    "readOnlyHint": ("read-only: does not change its environment", "may change its environment"),
    "destructiveHint": ("may destroy or overwrite data", "only adds, never destroys"),
    "idempotentHint": ("idempotent: repeating a call has no extra effect", "not idempotent"),
    "openWorldHint": ("talks to the outside world", "works in a closed domain"),
}
EXAMPLE_BY_TYPE: dict[str, Any] = {
    "string": "text", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {},
    "null": None,
}


class GenerateError(ValueError):
    """The input cannot become a valid skill."""


def skill_name(raw: str) -> str:
    """A valid Agent Skills name from any text: ``my_agent`` -> ``my-agent``."""
    ascii_text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    name = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:64].rstrip("-")
    if not name:
        raise GenerateError(f"cannot derive a skill name from {raw!r}")
    return name


def _clean(text: str) -> str:
    """Text that can be written as UTF-8: lone surrogates become U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8") if text else text


def _one_line(text: str) -> str:
    return " ".join(_clean(text).split())


def _code(text: str) -> str:
    text = _one_line(text) or " "
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if fence != "`" or text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _quote_block(text: str) -> list[str]:
    return ["> " + line if line.strip() else ">" for line in _clean(text).strip().split("\n")]


def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", _clean(text).lower()).strip("-")[:60].strip("-") or "tool"
    slug, number = base, 2
    while slug in taken:
        slug, number = f"{base}-{number}", number + 1
    taken.add(slug)
    return slug


def purpose(description: str) -> tuple[str | None, str | None]:
    """The X and Y of a "Use when X. Do not use for Y." description (None for a part it lacks)."""
    flat = _one_line(description)
    use = re.search(r"\bUse (?:it )?when\s+(.+?)(?:\.\s|\.$|$)", flat)
    avoid = re.search(r"\bDo not use (?:it )?(?:for|when)\s+(.+?)(?:\.\s|\.$|$)", flat)
    return (use.group(1) if use else None), (avoid.group(1) if avoid else None)


def _use_and_avoid(description: str) -> tuple[str, str]:
    use, avoid = purpose(description)
    use_text = use or _one_line(description) or "the task matches this tool's name"
    return use_text, avoid or "anything the description above does not cover"


def _example_value(name: str, schema: Mapping[str, Any]) -> Any:
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    for key in ("examples", "enum"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema[key][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return EXAMPLE_BY_TYPE.get(kind, "text") if isinstance(kind, str) else "text"


def _arguments(schema: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required", []) if isinstance(schema, Mapping) else []
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    lines: list[str] = []
    example: dict[str, Any] = {}
    for arg, sub in props.items():
        sub = sub if isinstance(sub, Mapping) else {}
        kind = sub.get("type", "any")
        kind_text = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
        need = "required" if arg in required else "optional"
        about = _one_line(str(sub.get("description", "")))
        entry = f"- {_code(str(arg))} ({_one_line(kind_text)}, {need})"
        lines.append(entry + (f": {about}" if about else ""))
        if arg in required or (not required and len(example) < 2):
            example[str(arg)] = _example_value(str(arg), sub)
    return lines or ["- none"], example


def _tool_section(tool: Mapping[str, Any]) -> list[str]:
    name = str(tool["name"])
    title = tool.get("title") or (tool.get("annotations") or {}).get("title")
    description = str(tool.get("description") or "")
    use, avoid = _use_and_avoid(description)
    args, example = _arguments(tool.get("inputSchema") or {})
    heading = f"### {_code(name)}" + (f" — {_one_line(str(title))}" if title else "")
    lines = [heading, ""]
    if description.strip():
        lines += [*_quote_block(description), ""]
    lines += [f"- **Use when:** {use}", f"- **Do not use for:** {avoid}", "", "**Arguments:**", ""]
    lines += [*args, "", "**Example call:**", "", "```json"]
    lines += [json.dumps({"name": _clean(name), "arguments": example}), "```", ""]
    annotations = tool.get("annotations") if isinstance(tool.get("annotations"), Mapping) else {}
    hints = [
        ANNOTATION_TEXT[key][0 if value else 1]
        for key, value in (annotations or {}).items()
        if key in ANNOTATION_TEXT and isinstance(value, bool)
    ]
    lines.append("**Annotations:** " + ("; ".join(hints) if hints else "none declared"))
    output = tool.get("outputSchema")
    if isinstance(output, Mapping) and isinstance(output.get("properties"), Mapping):
        fields = ", ".join(_code(str(k)) for k in output["properties"])
        lines += ["", f"**Returns structured content** with {fields}."]
    return [*lines, ""]


def _check_tools(tools: Sequence[Mapping[str, Any]]) -> None:
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise GenerateError(f"tool #{index} is not an MCP Tool dict with a string 'name'")
        if not tool["name"].strip():
            raise GenerateError(f"tool #{index} has an empty name")


def render_skill(
    tools: Sequence[Mapping[str, Any]], *, name: str, description: str, version: str,
    license: str | None = None, compatibility: str | None = None,
) -> dict[str, str]:
    """``{relative path: text}`` for a skill that indexes ``tools``; SKILL.md is always valid."""
    _check_tools(tools)
    slug_name = skill_name(name)
    description = _clean(description)
    sections = [(tool, _tool_section(tool)) for tool in tools]
    inline_total = sum(len(lines) for _, lines in sections)
    files: dict[str, str] = {}
    taken: set[str] = set()
    body = [f"# {slug_name}", "", *_quote_block(description), "",
            f"This skill indexes the {len(tools)} tool(s) of the `{slug_name}` MCP server "
            f"(version {_one_line(version)}). Pick the tool whose *Use when* matches the task, "
            "then call it with the arguments shown.", "", "## Tools", ""]
    for tool, lines in sections:
        if len(lines) <= MAX_INLINE_SECTION and inline_total <= MAX_INLINE_TOTAL:
            body += lines
            continue
        rel = f"references/{_slug(str(tool['name']), taken)}.md"
        files[rel] = "\n".join(["# " + lines[0].removeprefix("### "), "", *lines[2:]])
        use, _ = _use_and_avoid(str(tool.get("description") or ""))
        body += [f"- {_code(str(tool['name']))}: use when {use}. Details: [{rel}]({rel})", ""]
    fields: dict[str, str | Mapping[str, str]] = {"name": slug_name, "description": description}
    if license is not None:
        fields["license"] = _clean(license)
    if compatibility is not None:
        fields["compatibility"] = _clean(compatibility)
    fields["metadata"] = {"version": _clean(version), "generated-by": GENERATOR}
    files["SKILL.md"] = frontmatter.render(fields, "\n".join(body).rstrip("\n") + "\n")
    found, _ = skill_validate.validate_text(files["SKILL.md"], dir_name=slug_name)
    if errors(found):
        raise GenerateError("; ".join(f.message for f in errors(found)))
    return dict(sorted(files.items()))


def skeleton_skill(name: str, description: str) -> dict[str, str]:
    """A hand-editable starting point for ``skill new``."""
    slug_name = skill_name(name)
    body = "\n".join([
        f"# {slug_name}", "", "## When to use", "", "Describe the tasks this skill is for.", "",
        "## Steps", "", "1. First step.", "2. Second step.", "",
        "Put long reference material in `references/` and link it from here.", "",
    ])
    text = frontmatter.render({"name": slug_name, "description": _clean(description)}, body)
    found, _ = skill_validate.validate_text(text, dir_name=slug_name)
    if errors(found):
        raise GenerateError("; ".join(f.message for f in errors(found)))
    return {"SKILL.md": text}


def write_skill(files: Mapping[str, str], out_dir: Path, *, force: bool = False) -> Path:
    """Write rendered skill files to ``out_dir/<name>/`` atomically; return that directory."""
    doc = frontmatter.read(files["SKILL.md"])
    name = (doc.data or {}).get("name")
    if not isinstance(name, str):
        raise GenerateError("SKILL.md has no name")

    def build(tmp: Path) -> None:
        write_files(tmp, dict(files))
        report = skill_validate.validate_skill(tmp.parent / tmp.name)
        bad = [f for f in errors(report.findings) if f.rule != "name-dir-mismatch"]
        if bad:
            raise GenerateError("; ".join(str(f) for f in bad))

    return install_tree(build, Path(out_dir) / name, force=force)


def generate_skill(
    tools: Sequence[Mapping[str, Any]], out_dir: Path, *, name: str, description: str,
    version: str, force: bool = False,
) -> Path:
    """Render and write in one call: ``out_dir/<skill-name>/SKILL.md`` (+ ``references/``)."""
    files = render_skill(tools, name=name, description=description, version=version)
    return write_skill(files, out_dir, force=force)
