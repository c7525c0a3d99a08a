"""Our own client, through its public CLI (`mcp-agent-kit acp prompt`), drives examples/acp_echo_agent.py:
a turn approved by policy writes the file inside --cwd, a turn refused by policy does not, and a NEW
agent process continues the session with --session-id (session/load) and answers from its history."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "acp_echo_agent.py"


def acp_prompt(work: Path, sessions: Path, text: str, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mcp_agent_kit", "acp", "prompt", "--json", "--cwd", str(work),
               "--env", f"ACP_ECHO_AGENT_DIR={sessions}", "--timeout", "30", *options, text,
               "--", sys.executable, str(EXAMPLE)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def result_of(run: subprocess.CompletedProcess[str]) -> Any:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_our_client_drives_the_echo_agent_and_continues_the_session_in_a_new_process(tmp_path: Path) -> None:
    work, sessions = tmp_path / "work", tmp_path / "sessions"
    work.mkdir()
    first = result_of(acp_prompt(work, sessions, "hello from our client", "--approve", "all"))
    assert first["stopReason"] == "end_turn"
    assert first["text"] == "Echo: hello from our client\nFile: written."
    assert first["toolCalls"] == [{"toolCallId": "call_1", "title": "Write echo.txt", "kind": "edit",
                                   "status": "completed"}]
    assert first["permissions"] == [{"toolCallId": "call_1", "outcome": "selected", "optionId": "allow-once"}]
    assert first["files_written"] == [str(work / "echo.txt")]
    assert (work / "echo.txt").read_text(encoding="utf-8") == "hello from our client\n"
    sid = first["sessionId"]
    assert (sessions / f"{sid}.json").is_file()

    refused = result_of(acp_prompt(work, sessions, "do not write", "--approve", "none", "--session-id", sid))
    assert refused["sessionId"] == sid and refused["text"].endswith("File: refused.")
    assert refused["permissions"] == [{"toolCallId": "call_1", "outcome": "selected", "optionId": "reject-once"}]
    assert refused["files_written"] == [] and refused["toolCalls"][0]["status"] == "failed"
    assert (work / "echo.txt").read_text(encoding="utf-8") == "hello from our client\n"

    recalled = result_of(acp_prompt(work, sessions, "what did I say before?", "--session-id", sid))
    assert recalled["sessionId"] == sid
    assert recalled["text"].endswith("Before, you said: do not write")  # a load replays, then the turn answers


def test_config_options_are_set_before_the_turn_and_unknown_ones_are_one_line(tmp_path: Path) -> None:
    work, sessions = tmp_path / "work", tmp_path / "sessions"
    work.mkdir()
    shouted = result_of(acp_prompt(work, sessions, "quiet words", "--approve", "none", "--config", "case=upper"))
    assert shouted["text"].startswith("Echo: QUIET WORDS")
    for options, says in ((("--mode", "fast"), "unknown config option 'mode'"),
                          (("--config", "nonsense"), "--config wants ID=VALUE")):
        run = acp_prompt(work, sessions, "x", "--approve", "none", *options)
        assert run.returncode != 0 and says in run.stderr and run.stderr.count("\n") == 1, run.stderr
