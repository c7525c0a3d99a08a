"""Fixtures for the ACP client tests: scripted agents (SDK 0.12.1 and raw JSON) spawned per test."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.acp.client.client import AcpAgent, ClientOptions, Timeouts

AGENTS = Path(__file__).resolve().parent / "agents"
SDK_AGENT = [sys.executable, str(AGENTS / "sdk_agent.py")]
FAST = Timeouts(initialize=20, request=20, turn=30, cancel_grace=2, stop_grace=1, permission=10)


def group_gone(agent: AcpAgent, within: float = 10.0) -> bool:
    """Whether no process of the agent's group is left (waiting at most `within` s: a killed
    process closes its pipes a moment before it is gone)."""
    deadline = time.monotonic() + within
    while agent.process is not None and agent.process.group_alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def raw_agent(mode: str) -> list[str]:
    return [sys.executable, str(AGENTS / "raw_agent.py"), mode]


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    """spawn(argv, **kwargs) -> a started AcpAgent (closed, and checked for orphans, at the end)."""
    started: list[AcpAgent] = []

    def make(argv: list[str], **kwargs: Any) -> AcpAgent:
        kwargs.setdefault("timeouts", FAST)
        kwargs.setdefault("options", ClientOptions(terminal=True))
        kwargs.setdefault("log", lambda message: None)
        agent = AcpAgent.spawn(argv, cwd=str(tmp_path), **kwargs)
        started.append(agent)
        return agent

    yield make
    for agent in started:
        agent.close()
        assert agent.process is not None and group_gone(agent), "a process of the agent survived"
