"""`install claude-desktop` / `install claude-code` write nothing that cannot start.

Each refusal (a program not on PATH, a script that never calls `server.run()`, a syntax error, an
import error) is exit 1 with one line naming the problem, and the config stays byte-identical (or
absent). A bare program name is written as its absolute path; servers of both eras pass the check
(the kit's own, and the official 1.x SDK's, which knows only `initialize`); `--no-check` writes
anyway and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_agent_kit.scaffold import install
from mcp_agent_kit.scaffold.start_check import python_error, start_problem

ROOT = Path(__file__).resolve().parents[2]
METRICS = ROOT / "examples" / "metrics_server.py"
ORIGINAL = b'{\n  "mcpServers": {"other": {"command": "/bin/true", "args": []}},\n  "theme": "dark"\n}\n'


def kit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", "install", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "claude_desktop_config.json"
    path.write_bytes(ORIGINAL)
    return path


def desktop(config: Path, *command: str) -> list[str]:
    return ["claude-desktop", "--name", "demo", "--config", str(config), "--", *command]


def refused(done: subprocess.CompletedProcess[str], config: Path, *said: str) -> None:
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(text in done.stderr for text in said), done.stderr
    assert config.read_bytes() == ORIGINAL and not list(config.parent.glob("*.bak"))
    assert done.stdout == ""


def test_a_program_that_is_not_on_path_is_refused(config: Path, tmp_path: Path) -> None:
    refused(kit(*desktop(config, "no-such-mcp-server-xyz", "--stdio")), config,
            "'no-such-mcp-server-xyz' is not on PATH")
    refused(kit(*desktop(config, str(tmp_path / "bin" / "nothing"))), config, "no such program")
    absent = tmp_path / "new" / "claude_desktop_config.json"
    done = kit("claude-desktop", "--name", "demo", "--config", str(absent), "--", "no-such-mcp-server-xyz")
    assert done.returncode == 1 and not absent.parent.exists()
    code = kit("claude-code", "--name", "demo", "--", "no-such-mcp-server-xyz")
    assert code.returncode == 1 and code.stdout == "" and "not on PATH" in code.stderr


def test_a_script_that_never_calls_run_is_refused_with_the_hint(config: Path, tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("from mcp_agent_kit import Server\n\nserver = Server('forgot', '1.0.0')\n")
    refused(kit(*desktop(config, "python", str(script))), config, "did you call server.run()?")
    code = kit("claude-code", "--name", "demo", "--", "python", str(script))
    assert code.returncode == 1 and code.stdout == "" and "did you call server.run()?" in code.stderr


def test_a_syntax_error_is_refused_with_its_file_and_line(config: Path, tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("from mcp_agent_kit import Server\n\ndef broken(:\n    pass\n")
    refused(kit(*desktop(config, "python", str(script))), config, f"{script}:3:", "SyntaxError")


def test_an_import_error_is_refused_with_its_file_and_line(config: Path, tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("import os\nimport not_a_module_anywhere_xyz\n")
    refused(kit(*desktop(config, "python", str(script))), config, f"{script}:2:", "not_a_module_anywhere_xyz")


def test_a_bare_name_is_written_as_its_absolute_path_once_it_answers(config: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "metrics-server"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {METRICS} \"$@\"\n")
    launcher.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    done = kit(*desktop(config, "metrics-server"), env={"PATH": path})
    assert done.returncode == 0, done.stderr
    data = json.loads(config.read_text())
    assert data["mcpServers"]["demo"] == {"command": str(launcher), "args": []}
    assert data["mcpServers"]["other"] == {"command": "/bin/true", "args": []} and data["theme"] == "dark"
    code = kit("claude-code", "--name", "demo", "--", "metrics-server", env={"PATH": path})
    assert code.returncode == 0 and code.stdout.strip() == f"claude mcp add --scope user demo -- {launcher}"


def test_a_handshake_era_server_passes_and_noise_on_stdout_is_skipped(legacy_python: str, tmp_path: Path) -> None:
    script = tmp_path / "legacy.py"
    script.write_text("from mcp.server.fastmcp import FastMCP\n\napp = FastMCP('legacy')\n\n"
                      "@app.tool()\ndef add(a: int, b: int) -> int:\n    return a + b\n\napp.run()\n")
    assert start_problem([legacy_python, str(script)], {}) is None
    noisy = tmp_path / "noisy.py"
    noisy.write_text(f"print('starting up...')\nexec(open({str(METRICS)!r}).read())\n")
    assert start_problem([sys.executable, str(noisy)], {}) is None


def test_a_server_that_never_answers_is_refused_in_bounded_time(tmp_path: Path) -> None:
    script = tmp_path / "silent.py"
    script.write_text("import sys\nprint('hello')\nsys.stdin.read()\n")
    problem = start_problem([sys.executable, str(script)], {}, seconds=1.0)
    assert problem is not None and "did not answer" in problem and "write logs to stderr" in problem


def test_no_check_writes_anyway_and_says_so(config: Path, tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text("x = 1\n")
    done = kit("claude-desktop", "--name", "demo", "--config", str(config), "--no-check", "--", "python", str(script))
    assert done.returncode == 0 and "not checked (--no-check)" in done.stderr
    assert json.loads(config.read_text())["mcpServers"]["demo"]["args"] == [str(script)]


def test_python_error_names_the_deepest_frame_of_user_code() -> None:
    trace = ('Traceback (most recent call last):\n  File "/p/server.py", line 4, in <module>\n    import helper\n'
             '  File "<frozen importlib._bootstrap>", line 1, in _find\n  File "/p/helper.py", line 9, in <module>\n'
             '    raise RuntimeError("boom")\nRuntimeError: boom\n')
    assert python_error(trace) == "/p/helper.py:9: RuntimeError: boom"
    assert python_error("plain words\n") is None
    assert install.absolute_command(["python", "-m", "x"])[0] == sys.executable
