"""docs/acp.md stays true: its JSON parses, its Python sample runs, and the wire messages it shows
as sent by the client (`→`) have the shape of what the client really sends to an SDK agent."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.client import AcpAgent
from mcp_agent_kit.acp.client.permissions import AllowAll, Ask

from .conftest import FAST, SDK_AGENT

DOC = Path(__file__).resolve().parents[2] / "docs" / "acp.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)


def blocks(lang: str) -> list[tuple[str, str]]:
    """(caption, body) of every fenced block in `lang`; the caption is the nearest non-blank line above."""
    text = DOC.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) == lang:
            above = [line for line in text[: match.start()].splitlines() if line.strip() and line != "```"]
            found.append((above[-1] if above else "", match.group(2)))
    return found


def shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def test_every_json_block_parses_and_the_writing_agents_heading_is_there() -> None:
    assert len(blocks("json")) >= 10
    for _, body in blocks("json"):
        json.loads(body)
    assert "\n## Writing an ACP agent\n" in DOC.read_text(encoding="utf-8")


def test_the_python_sample_runs(tmp_path: Path, monkeypatch: Any) -> None:
    (sample,) = (body for _, body in blocks("python"))
    sample = sample.replace('AGENT = ["gemini", "--acp"]', f"AGENT = {SDK_AGENT!r}")
    sample = sample.replace('project = "."', f"project = {str(tmp_path)!r}")
    assert str(tmp_path) in sample and "sdk_agent.py" in sample
    namespace: dict[str, Any] = {"__name__": "docs_acp"}
    exec(compile(sample, "docs/acp.md", "exec"), namespace)
    assert namespace["result"].stop_reason == "end_turn" and namespace["result"].text == "echo: hello"


def test_the_messages_shown_as_sent_are_what_the_client_sends(tmp_path: Path) -> None:
    sent: list[dict[str, Any]] = []
    with AcpAgent.spawn(SDK_AGENT, cwd=str(tmp_path), policy=AllowAll(), timeouts=FAST,
                        log=lambda message: None) as agent:
        agent.connection.trace = lambda direction, message: sent.append(message) if direction == "out" else None
        agent.initialize()
        session = agent.new_session(str(tmp_path))
        session.run("permission edit")
        session.run(f"write {tmp_path / 'notes.txt'} hello")
        for event in session.prompt("slow"):
            if isinstance(event, ev.AgentMessageChunk):
                session.cancel()
        agent.policy = Ask(lambda request: threading.Event().wait(30) or None)  # a question nobody answers
        for event in session.prompt("permission edit"):
            if isinstance(event, ev.ToolCall):
                session.cancel()
        assert session.result is not None and session.result.stop_reason == "cancelled"
    real = [shape(message) for message in sent]
    shown = [json.loads(body) for caption, body in blocks("json") if caption.startswith("→")]
    assert len(shown) >= 6
    for message in shown:
        assert shape(message) in real, f"docs/acp.md shows a message the client does not send: {message}"
    cancelled = {"outcome": {"outcome": "cancelled"}}
    assert {"jsonrpc": "2.0", "id": 0, "result": cancelled} in shown
