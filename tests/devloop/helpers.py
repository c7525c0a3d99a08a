"""Helpers for the developer-loop tests: run the kit's command line as a user would, and test servers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
METRICS = str(ROOT / "examples" / "metrics_server.py")
FAKE_PEER = str(ROOT / "tests" / "client" / "fake_peer.py")
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def kit(*argv: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
        **options: Any) -> subprocess.CompletedProcess[str]:
    """`python -m mcp_agent_kit ARGV...` with stdin closed (not a terminal) unless options say otherwise."""
    options.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", *argv], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=env or ENV, check=False, **options)


def write(folder: Path, name: str, source: str) -> str:
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return str(path)


ASKING_SERVER = """
    from mcp_agent_kit import Context, Server

    mcp = Server("asker", "0.1.0")


    @mcp.tool(read_only=True)
    def greet(ctx: Context) -> dict[str, object]:
        \"\"\"Use when you need a greeting for the user. Do not use for farewells.\"\"\"
        answer = ctx.elicit("Who are you?", {
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name"},
                "age": {"type": "integer"},
                "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
                "ok": {"type": "boolean"},
            },
            "required": ["name"],
        })
        return {"action": answer["action"], "content": answer.get("content")}


    @mcp.tool(destructive=True)
    def fail(reason: str) -> str:
        \"\"\"Use when you need a tool that always fails. Do not use for anything real.\"\"\"
        raise RuntimeError(reason)
"""
