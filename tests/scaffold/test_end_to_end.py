"""End to end, from a wheel: build it, install it into a fresh virtualenv, create a project, and
check the project with real peers (official mcp client, a2a-sdk client, skills-ref)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
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
from tests.scaffold.conftest import PYTEST_PIN, KitWheel

ROOT = Path(__file__).resolve().parents[2]


def run(cmd: list[str], cwd: Path, timeout: float = 600, **kw: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    return done


def readme_install_steps(project: Path) -> list[str]:
    """The commands under the generated README's "## Install" heading."""
    text = (project / "README.md").read_text(encoding="utf-8")
    block = text.split("## Install", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def installed(kit_wheel: KitWheel, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(python of a fresh venv with the project installed as its README says, the project).

    The kit's wheel goes into one fresh venv, which runs create-mcp-agent (--no-install); a second
    fresh venv installs the project the README's way with no package index at all: the kit can only
    come from the wheel the project carries (build tools and pytest come from a local wheelhouse).
    """
    work = tmp_path_factory.mktemp("e2e")
    wheel = kit_wheel.wheel
    offline = kit_wheel.offline()
    run([sys.executable, "-m", "venv", str(work / "maker")], cwd=work)
    run([str(work / "maker" / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", str(wheel)], cwd=work)
    started = time.perf_counter()
    made = run([str(work / "maker" / "bin" / "create-mcp-agent"), "demo-agent", "--no-install"], cwd=work)
    print(f"create-mcp-agent took {time.perf_counter() - started:.3f} s")
    assert "from a wheel file" in made.stdout and "not from PyPI" in made.stdout
    project = work / "demo-agent"
    assert (project / "wheels" / wheel.name).read_bytes() == wheel.read_bytes()
    run([sys.executable, "-m", "venv", str(work / "venv")], cwd=work)
    python = work / "venv" / "bin" / "python"
    steps = readme_install_steps(project)
    assert steps == [f'python -m pip install "./wheels/{wheel.name}"', "python -m pip install -e ."]
    for step in steps:
        args = shlex.split(step)
        assert args[:4] == ["python", "-m", "pip", "install"]
        run([str(python), "-m", "pip", "install", "-q", *offline, *args[4:]], cwd=project)
    run([str(python), "-m", "pip", "install", "-q", *offline, PYTEST_PIN], cwd=project)
    yield python, project


def test_wheel_ships_templates_and_no_top_level_tools_or_a2a(installed: tuple[Path, Path]) -> None:
    python, project = installed
    site = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=project
    ).stdout.strip()
    assert (Path(site) / "mcp_agent_kit" / "templates" / "project" / "validate.py").is_file()
    web = ROOT / "mcp_agent_kit" / "board" / "web"  # the web board's page, every file of it
    assert {p.name for p in (Path(site) / "mcp_agent_kit" / "board" / "web").iterdir()} == {
        p.name for p in web.iterdir()}
    top_level = {p.name for p in Path(site).iterdir()}
    assert "tools" not in top_level and "a2a" not in top_level and "tests" not in top_level


def test_validate_from_the_parent_directory_and_project_tests(installed: tuple[Path, Path]) -> None:
    python, project = installed
    done = run([str(python), "demo-agent/validate.py"], cwd=project.parent)
    lines = done.stdout.splitlines()
    assert lines and all(line.startswith("✓") for line in lines), done.stdout
    assert any(line.startswith("✓ Claude Desktop entry") for line in lines)
    unit = run([str(python), "-m", "unittest", "discover", "-s", "tests", "-p", "test_*.py", "-v"], cwd=project)
    assert "Ran 0 tests" not in unit.stderr and "OK" in unit.stderr
    run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project)
    run([str(python), "client_test.py"], cwd=project)


def test_the_claude_desktop_entry_starts_under_the_official_client(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    python, project = installed
    config = tmp_path / "claude_desktop_config.json"
    kit = python.parent / "mcp-agent-kit"
    run([str(kit), "install", "claude-desktop", "--name", "demo-agent", "--config", str(config), "--",
         str(python), "-m", "demo_agent.server"], cwd=project)
    entry = json.loads(config.read_text())["mcpServers"]["demo-agent"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env"),
                                   cwd=str(tmp_path))  # Claude Desktop starts it from elsewhere

    async def go() -> None:
        async with Client(params) as client:
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["text_stats"]
            result = await client.call_tool("text_stats", {"text": "one two"})
            assert result.structured_content == {"words": 2, "characters": 7}

    asyncio.run(asyncio.wait_for(go(), 60))


def test_skills_ref_accepts_the_skill(installed: tuple[Path, Path]) -> None:
    _, project = installed
    run([sys.executable, "-m", "skills_ref.cli", "validate", str(project / "skills" / "demo-agent")], cwd=project)


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
        [str(python), "-m", "demo_agent.a2a_server", "--http", f"127.0.0.1:{port}"],
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
