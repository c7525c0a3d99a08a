"""docs/acp-real-agents.md stays true to what tests/acp/test_real_qwen.py runs.

Every ```json block parses; the Qwen Code pin, its start command and the quiet settings the page
shows are the ones the real-agent tests use; the recorded turn is a well-formed exchange (each
agent-to-client request answered by the client with its id) that ends with the prompt's answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .real_qwen import AGENT_ARGS, PIN, QUIET_SETTINGS, VERSION

PAGE = Path(__file__).resolve().parents[2] / "docs" / "acp-real-agents.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)


def json_blocks() -> list[Any]:
    return [json.loads(body) for lang, body in FENCE.findall(PAGE.read_text(encoding="utf-8")) if lang == "json"]


def test_every_json_block_parses() -> None:
    assert len(json_blocks()) > 10


def test_pin_command_and_settings_match_the_tests() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert PIN in text and f"`@qwen-code/qwen-code` {VERSION}" in text
    assert f"`qwen {' '.join(AGENT_ARGS)}`" in text
    assert QUIET_SETTINGS in json_blocks()


def test_recorded_turn_is_a_complete_exchange() -> None:
    wire = [block for block in json_blocks() if isinstance(block, dict) and block.get("jsonrpc") == "2.0"]
    methods = [message.get("method") for message in wire]
    assert methods[:5:2] == ["initialize", "authenticate", "session/new"]
    assert {"session/prompt", "session/update", "session/request_permission", "fs/write_text_file"} <= set(methods)
    prompt = next(m for m in wire if m.get("method") == "session/prompt")
    assert wire[-1]["id"] == prompt["id"] and wire[-1]["result"]["stopReason"] == "end_turn"
    for at, message in enumerate(wire):  # requests from the agent are answered, with their own ids, next
        if message.get("method") in ("session/request_permission", "fs/write_text_file"):
            assert wire[at + 1]["id"] == message["id"] and "method" not in wire[at + 1]
