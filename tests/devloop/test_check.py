"""`mcp-agent-kit check`: validate.py's tool design rules for any server file (signature included),
and for a server reached over MCP (an arbitrary stdio command: the rules its tool list can show)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.devloop.helpers import FAKE_PEER, METRICS, kit, write

BROKEN = """
    from mcp_agent_kit import Server

    app = Server("broken", "0.1.0")


    @app.tool()
    def shout(text: str) -> str:
        \"\"\"Shout the text.\"\"\"
        return text.upper()


    @app.tool(read_only=True, input_schema={
        "type": "object", "properties": {"a": {"type": "integer"}, "extra": {"type": "string"}}, "required": ["a"]})
    def double(a: int, scale: int) -> int:
        \"\"\"Use when you need a number doubled. Do not use for strings.\"\"\"
        return a * 2 * scale
"""


def test_the_example_follows_the_rules() -> None:
    done = kit("check", METRICS)
    assert (done.returncode, done.stdout, done.stderr) == (0, "✓ tool 'calculate_metrics': follows the design rules\n",
                                                           "")


def test_each_broken_rule_is_a_cross_line_and_exit_1(tmp_path: Path) -> None:
    done = kit("check", write(tmp_path, "broken.py", BROKEN))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("✗ tool '") for line in lines), lines
    double = next(line for line in lines if "'double'" in line)
    shout = next(line for line in lines if "'shout'" in line)
    assert 'description must read "Use when X. Do not use for Y."' in shout
    assert "annotations must declare readOnlyHint or destructiveHint" in shout
    assert "inputSchema allows extra but double() has no such parameter" in double
    assert "double() needs scale but inputSchema does not require it" in double


def test_json_findings(tmp_path: Path) -> None:
    done = kit("check", "--json", write(tmp_path, "broken.py", BROKEN))
    report = json.loads(done.stdout)
    assert report["ok"] is False and len(report["findings"]) == 2
    assert all(finding["ok"] is False for finding in report["findings"])


def test_an_arbitrary_stdio_command_is_checked_by_its_tool_list() -> None:
    done = kit("check", "--", sys.executable, FAKE_PEER, "legacy-error")
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("✗ tool 'echo': description must read")


def test_a_module_that_fails_to_import_is_one_line(tmp_path: Path) -> None:
    done = kit("check", write(tmp_path, "boom.py", "raise RuntimeError('boom at import')\n"))
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "boom.py:1: RuntimeError: boom at import" in done.stderr and "Traceback" not in done.stderr
    done = kit("check", write(tmp_path, "plain.py", "server = 42\n"))
    assert done.returncode == 2 and "is not an mcp_agent_kit Server (got int)" in done.stderr
