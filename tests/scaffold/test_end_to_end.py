"""End to end, from a wheel: build it, install it into a fresh virtualenv, create a project, and
check the project with real peers (official mcp client, a2a-sdk client, skills-ref)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import new_data_part
from a2a.types import Message, Role, SendMessageRequest, TaskState
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.net import free_port

ROOT = Path(__file__).resolve().parents[2]


def run(cmd: list[str], cwd: Path, timeout: float = 600, **kw: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(venv python, generated project) built from a wheel of this checkout."""
    work = tmp_path_factory.mktemp("e2e")
    src = work / "src"
    shutil.copytree(
        ROOT, src, ignore=shutil.ignore_patterns(".venv*", ".git", "__pycache__", "build", "dist", "*.egg-info")
    )
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(work / "dist"), str(src)], cwd=work)
    wheel = next((work / "dist").glob("mcp_agent_kit-*.whl"))
    run([sys.executable, "-m", "venv", str(work / "venv")], cwd=work)
    python = work / "venv" / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", str(wheel), "pytest==9.2.0"], cwd=work)
    started = time.perf_counter()
    run([str(work / "venv" / "bin" / "create-mcp-agent"), "demo-agent"], cwd=work)
    print(f"create-mcp-agent took {time.perf_counter() - started:.3f} s")
    yield python, work / "demo-agent"


def test_wheel_ships_templates_and_no_top_level_tools_or_a2a(installed: tuple[Path, Path]) -> None:
    python, project = installed
    site = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=project
    ).stdout.strip()
    assert (Path(site) / "mcp_agent_kit" / "templates" / "project" / "validate.py").is_file()
    run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", "."], cwd=project)
    top_level = {p.name for p in Path(site).iterdir()}
    assert "tools" not in top_level and "a2a" not in top_level


def test_validate_and_project_tests(installed: tuple[Path, Path]) -> None:
    python, project = installed
    done = run([str(python), "validate.py"], cwd=project)
    assert all(line.startswith("✓") for line in done.stdout.splitlines()), done.stdout
    run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project)
    run([str(python), "client_test.py"], cwd=project)


def test_skills_ref_accepts_the_skill(installed: tuple[Path, Path]) -> None:
    _, project = installed
    agentskills = Path(sys.executable).parent / "agentskills"
    run([str(agentskills), "validate", str(project / "skills" / "demo-agent")], cwd=project)


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_official_mcp_client_calls_the_generated_server(installed: tuple[Path, Path], mode: str, version: str) -> None:
    python, project = installed
    params = StdioServerParameters(command=str(python), args=["-m", "demo_agent.server"], cwd=str(project))

    async def go() -> None:
        async with Client(params, mode=mode) as client:
            assert client.protocol_version == version
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["text_stats"]
            result = await client.call_tool("text_stats", {"text": "one two three"})
            assert result.structured_content == {"words": 3, "characters": 13}

    asyncio.run(asyncio.wait_for(go(), 60))


def test_a2a_sdk_client_completes_a_task(installed: tuple[Path, Path]) -> None:
    python, project = installed
    port = free_port()
    env = dict(os.environ)
    server = subprocess.Popen(
        [str(python), "-m", "demo_agent.a2a_server", "--port", str(port)],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.1)

        async def go() -> None:
            async with httpx.AsyncClient() as http:
                card = await A2ACardResolver(http, base).get_agent_card()
            assert [skill.id for skill in card.skills] == ["text_stats"]
            client = await create_client(card, client_config=ClientConfig(streaming=False))
            part = new_data_part({"skill": "text_stats", "arguments": {"text": "a b"}})
            message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[part])
            task = None
            async for event in client.send_message(SendMessageRequest(message=message)):
                if event.WhichOneof("payload") == "task":
                    task = event.task
            assert task is not None and task.status.state == TaskState.TASK_STATE_COMPLETED
            await client.close()

        asyncio.run(asyncio.wait_for(go(), 60))
    finally:
        server.terminate()
        server.wait(10)
