"""Unit checks of the sans-IO parts: update parsing, path confinement, terminals, the stderr ring."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.cli import TerminalAsk
from mcp_agent_kit.acp.client.files import Roots, read_text_file, write_text_file
from mcp_agent_kit.acp.client.permissions import PermissionOption, PermissionRequest
from mcp_agent_kit.acp.client.terminals import Terminals
from mcp_agent_kit.acp.connection import RpcError
from mcp_agent_kit.process import PeerProcess, minimal_environment


def test_unknown_and_malformed_updates_pass_through() -> None:
    unknown = ev.parse_update({"sessionId": "s", "update": {"sessionUpdate": "compaction_update", "x": 1}})
    assert isinstance(unknown, ev.UnknownUpdate) and unknown.raw == {"sessionUpdate": "compaction_update", "x": 1}
    broken = ev.parse_update({"sessionId": "s", "update": {"sessionUpdate": "tool_call"}})
    assert isinstance(broken, ev.UnknownUpdate) and "malformed tool_call" in broken.problem
    assert isinstance(ev.parse_update([1]), ev.UnknownUpdate)
    chunk = ev.parse_update({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                                                          "content": {"type": "image", "data": "", "mimeType": "x"}}})
    assert isinstance(chunk, ev.AgentMessageChunk) and chunk.text == "" and chunk.message_id == "m"


def test_roots_confine_reads_and_writes(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    roots = Roots(str(tmp_path / "cwd"), [str(extra)])
    (tmp_path / "cwd").mkdir()
    path = write_text_file(roots, {"path": str(extra / "a.txt"), "content": "one\ntwo\nthree\n"})
    assert read_text_file(roots, {"path": path, "line": 2, "limit": 1}) == {"content": "two\n"}
    with pytest.raises(RpcError, match="outside"):
        write_text_file(roots, {"path": str(tmp_path / "b.txt"), "content": "x"})
    os.mkfifo(tmp_path / "cwd" / "fifo")
    with pytest.raises(RpcError, match="fifo"):  # ENXIO: no reader, and no hang
        write_text_file(roots, {"path": str(tmp_path / "cwd" / "fifo"), "content": "x"})
    with pytest.raises(RpcError, match="write limit"):
        write_text_file(roots, {"path": str(extra / "big.txt"), "content": "x" * 20}, limit=10)
    (tmp_path / "cwd" / "out").symlink_to(tmp_path / "b.txt")
    with pytest.raises(RpcError, match="outside"):
        write_text_file(roots, {"path": str(tmp_path / "cwd" / "out"), "content": "x"})
    assert not (tmp_path / "b.txt").exists()


def test_terminals_are_confined_bounded_and_released(tmp_path: Path) -> None:
    roots = Roots(str(tmp_path))
    terminals = Terminals(output_limit=10, max_terminals=1, wait_limit=10)
    with pytest.raises(RpcError, match="outside"):
        terminals.create(roots, {"command": "pwd", "cwd": "/"})
    made = terminals.create(roots, {"command": sys.executable, "args": ["-c", "print('é' * 20)"]})
    with pytest.raises(RpcError, match="at most 1"):
        terminals.create(roots, {"command": "true"})
    assert terminals.wait_for_exit(made) == {"exitCode": 0, "signal": None}
    output = terminals.output(made)
    assert output["truncated"] is True and output["output"].endswith("é\n") and "\ufffd" not in output["output"]
    terminals.release(made)
    with pytest.raises(RpcError, match="no such terminal"):
        terminals.output(made)
    sleeper = terminals.create(roots, {"command": "sleep", "args": ["30"]})
    terminals.kill(sleeper)
    assert terminals.output(sleeper)["exitStatus"] == {"exitCode": None, "signal": "SIGKILL"}
    terminals.close_all()


def test_the_environment_is_minimal_and_stderr_is_a_bounded_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "s3cret")
    assert "SECRET_TOKEN" not in minimal_environment() and minimal_environment({"K": "v"})["K"] == "v"
    process = PeerProcess([sys.executable, "-c", "import sys; sys.stderr.write('x' * 100000 + 'TAIL')"],
                           stderr_limit=1000)
    process.popen.wait(10)
    process.stop(1)
    assert process.stderr_text().endswith("TAIL") and process.stderr_dropped > 0
    assert "exited with code 0" in process.describe_exit()


def test_the_terminal_question_chooses_by_number() -> None:
    options = (PermissionOption("a", "Allow", "allow_once"), PermissionOption("r", "Reject", "reject_once"))
    request = PermissionRequest("s", "t1", "Write x", "edit", {}, options, {})
    shown: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            shown.append(text)

        def flush(self) -> None:
            pass

    assert TerminalAsk(Out(), lambda: "2\n")(request) == options[1]  # type: ignore[arg-type]
    assert TerminalAsk(Out(), lambda: "maybe\n")(request) is None  # type: ignore[arg-type]
    assert "1) Allow [allow_once]" in "".join(shown)
