"""Interop: the MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0, Node 22 via npx) against
the metrics example over stdio and Streamable HTTP, in each of its protocol eras."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.net import free_port, wait_listening
from tests.pinned import npx_program

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
EXAMPLE = str(ROOT / "examples" / "metrics_server.py")


def inspector(config: Path, server: str, *args: str) -> dict[str, Any]:
    command, env = npx_program("mcp-inspector", "node@22", INSPECTOR)  # a missing npx FAILS, never skips
    done = subprocess.run(
        [*command, "--cli", "--config", str(config), "--server", server, *args, "--format", "json"],
        capture_output=True, text=True, timeout=300, env=dict(env, MCP_INSPECTOR_SECRET_STORE="memory"),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith("{"))
    reply: dict[str, Any] = json.loads(line)
    return reply


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, EXAMPLE, "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    wait_listening(port, proc)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, http_url: str) -> Path:
    servers: dict[str, Any] = {}
    for era in ("modern", "legacy", "auto"):
        servers[f"stdio-{era}"] = {
            "command": sys.executable,
            "args": [EXAMPLE],
            "protocolEra": era,
            "env": {"PYTHONPATH": str(ROOT)},
        }
        servers[f"http-{era}"] = {"type": "http", "url": http_url, "protocolEra": era}
    path = tmp_path_factory.mktemp("inspector") / "config.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ["modern", "legacy", "auto"])
def test_inspector_calls_the_tool(config: Path, transport: str, era: str) -> None:
    reply = inspector(
        config,
        f"{transport}-{era}",
        "--method",
        "tools/call",
        "--tool-name",
        "calculate_metrics",
        "--tool-arg",
        "values=[1,2,3]",
        "--tool-arg",
        "metric_type=sum",
    )
    result = reply["result"]
    assert result["structuredContent"] == {"metric": "sum", "value": 6, "count": 3}
    modern = era != "legacy"  # auto probes server/discover first, and we answer it
    assert ("resultType" in result) is modern, result
    assert ("io.modelcontextprotocol/serverInfo" in result.get("_meta", {})) is modern


def test_inspector_reads_the_resource_and_gets_the_prompt(config: Path) -> None:
    read = inspector(config, "stdio-modern", "--method", "resources/read", "--uri", "metrics://catalog")["result"]
    assert json.loads(read["contents"][0]["text"])["metrics"] == ["max", "mean", "min", "sum"]
    prompt = inspector(
        config,
        "stdio-legacy",
        "--method",
        "prompts/get",
        "--prompt-name",
        "summarize_numbers",
        "--prompt-args",
        "numbers=4,5",
    )["result"]
    assert "4,5" in prompt["messages"][0]["content"]["text"]
