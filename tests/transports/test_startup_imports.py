"""A stdio server that answers plain calls never loads the heavy standard modules it can do
without, nor the kit's optional machinery (task tables and worker pool of both eras, skill
trees and the SKILL.md reader, the listen queue): they cost milliseconds at start, which hosts
pay on every launch. Each loads when a server first needs it (a task, a skill, a listen)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "metrics_server.py"
HEAVY = ("logging", "asyncio", "concurrent.futures", "uuid", "argparse", "hashlib", "hmac", "datetime")
OPTIONAL = (
    "mcp_agent_kit.core.task_table", "mcp_agent_kit.core.worker_pool", "mcp_agent_kit.core.task_mirror",
    "mcp_agent_kit.core.skill_tree", "mcp_agent_kit.wire.skills", "mcp_agent_kit.wire.frontmatter",
    "mcp_agent_kit.core.elicit_types", "queue", "heapq", "mimetypes", "base64",
)  # not dataclasses: the schema validator, loaded by the first validated call, uses it
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
CALL = {"name": "calculate_metrics", "arguments": {"values": [1, 2]}}
ERAS: dict[str, list[dict[str, Any]]] = {
    "2026-07-28": [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"_meta": META, **CALL}},
    ],
    "2025-11-25": [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": CALL},
    ],
}


def loaded_after(tmp_path: Path, prelude: str, lines: list[dict[str, Any]], watched: tuple[str, ...]) -> list[str]:
    """Run `prelude` (which leaves a `server`) on stdio, feed it `lines` until EOF, and return
    which of `watched` were in sys.modules when the process ended; every request must succeed."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(f"""
        import atexit, sys
        sys.path.insert(0, {str(ROOT)!r})
        atexit.register(lambda: print("LOADED=" + ",".join(m for m in {watched!r} if m in sys.modules),
                                      file=sys.stderr))
    """) + textwrap.dedent(prelude) + "\nserver.run([])\n")
    done = subprocess.run([sys.executable, str(script)], input="".join(json.dumps(m) + "\n" for m in lines),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    asked = [line["id"] for line in lines if "id" in line]
    # every request answered once; the stdio server runs requests concurrently, so in any order
    assert sorted(reply.get("id") for reply in replies if "id" in reply) == sorted(asked), replies
    assert all("result" in reply for reply in replies if "id" in reply), replies
    reported = [line for line in done.stderr.splitlines() if line.startswith("LOADED=")]
    assert len(reported) == 1, done.stderr
    return [name for name in reported[0].removeprefix("LOADED=").split(",") if name]


def test_the_watched_modules_exist() -> None:
    """A renamed module would make the checks below pass for nothing."""
    assert [name for name in HEAVY + OPTIONAL if importlib.util.find_spec(name) is None] == []


@pytest.mark.parametrize("era", sorted(ERAS))
def test_plain_calls_load_no_heavy_modules_and_no_optional_machinery(tmp_path: Path, era: str) -> None:
    prelude = f"import runpy\nserver = runpy.run_path({str(EXAMPLE)!r})['server']"
    assert loaded_after(tmp_path, prelude, ERAS[era], HEAVY + OPTIONAL) == []


def test_a_task_loads_the_task_machinery_and_a_skill_the_skill_reader(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "greeting"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greeting\ndescription: Use when greeting someone.\n---\nSay hi.\n")
    prelude = f"""
        from mcp_agent_kit import Server
        server = Server("lazy", "1.0.0")

        @server.tool(long_running=True)
        def slow() -> str:
            \"\"\"Run as a task.\"\"\"
            return "done"

        server.skills({str(tmp_path / "skills")!r})
    """
    tasks_meta = {**META, "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": tasks_meta, "name": "slow"}},
        {"jsonrpc": "2.0", "id": 2, "method": "skills/list", "params": {"_meta": META}},
    ]
    watched = ("mcp_agent_kit.core.task_table", "mcp_agent_kit.core.worker_pool", "mcp_agent_kit.core.skill_tree",
               "mcp_agent_kit.wire.skills")
    assert loaded_after(tmp_path, prelude, lines, watched) == list(watched)
