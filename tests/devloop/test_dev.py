"""`mcp-agent-kit dev`: the exact command line it runs, seen by a stub `npx` on PATH that records its
argv (with a stub `node` saying which version is installed), and the one line without any npx."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mcp_agent_kit.devtools import inspector
from tests.devloop.helpers import ENV, FAKE_PEER, METRICS, ROOT, kit


@pytest.fixture
def stubs(tmp_path: Path) -> Path:
    """A bin/ folder with an `npx` that writes its arguments, one a line, to $NPX_ARGV and exits 0."""
    if sys.platform == "win32":
        pytest.skip("the stub programs are POSIX shell scripts")
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "npx").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$NPX_ARGV"\n')
    (folder / "npx").chmod(0o755)
    return folder


def with_node(folder: Path, version: str) -> None:
    (folder / "node").write_text(f"#!/bin/sh\necho {version}\n")
    (folder / "node").chmod(0o755)


def run_dev(folder: Path, *argv: str) -> tuple[list[str], str]:
    """The arguments the stub npx got (PYTHONPATH is the repository root), and the kit's stderr."""
    record = folder / "argv.txt"
    done = kit("dev", *argv, env=dict(ENV, PATH=str(folder), NPX_ARGV=str(record)))
    assert done.returncode == 0, done.stderr
    return record.read_text().splitlines(), done.stderr


def test_dev_runs_the_pinned_inspector_on_this_interpreter(stubs: Path) -> None:
    with_node(stubs, "v22.20.0")
    argv, stderr = run_dev(stubs, "examples/metrics_server.py")
    assert argv == ["-y", "@modelcontextprotocol/inspector@2.12.0", "-e", f"PYTHONPATH={ROOT}", "--",
                    sys.executable, "-m", "mcp_agent_kit", "serve", METRICS]
    assert stderr.startswith(f"mcp-agent-kit dev: {stubs / 'npx'} -y @modelcontextprotocol/inspector@2.12.0")


def test_dev_keeps_the_object_name_and_hands_a_url_or_command_over(stubs: Path) -> None:
    with_node(stubs, "v24.1.0")
    argv, _ = run_dev(stubs, f"{METRICS}:server", "--era", "modern")
    assert argv[-5:] == [sys.executable, "-m", "mcp_agent_kit", "serve", f"{METRICS}:server"]
    assert argv[argv.index("--protocol-era") + 1] == "modern"
    argv, _ = run_dev(stubs, "http://127.0.0.1:9/api")
    assert argv == ["-y", "@modelcontextprotocol/inspector@2.12.0", "--transport", "http", "--", "http://127.0.0.1:9/api"]
    argv, _ = run_dev(stubs, "--", sys.executable, FAKE_PEER, "legacy-error")
    assert argv[-4:] == ["--", sys.executable, FAKE_PEER, "legacy-error"]


def test_an_older_node_gets_node_22_from_npx(stubs: Path) -> None:
    with_node(stubs, "v20.20.2")
    argv, stderr = run_dev(stubs, METRICS)
    assert argv[:7] == ["-y", "-p", "node@22", "-p", "@modelcontextprotocol/inspector@2.12.0", "--", "mcp-inspector"]
    assert argv[-5:] == [sys.executable, "-m", "mcp_agent_kit", "serve", METRICS]
    assert "node 20.20 is older than the Inspector's 22.19" in stderr


def test_without_npx_one_line_names_what_to_install(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = kit("dev", METRICS, env=dict(ENV, PATH=str(empty)))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("mcp-agent-kit: ") and "install Node.js 22.19 or newer" in done.stderr


def test_a_missing_server_file_is_refused_before_the_inspector_starts(stubs: Path) -> None:
    done = kit("dev", "no_such_server.py", env=dict(ENV, PATH=str(stubs), NPX_ARGV=str(stubs / "argv.txt")))
    assert done.returncode == 2 and "no such file: no_such_server.py" in done.stderr
    assert not (stubs / "argv.txt").exists()


def test_the_pin_is_the_one_the_interop_tests_run() -> None:
    text = (ROOT / "tests" / "interop" / "test_inspector.py").read_text(encoding="utf-8")
    assert f'INSPECTOR = "{inspector.INSPECTOR}"' in text


def test_the_command_line_without_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_agent_kit.devtools.targets import resolve

    monkeypatch.chdir(ROOT)
    target = resolve("examples/metrics_server.py", None)
    line = inspector.inspector_command("npx", target, (22, 19), None, None)
    assert line == ["npx", "-y", inspector.INSPECTOR, "--", sys.executable, "-m", "mcp_agent_kit", "serve", METRICS]
    assert os.path.isabs(line[-1])
