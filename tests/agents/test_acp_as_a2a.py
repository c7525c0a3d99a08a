"""Item 9: `python -m mcp_agent_kit a2a --acp -- CMD --port P` serves the ACP echo agent as an A2A v1.0 agent,
driven by the official a2a-sdk 1.3.0 client (streaming), including a permission question and a cancel."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

from tests.agents.conftest import ROOT
from tests.net import free_port, wait_listening

ECHO = ROOT / "examples" / "acp_echo_agent.py"
SESSIONS = "home/.cache/mcp-agent-kit/acp-echo-agent/sessions"  # the echo agent's default, under HOME


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = free_port()
    work = tmp_path / "repo"
    work.mkdir()
    # the agent gets a minimal environment (HOME passes through): its sessions land under this test's HOME
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", "a2a", "--acp", "--cwd", str(work), "--",
                             sys.executable, str(ECHO), "--port", str(port)],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}", work
    finally:
        proc.terminate()
        proc.wait(10)


def _msg(text: str, task_id: str = "", context_id: str = "") -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)], task_id=task_id,
                   context_id=context_id)


async def _send(client: Any, message: Message) -> tuple[Any, str]:
    """(the task's last state, the streamed artifact text)."""
    state, task, text = None, None, ""
    async for event in client.send_message(SendMessageRequest(message=message)):
        kind = event.WhichOneof("payload")
        if kind == "task":
            task, state = event.task, event.task.status.state
        elif kind == "status_update":
            state = event.status_update.status.state
        elif kind == "artifact_update":
            parts = "".join(p.text for p in event.artifact_update.artifact.parts)
            text = text + parts if event.artifact_update.append else parts
    assert task is not None
    return (task, TaskState.Name(state)), text


async def _flow(base: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as hc:
        card = await A2ACardResolver(hc, base).get_agent_card()
    client = await create_client(card, client_config=ClientConfig(streaming=True))
    (task, paused), said = await _send(client, _msg("hello there"))
    (_, done), more = await _send(client, _msg("allow-once", task.id, task.context_id))
    (_, recalled), recall = await _send(client, _msg("what did I say before?", context_id=task.context_id))
    (mine, _), counted = await _send(client, _msg("turns?", context_id="client-chosen-1"))
    await client.close()
    return {"card": card, "paused": paused, "said": said, "done": done, "more": more, "recalled": recalled,
            "recall": recall, "context": task.context_id, "mine": mine.context_id, "counted": counted}


def test_the_a2a_sdk_client_drives_an_acp_agent_with_a_permission_question(bridge: tuple[str, Path]) -> None:
    base, work = bridge
    got = asyncio.run(_flow(base))
    assert got["card"].name == "acp-echo-agent" and got["card"].capabilities.streaming
    assert got["paused"] == "TASK_STATE_INPUT_REQUIRED" and got["said"] == "Echo: hello there"
    assert got["done"] == "TASK_STATE_COMPLETED" and got["more"].endswith("\nFile: written.")
    assert (work / "echo.txt").read_text() == "hello there\n"
    assert got["recalled"] == "TASK_STATE_COMPLETED" and got["recall"] == "Before, you said: hello there"
    # no contextId sent: the context's id is the ACP session's id (the echo agent keeps <sessionId>.json)
    sessions = {p.stem for p in (work.parent / SESSIONS).glob("*.json")}
    assert got["context"] in sessions
    # a contextId the client chose and the bridge never saw: kept, and mapped to a new ACP session
    assert got["mine"] == "client-chosen-1" and got["counted"] == "Turns so far: 0"
    assert len(sessions) == 2 and "client-chosen-1" not in sessions


async def _cancel(base: str) -> tuple[str, ...]:
    async with httpx.AsyncClient() as hc:
        card = await A2ACardResolver(hc, base).get_agent_card()
    client = await create_client(card, client_config=ClientConfig(streaming=True))
    other = await create_client(card, client_config=ClientConfig(streaming=False))
    task_id, context_id, state = "", "", ""
    async for event in client.send_message(SendMessageRequest(message=_msg("/wait"))):
        kind = event.WhichOneof("payload")
        if kind == "task":
            task_id, context_id = event.task.id, event.task.context_id
        elif kind == "artifact_update" and "Waiting" in "".join(p.text for p in event.artifact_update.artifact.parts):
            cancelled = await other.cancel_task(CancelTaskRequest(id=task_id))
            state = TaskState.Name(cancelled.status.state)
            break
    fetched = await other.get_task(GetTaskRequest(id=task_id))
    # the ACP prompt really ended (session/cancel reached the agent): the session takes the next turn
    for _ in range(50):
        (_, after), text = await _send(client, _msg("what did I say before?", context_id=context_id))
        if after == "TASK_STATE_COMPLETED":
            break
        await asyncio.sleep(0.1)
    await client.close()
    await other.close()
    return state, TaskState.Name(fetched.status.state), after, text


def test_cancelling_the_task_sends_session_cancel(bridge: tuple[str, Path]) -> None:
    base, _ = bridge
    assert asyncio.run(_cancel(base)) == ("TASK_STATE_CANCELED", "TASK_STATE_CANCELED", "TASK_STATE_COMPLETED",
                                          "Before, you said: /wait")


def test_cli_mistakes_are_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "mcp_agent_kit", "a2a", "--acp", "--port", "0"], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and "after --" in run.stderr and "Traceback" not in run.stderr
    run = subprocess.run([sys.executable, "-m", "mcp_agent_kit", "a2a", "--acp", "--", str(tmp_path / "nope"),
                          "--port", "0"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert run.returncode != 0 and "cannot start the ACP agent" in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


async def _words_then_questions(base: str, turns: int) -> list[tuple[str, str]]:
    async with httpx.AsyncClient() as hc:
        card = await A2ACardResolver(hc, base).get_agent_card()
    client = await create_client(card, client_config=ClientConfig(streaming=True))
    seen = []
    context = ""
    for n in range(turns):
        (task, paused), said = await _send(client, _msg(f"turn {n}", context_id=context))
        context = task.context_id
        seen.append((paused, said))
        await _send(client, _msg("allow-once", task.id, context))
    await client.close()
    return seen


def test_what_the_agent_said_before_its_question_arrives_before_input_required(
        bridge: tuple[str, Path]) -> None:
    """Every update sent before `session/request_permission` reaches the A2A stream before INPUT_REQUIRED."""
    base, _ = bridge
    seen = asyncio.run(_words_then_questions(base, 50))
    assert seen == [("TASK_STATE_INPUT_REQUIRED", f"Echo: turn {n}") for n in range(50)]
