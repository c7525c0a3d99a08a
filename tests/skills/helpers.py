"""Skill directories for the skills-over-MCP tests, written fresh per test."""

from __future__ import annotations

from pathlib import Path

SKILL_MD = """---
name: {name}
description: Use when a test needs the {name} skill. Do not use for anything else.
metadata:
  owner: tests
---

# {name}

See [the guide](references/GUIDE.md).
"""


def make_skill(parent: Path, name: str = "pdf-tools", files: dict[str, bytes] | None = None) -> Path:
    """parent/name with a SKILL.md, references/GUIDE.md and any extra files given."""
    root = parent / name
    (root / "references").mkdir(parents=True)
    (root / "SKILL.md").write_bytes(SKILL_MD.format(name=name).encode())
    (root / "references" / "GUIDE.md").write_bytes(b"# Guide\n\nStep one.\n")
    for rel, data in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root
