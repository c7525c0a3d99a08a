"""docs/skills-over-mcp.md's Python samples run as written, from the repository root: the server
sample registers the example skills, the host sample loads them from examples/everything_server.py
over stdio and is refused a file no entry lists. (Its wire transcript replays in tests/test_docs.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_docs import blocks, read

ROOT = Path(__file__).resolve().parents[2]


def test_the_samples_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    samples = [block.body for block in blocks(read("skills-over-mcp.md")) if block.lang == "python"]
    assert len(samples) == 2
    namespace: dict[str, Any] = {"__name__": "docs_skills_over_mcp"}
    for number, body in enumerate(samples):
        exec(compile(body, f"skills-over-mcp.md[{number}]", "exec"), namespace)
    served = {source.uri for source in namespace["server"].dispatcher.extension("skills").trees}
    assert served == {"skill://csv-report/SKILL.md", "skill://release-notes/SKILL.md",
                      "skill://acme/docs/csv-report/SKILL.md"}
    assert namespace["skill_md"].startswith(b"---\nname: csv-report\n")
    assert "not a file of any skill entry held" in capsys.readouterr().out
