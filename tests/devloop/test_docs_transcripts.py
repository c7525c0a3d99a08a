"""docs/developer-loop.md stays true: every ```console block's `$ mcp-agent-kit ...` line is run and
must print exactly the lines shown under it; the documented Inspector command is the one `dev` builds."""

from __future__ import annotations

import re
import shlex

import pytest

from mcp_agent_kit.devtools.inspector import INSPECTOR
from tests.devloop.helpers import ROOT, kit

DOC = (ROOT / "docs" / "developer-loop.md").read_text(encoding="utf-8")
CONSOLE = re.compile(r"^```console\n(.*?)^```\s*$", re.S | re.M)


def transcripts() -> list[tuple[str, str]]:
    found = []
    for block in CONSOLE.findall(DOC):
        command, _, output = block.partition("\n")
        assert command.startswith("$ mcp-agent-kit "), command
        found.append((command.removeprefix("$ mcp-agent-kit "), output))
    return found


def test_the_doc_has_transcripts() -> None:
    assert {shlex.split(command)[0] for command, _ in transcripts()} == {"call", "list", "check"}


@pytest.mark.parametrize(("command", "output"), transcripts(), ids=[c for c, _ in transcripts()])
def test_a_transcript_replays(command: str, output: str) -> None:
    done = kit(*shlex.split(command))
    assert done.returncode == 0, done.stderr
    assert done.stdout == output


def test_the_documented_inspector_line_is_the_pinned_one() -> None:
    assert f"npx -y {INSPECTOR} -- " in DOC and INSPECTOR.rpartition("@")[2] in DOC
