"""`mcp-agent-kit acp probe|prompt|chat -- CMD`, run as a user would, against the scripted agents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SDK_AGENT, raw_agent

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def kit(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", "acp", *argv], capture_output=True, text=True,
                          timeout=90, env=ENV, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if not line.startswith("[")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_probe_prints_the_initialize_answer() -> None:
    done = kit("probe", "--", *SDK_AGENT)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["protocolVersion"] == 1 and answer["authMethods"] == []
    assert answer["agentInfo"] == {"name": "sdk-scripted", "version": "0.12.1"}
    assert answer["agentCapabilities"]["loadSession"] is True


def test_probe_of_an_agent_that_dies_at_start_is_one_line_exit_1() -> None:
    done = kit("probe", "--", *raw_agent("exit_at_start"))
    assert done.returncode == 1
    assert "exited with code 2" in one_error_line(done) and "HOME is not set up" in done.stderr


def test_prompt_json_writes_inside_cwd_and_is_refused_outside(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    done = kit("prompt", "--json", "--cwd", str(tmp_path), f"write {target} hi", "--", *SDK_AGENT)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert set(answer) == {"sessionId", "stopReason", "text", "toolCalls", "permissions", "files_written"}
    assert answer["stopReason"] == "end_turn" and answer["files_written"] == [str(target)]
    assert target.read_text() == "hi"
    outside = tmp_path.parent / f"{tmp_path.name}-x.txt"
    done = kit("prompt", "--json", "--cwd", str(tmp_path), f"write {outside} hi", "--", *SDK_AGENT)
    assert json.loads(done.stdout)["files_written"] == [] and not outside.exists()


def test_approve_picks_options_by_kind_and_non_interactive_denies(tmp_path: Path) -> None:
    def permissions(*flags: str, kind: str = "edit") -> list[dict[str, str]]:
        done = kit("prompt", "--json", "--cwd", str(tmp_path), *flags, f"permission {kind}", "--", *SDK_AGENT)
        assert done.returncode == 0, done.stderr
        return [(p["outcome"], p["optionId"]) for p in json.loads(done.stdout)["permissions"]]

    assert permissions("--approve", "all") == [("selected", "opt-0-allow_once")]
    assert permissions("--approve", "none") == [("selected", "opt-2-reject_once")]
    assert permissions("--approve", "reads", kind="fetch") == [("selected", "opt-0-allow_once")]
    assert permissions("--approve", "reads", kind="execute") == [("selected", "opt-2-reject_once")]
    assert permissions() == [("selected", "opt-2-reject_once")]  # no terminal: deny


def test_prompt_streams_text_to_stdout_and_tool_calls_to_stderr(tmp_path: Path) -> None:
    done = kit("prompt", "--cwd", str(tmp_path), "--approve", "all", "updates", "--", *SDK_AGENT)
    assert done.returncode == 0 and done.stdout == "done\n"
    assert "[tool] Read a file (read, pending)" in done.stderr and "[plan] step one [in_progress]" in done.stderr


def test_exit_codes_refusal_crash_and_usage(tmp_path: Path) -> None:
    assert kit("prompt", "--cwd", str(tmp_path), "refuse", "--", *SDK_AGENT).returncode == 3
    crashed = kit("prompt", "--cwd", str(tmp_path), "crash", "--", *SDK_AGENT)
    assert crashed.returncode == 1 and "fatal error mid-turn" in one_error_line(crashed)
    orphan = kit("prompt", "--cwd", str(tmp_path), "go", "--", *raw_agent("orphan"))
    assert orphan.returncode == 1 and "exited with code 4" in one_error_line(orphan)
    at_start = kit("prompt", "--cwd", str(tmp_path), "go", "--", *raw_agent("orphan_at_start"))
    assert at_start.returncode == 1 and "exited with code 5" in one_error_line(at_start)
    assert "sandbox failed" in at_start.stderr
    missing = kit("prompt", "hi")
    assert missing.returncode == 2 and "put it after --" in one_error_line(missing)
    assert kit("prompt", "--env", "NOEQUALS", "hi", "--", *SDK_AGENT).returncode == 2
    absent = kit("probe", "--", str(tmp_path / "no-such-agent"))
    assert absent.returncode == 1 and "cannot start" in one_error_line(absent)


def test_session_id_continues_a_session(tmp_path: Path) -> None:
    first = json.loads(kit("prompt", "--json", "--cwd", str(tmp_path), "one", "--", *SDK_AGENT).stdout)
    again = kit("prompt", "--json", "--cwd", str(tmp_path), "--session-id", first["sessionId"], "two",
                "--", *SDK_AGENT)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["sessionId"] == first["sessionId"]


def test_sigint_cancels_the_turn_exit_3(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", "acp", "prompt", "--cwd", str(tmp_path), "slow",
                             "--", *SDK_AGENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                            stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None and proc.stdout.read(7) == b"working"  # the turn is running
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 3, err
    assert b"cancelled" in err and b"Traceback" not in err


def test_chat_runs_several_turns(tmp_path: Path) -> None:
    done = kit("chat", "--cwd", str(tmp_path), "--", *SDK_AGENT, stdin="hello\nagain\n\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "echo: hello\necho: again\n"
    assert done.stderr.count("[turn] end_turn") == 2


def test_auth_required_names_the_fix_and_auth_with_env_works(tmp_path: Path) -> None:
    refused = kit("prompt", "--cwd", str(tmp_path), "--env", "SDK_AGENT_AUTH=1", "hi", "--", *SDK_AGENT)
    assert refused.returncode == 1
    assert "pass --auth METHOD_ID (the agent offers ['key'])" in one_error_line(refused)
    done = kit("prompt", "--json", "--cwd", str(tmp_path), "--env", "SDK_AGENT_AUTH=1", "--auth", "key", "hi",
               "--", *SDK_AGENT)
    assert done.returncode == 0 and json.loads(done.stdout)["text"] == "echo: hi"


def test_without_dashes_a_trailing_command_is_the_agents_and_anything_else_gets_the_hint(tmp_path: Path) -> None:
    done = kit("prompt", "--json", "--cwd", str(tmp_path), "hello", *SDK_AGENT)  # as `probe CMD ARGS` takes it
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stopReason"] == "end_turn"
    forgot = kit("prompt", "gemini", "--acp")  # the text forgotten too: ambiguous, so one line with the fix
    assert forgot.returncode == 2
    line = one_error_line(forgot)
    assert "unrecognized arguments: --acp" in line and "put the agent's command after --" in line
    assert "acp prompt [OPTIONS] TEXT -- CMD [ARGS...]" in line


def test_cwd_moves_the_session_not_a_relative_command(tmp_path: Path) -> None:
    """`--cwd DIR -- python agents/x.py`: the script is the one here, as typed; the session runs in DIR."""
    here = Path(SDK_AGENT[1]).parent.parent  # tests/acp, so the agent is agents/sdk_agent.py from here
    done = subprocess.run([sys.executable, "-m", "mcp_agent_kit", "acp", "prompt", "--json", "--cwd", str(tmp_path),
                           f"write {tmp_path / 'made.txt'} hi", "--", sys.executable, "agents/sdk_agent.py"],
                          capture_output=True, text=True, timeout=90, env=ENV, cwd=here, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "made.txt").read_text() == "hi"


def test_anchored_makes_relative_files_absolute_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_agent_kit.process import anchored

    (tmp_path / "agent.py").write_text("")
    (tmp_path / "node").write_text("")  # a file named like the program: the program is still looked up on PATH
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "elsewhere"
    command = ["node", "agent.py", "--flag", "missing.py", "/abs/x.py", "-"]
    assert anchored(command, str(other)) == ["node", str(tmp_path / "agent.py"), "--flag", "missing.py",
                                             "/abs/x.py", "-"]
    assert anchored(command, None) == command
    assert anchored(command, str(tmp_path)) == command  # the same directory: nothing moves
