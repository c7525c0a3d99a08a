"""A real ACP agent, Qwen Code (npm @qwen-code/qwen-code, pinned), driven offline through the public CLI.

Qwen talks to `tests/acp/fake_openai.py` on loopback (OPENAI_BASE_URL), so every turn is scripted by
the prompt text and nothing leaves the machine. Each test runs `python -m mcp_agent_kit acp ...` as
written in issue #15 item 4 and checks what the CLI reports, what reached the disk and what the
agent told the model. Every test ends by checking that no process of the agent is left.

Qwen is installed as tests/acp/real_qwen.py says (ACP_QWEN_DIR, else `.venv-acp-qwen/` at the repository
root). A missing Node or a failed install FAILS the tests: a pinned peer is never a silent skip.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.net import wait_until

from .fake_openai import SLOW_CHUNKS, FakeOpenAI, last_user_text, user_texts
from .real_qwen import AGENT_ARGS, QUIET_SETTINGS, VERSION, agent_processes, install_qwen

RUN_LIMIT = 90.0  # seconds one CLI run may take before the test fails (the CLI's own --timeout is 60)


@pytest.fixture(scope="session")
def qwen_bin() -> Path:
    return install_qwen()


class Running:
    """A CLI run in the background, both pipes drained as they come (stdout read a character at a time)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [threading.Thread(target=self._drain, args=(pipe, into), daemon=True)
                         for pipe, into in ((proc.stdout, self.out), (proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _drain(pipe: Any, into: list[str]) -> None:
        into.extend(iter(lambda: pipe.read(1), ""))

    def finish(self) -> tuple[int, str, str]:
        """Exit code, stdout and stderr once the run has ended (bounded)."""
        code = self.proc.wait(RUN_LIMIT)
        for reader in self._readers:
            reader.join(5)
        return code, "".join(self.out), "".join(self.err)


@dataclass
class Sandbox:
    """A throwaway HOME and cwd, the fake model, and the CLI command lines that use them."""

    qwen: Path
    home: Path
    cwd: Path
    fake: FakeOpenAI
    marker: str

    def env_flags(self) -> list[str]:
        pairs = {"HOME": str(self.home), "OPENAI_API_KEY": "x", "OPENAI_BASE_URL": self.fake.base_url,
                 "OPENAI_MODEL": "fake-model", "NO_COLOR": "1", "ACP_TEST_MARKER": self.marker}
        return [flag for key, value in pairs.items() for flag in ("--env", f"{key}={value}")]

    def process_env(self) -> dict[str, str]:
        """The CLI's own environment: qwen's bin directory on PATH, the throwaway HOME."""
        path = f"{self.qwen.parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "PATH": path, "HOME": str(self.home)}

    def prompt_args(self, text: str, *flags: str) -> list[str]:
        return [sys.executable, "-m", "mcp_agent_kit", "acp", "prompt", "--cwd", str(self.cwd), "--auth", "openai",
                *self.env_flags(), "--timeout", "60", *flags, text, "--", str(self.qwen), *AGENT_ARGS]

    def run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, timeout=RUN_LIMIT, cwd=self.home,
                              env=self.process_env())

    def prompt_json(self, text: str, *flags: str, code: int = 0) -> dict[str, Any]:
        done = self.run(self.prompt_args(text, "--json", *flags))
        assert done.returncode == code, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
        out: dict[str, Any] = json.loads(done.stdout)
        return out

    def start(self, args: list[str]) -> Running:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.home,
                                env=self.process_env())
        return Running(proc)

    def tool_results(self) -> list[list[dict[str, Any]]]:
        """The messages of every model request that carried a tool's result last."""
        return [list(body["messages"]) for body in self.fake.completions()
                if (body.get("messages") or [{}])[-1].get("role") == "tool"]

    def completion_for(self, asked: str) -> list[dict[str, Any]]:
        """The messages of the model request made for the user prompt `asked`."""
        for body in self.fake.completions():
            if asked in last_user_text(body.get("messages") or []):
                return list(body["messages"])
        raise AssertionError(f"the model was never asked {asked!r}: {self.fake.completions()}")


@pytest.fixture
def sandbox(qwen_bin: Path, tmp_path: Path) -> Iterator[Sandbox]:
    home, cwd = tmp_path / "home", tmp_path / "work"
    (home / ".qwen").mkdir(parents=True)
    cwd.mkdir()
    (home / ".qwen" / "settings.json").write_text(json.dumps(QUIET_SETTINGS))
    fake = FakeOpenAI(cwd=cwd).start()
    box = Sandbox(qwen=qwen_bin, home=home, cwd=cwd, fake=fake, marker=uuid.uuid4().hex)
    try:
        yield box
    finally:
        fake.stop()
    wait_until(lambda: not agent_processes(box.marker), 15)
    left = agent_processes(box.marker)
    for pid in left:  # clean up before failing, so one broken run does not leak into the next
        os.kill(pid, signal.SIGKILL)
    assert not left, f"agent processes left behind: {left}"


def test_probe_reports_qwen(sandbox: Sandbox) -> None:
    done = sandbox.run([sys.executable, "-m", "mcp_agent_kit", "acp", "probe", *sandbox.env_flags(),
                        "--", "qwen", "--acp"])
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["protocolVersion"] == 1
    assert info["agentInfo"]["name"] == "qwen-code"
    assert info["agentInfo"]["version"] == VERSION
    assert [method["id"] for method in info["authMethods"]] == ["openai"]
    assert info["agentCapabilities"]["loadSession"] is True


def test_turn_with_permission_and_file_write(sandbox: Sandbox) -> None:
    asked = "WRITE notes.txt written through the client"
    out = sandbox.prompt_json(asked, "--approve", "all")
    target = sandbox.cwd / "notes.txt"
    assert out["stopReason"] == "end_turn"
    before, _, after = out["text"].partition("The tool said: ")  # the model's messages before and after the tool
    assert "Writing it now." in before and "notes.txt" in after, out["text"]
    # Qwen's options are proceed_always (allow_always), proceed_once (allow_once), cancel (reject_once)
    [call_id] = sandbox.fake.tool_call_ids
    assert out["permissions"] == [{"toolCallId": call_id, "outcome": "selected", "optionId": "proceed_once"}]
    assert [(c["toolCallId"], c["kind"], c["status"]) for c in out["toolCalls"]] == [(call_id, "edit", "completed")]
    assert [(sandbox.cwd / name).resolve() for name in out["files_written"]] == [target.resolve()]
    assert target.read_text() == "written through the client"
    [after] = sandbox.tool_results()  # the model saw the tool's result before its last reply
    assert asked in last_user_text(after) and "notes.txt" in str(after[-1]["content"])


@pytest.mark.parametrize("policy", ["none", "reads"])  # a write is not a read-only tool kind
def test_turn_with_permission_refused(sandbox: Sandbox, policy: str) -> None:
    out = sandbox.prompt_json("WRITE refused.txt never written", "--approve", policy)
    assert out["stopReason"] == "end_turn"  # Qwen ends the turn normally after a refused tool call
    [call_id] = sandbox.fake.tool_call_ids
    assert out["permissions"] == [{"toolCallId": call_id, "outcome": "selected", "optionId": "cancel"}]
    assert [(c["toolCallId"], c["kind"], c["status"]) for c in out["toolCalls"]] == [(call_id, "edit", "failed")]
    assert out["files_written"] == []
    assert not (sandbox.cwd / "refused.txt").exists()


def test_write_outside_cwd_is_refused_by_the_client(sandbox: Sandbox) -> None:
    # Qwen asks, and once allowed sends fs/write_text_file for <cwd>/../escaped.txt as it is (".." kept)
    out = sandbox.prompt_json("WRITE ../escaped.txt should never land", "--approve", "all")
    [call_id] = sandbox.fake.tool_call_ids
    assert out["stopReason"] == "end_turn"
    assert out["permissions"] == [{"toolCallId": call_id, "outcome": "selected", "optionId": "proceed_once"}]
    assert [(c["toolCallId"], c["status"]) for c in out["toolCalls"]] == [(call_id, "failed")]
    assert out["files_written"] == []
    assert not (sandbox.cwd.parent / "escaped.txt").exists()
    [told] = sandbox.tool_results()  # the refusal reached the model as the tool's result
    assert "outside" in str(told[-1]["content"])


def _interrupt_when_streaming(sandbox: Sandbox, run: Running) -> tuple[int, str, str]:
    """SIGINT the CLI once the fake model is part-way through its slow reply; its exit code and output."""
    if not sandbox.fake.slow_streaming.wait(RUN_LIMIT):
        run.proc.kill()
        raise AssertionError(f"the slow reply never started: {run.finish()}")
    groups = set(agent_processes(sandbox.marker).values())
    assert groups and os.getpgid(run.proc.pid) not in groups, "the agent runs in its own process group"
    run.proc.send_signal(signal.SIGINT)
    finished = run.finish()
    assert wait_until(lambda: not agent_processes(sandbox.marker), 15), "the agent's process group outlived the CLI"
    return finished


def test_cancel_by_sigint(sandbox: Sandbox) -> None:
    run = sandbox.start(sandbox.prompt_args("SLOW reply please", "--json", "--approve", "all"))
    code, stdout, stderr = _interrupt_when_streaming(sandbox, run)
    assert code == 3, f"exit {code}: {stderr}"
    out = json.loads(stdout)
    assert out["stopReason"] == "cancelled"
    # what Qwen relayed before the cancel, in order, and not the whole reply (the next test waits for text)
    ticks = "".join(f"tick {n} " for n in range(SLOW_CHUNKS))
    assert ticks.startswith(out["text"]) and out["text"] != ticks


def test_text_streams_to_stdout_as_it_arrives(sandbox: Sandbox) -> None:
    run = sandbox.start(sandbox.prompt_args("SLOW reply please", "--approve", "all"))
    streamed = wait_until(lambda: "tick 1 " in "".join(run.out), RUN_LIMIT)
    code, stdout, stderr = _interrupt_when_streaming(sandbox, run)
    assert streamed, f"no text streamed while the turn ran; stdout {stdout!r}, stderr {stderr!r}"
    assert code == 3, f"exit {code}: {stderr}"
    assert stdout.startswith("tick 0 tick 1 ")


def test_agent_killed_mid_turn_is_one_clear_error(sandbox: Sandbox) -> None:
    """A crash mid-turn (every agent process SIGKILLed while the model streams): exit 1, one stderr line."""
    run = sandbox.start(sandbox.prompt_args("SLOW reply please", "--json", "--approve", "all"))
    assert sandbox.fake.slow_streaming.wait(RUN_LIMIT), f"the slow reply never started: {run.finish()}"
    for pid in agent_processes(sandbox.marker):
        os.kill(pid, signal.SIGKILL)
    code, stdout, stderr = run.finish()
    assert code == 1 and stdout == "", f"exit {code}: {stdout!r}"
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr
    assert "SIGKILL" in stderr, stderr  # the error names what happened to the agent


def test_session_load_in_a_new_process(sandbox: Sandbox) -> None:
    first = sandbox.prompt_json("REMEMBER the word pelican", "--approve", "none")
    session = first["sessionId"]
    assert first["stopReason"] == "end_turn" and first["text"] == "Hello from the fake model."
    again = sandbox.prompt_json("what was the word?", "--approve", "none", "--session-id", session)
    assert again["sessionId"] == session and again["stopReason"] == "end_turn"
    # the reloaded agent carried the first turn into the model's context
    history = sandbox.completion_for("what was the word?")
    assert any("REMEMBER the word pelican" in text for text in user_texts(history[:-1]))
    assert any(m["role"] == "assistant" and "Hello from the fake model." in str(m.get("content")) for m in history)
