"""The command lines are consistent: one program name, --version, help on every flag, one spelling
per meaning (older spellings still parse, hidden), and user mistakes as ONE stderr line
`mcp-agent-kit: <problem>; <fix>` with exit 2 (usage) or 1 (failure), never a traceback."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_agent_kit
from mcp_agent_kit.__main__ import COMMANDS
from mcp_agent_kit.scaffold import install

ROOT = Path(__file__).resolve().parent.parent
METRICS = str(ROOT / "examples" / "metrics_server.py")
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def kit(*argv: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", *argv], capture_output=True, text=True,
                          timeout=60, cwd=cwd, env=env or ENV, stdin=subprocess.DEVNULL)


# ---- help texts ------------------------------------------------------------------------------------
def walk(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                assert choice.help, f"{parser.prog} {choice.dest}: a subcommand without help"
            for sub in dict.fromkeys(action.choices.values()):
                yield from walk(sub)


def all_parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for name, (module, _, builder, _) in COMMANDS.items():
        yield name, getattr(importlib.import_module(module), builder)()
    from mcp_agent_kit.scaffold.cli import new_parser

    yield "create-mcp-agent", new_parser("create-mcp-agent")


@pytest.mark.parametrize(("name", "top"), list(all_parsers()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_flag_and_positional_has_help_and_the_one_program_name(name: str, top: argparse.ArgumentParser) -> None:
    expected = "create-mcp-agent" if name == "create-mcp-agent" else f"mcp-agent-kit {name}"
    for parser in walk(top):
        assert parser.prog.startswith(expected), parser.prog
        visible = {a.dest for a in parser._actions if a.help is not argparse.SUPPRESS}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            where = f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
            if action.help is argparse.SUPPRESS:  # a hidden alias of a visible flag
                assert action.dest in visible or action.dest in ("host", "port"), f"{where}: hidden, not an alias"
            else:
                assert isinstance(action.help, str) and action.help.strip(), f"{where}: no help"


def test_version_on_both_console_scripts() -> None:
    done = kit("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"mcp-agent-kit {mcp_agent_kit.__version__}\n", "")
    create = subprocess.run(
        [sys.executable, "-c", "from mcp_agent_kit.scaffold.cli import main_create; main_create()", "--version"],
        capture_output=True, text=True, timeout=60, env=ENV,
    )
    assert (create.returncode, create.stdout.strip()) == (0, f"create-mcp-agent {mcp_agent_kit.__version__}")


def test_top_level_help_names_the_console_script() -> None:
    done = kit("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: mcp-agent-kit COMMAND")
    assert "--version" in done.stdout and all(name in done.stdout for name in COMMANDS)


# ---- one line per mistake ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def busy_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mistakes")
    (root / "syntax.py").write_text("from mcp_agent_kit import Server\n\nserver = Server(\n")
    (root / "imports.py").write_text("import json\nimport no_such_dependency_xyz\n")
    (root / "bad.json").write_text("{not json")
    (root / "empty.json").write_text('{"mcpServers": {}}')
    (root / "gateway.json").write_text(json.dumps({"mcpServers": {"a": {"command": sys.executable}}}))
    (root / "nobin").mkdir()
    return root


MISTAKES: dict[str, tuple[list[str], int, str]] = {
    # id: (argv with {d} = the files dir and {busy} = a port in use, exit code, text in the one line)
    "syntax error in the server file": (["serve", "{d}/syntax.py"], 2, "syntax.py:3"),
    "import error in the server file": (["serve", "{d}/imports.py"], 2, "imports.py:2"),
    "syntax error via a2a": (["a2a", "{d}/syntax.py"], 2, "syntax.py:3"),
    "no such server file": (["serve", "{d}/missing.py"], 2, "no such file"),
    "no such module": (["serve", "no_such_module_xyz:server"], 2, "cannot import no_such_module_xyz"),
    "port out of range (serve)": (["serve", METRICS, "--http", "127.0.0.1:70000"], 2, "65535"),
    "port out of range (a2a --http)": (["a2a", METRICS, "--http", "127.0.0.1:99999"], 2, "65535"),
    "port out of range (a2a --port)": (["a2a", METRICS, "--port", "70000"], 2, "65535"),
    "port in use (serve)": (["serve", METRICS, "--http", "127.0.0.1:{busy}"], 1, "cannot listen"),
    "port in use (a2a)": (["a2a", METRICS, "--http", "127.0.0.1:{busy}"], 1, "cannot listen"),
    "port in use (a2a --port)": (["a2a", METRICS, "--port", "{busy}"], 1, "cannot listen"),
    "port in use (gateway)": (["gateway", "{d}/gateway.json", "--http", "127.0.0.1:{busy}"], 1, "cannot listen"),
    "gateway config missing": (["gateway", "{d}/none.json"], 2, "no such config file"),
    "gateway config not JSON": (["gateway", "{d}/bad.json"], 1, "not JSON"),
    "gateway config without servers": (["gateway", "{d}/empty.json"], 1, "mcpServers"),
    "skill path missing": (["skill", "validate", "{d}/nothing"], 2, "no such file or directory"),
    "plugin path missing": (["plugin", "validate", "{d}/nothing"], 2, "no such file or directory"),
    "install --env without =": (["install", "claude-desktop", "--name", "x", "--config", "{d}/c.json", "--env",
                                 "TOKEN", "--", "python", "-m", "json.tool"], 2, "KEY=VALUE"),
    "claude binary missing": (["install", "claude-code", "--name", "x", "--run", "--no-check", "--", "python"],
                              1, "`claude`"),
    "unknown command": (["serv"], 2, "did you mean 'serve'"),
    "unknown flag": (["serve", METRICS, "--htpp", "x"], 2, "--help"),
}


@pytest.mark.parametrize("case", MISTAKES)
def test_a_mistake_is_one_stderr_line(case: str, files: Path, busy_port: int) -> None:
    argv, code, text = MISTAKES[case]
    env = dict(ENV, PATH=str(files / "nobin")) if case == "claude binary missing" else None
    done = kit(*(arg.format(d=files, busy=busy_port) for arg in argv), env=env)
    lines = done.stderr.splitlines()
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert lines[0].startswith("mcp-agent-kit: ") and text in lines[0], lines[0]


def test_a_syntax_error_names_the_fix(files: Path) -> None:
    line = kit("serve", str(files / "syntax.py")).stderr.strip()
    assert f"{files / 'syntax.py'}:3: syntax error" in line and "; fix the file" in line


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"], ["skill", "validate", "--help"], ["--version"]])
def test_a_closed_stdout_is_quiet(argv: list[str]) -> None:
    """`mcp-agent-kit --help | head -1`: the reader is gone before we write."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "mcp_agent_kit", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60, env=ENV)
    finally:
        os.close(write_end)
    assert done.stderr == "" and done.returncode in (0, 1)


def test_create_mcp_agent_mistakes_are_one_line_too(tmp_path: Path) -> None:
    code = "from mcp_agent_kit.scaffold.cli import main_create; main_create()"
    done = subprocess.run([sys.executable, "-c", code, "json"], capture_output=True, text=True, timeout=60,
                          env=ENV, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("create-mcp-agent: ")
    done = subprocess.run([sys.executable, "-c", code, "ok-name", "--frob"], capture_output=True, text=True,
                          timeout=60, env=ENV, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("create-mcp-agent: ") and len(done.stderr.splitlines()) == 1


# ---- one spelling per meaning, older ones still parse ------------------------------------------------
def test_output_directory_is_out_everywhere_with_hidden_aliases() -> None:
    from mcp_agent_kit.packaging.cli import plugin_parser, skill_parser
    from mcp_agent_kit.scaffold.cli import new_parser

    skill = skill_parser()
    for flag in ("--out", "--dir"):
        assert skill.parse_args(["new", "x", "--desc", "d", flag, "D"]).out == "D"
        assert new_parser().parse_args(["x", flag, "D"]).dir == "D"
    for flag in ("--out", "--dest"):
        assert skill.parse_args(["install", "p", flag, "D"]).out == "D"
    assert plugin_parser().parse_args(["build", "--name", "n", "--out", "D"]).out == "D"
    assert "--dir" not in new_parser().format_help() and "--dest" not in skill.format_help()


def test_force_is_the_flag_to_replace_and_replace_still_works(tmp_path: Path) -> None:
    desktop = ["claude-desktop", "--name", "demo", "--config", str(tmp_path / "c.json"), "--no-check"]
    assert install.main([*desktop, "--", "python", "-m", "demo.server"]) == 0
    assert install.main([*desktop, "--", "python", "-m", "other"]) == 1
    assert install.main([*desktop, "--force", "--", "python", "-m", "forced"]) == 0
    assert install.main([*desktop, "--replace", "--", "python", "-m", "replaced"]) == 0
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["mcpServers"]["demo"]["args"] == ["-m", "replaced"]
    desktop_help = next(p for p in walk(install.parser()) if p.prog.endswith("claude-desktop")).format_help()
    assert "--force" in desktop_help and "--replace" not in desktop_help


def test_a2a_binds_with_http_and_the_older_host_port() -> None:
    from mcp_agent_kit.a2a.cli import bind_address, parser

    cli = parser()
    assert bind_address(cli.parse_args(["t"])) == ("127.0.0.1", 8080)
    assert bind_address(cli.parse_args(["t", "--http", "0.0.0.0:9000"])) == ("0.0.0.0", 9000)
    assert bind_address(cli.parse_args(["t", "--port", "0"])) == ("127.0.0.1", 0)
    assert bind_address(cli.parse_args(["t", "--host", "::1", "--port", "7"])) == ("::1", 7)
    assert "--host" not in cli.format_help() and "--port" not in cli.format_help()


def test_a2a_refuses_http_together_with_port(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_agent_kit.a2a.cli import main

    with pytest.raises(SystemExit) as info:
        main([METRICS, "--http", "127.0.0.1:0", "--port", "1"])
    assert info.value.code == 2 and len(capsys.readouterr().err.splitlines()) == 1


# ---- install claude-desktop ---------------------------------------------------------------------------
def test_backups_are_never_overwritten(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text('{"mcpServers": {}}')
    seen = []
    for n in range(4):  # all within the same second: the timestamp alone would collide
        before = config.read_text()
        backup = install.add_to_claude_desktop(config, f"s{n}", ["x"])
        assert backup is not None and backup.read_text() == before
        seen.append(backup)
    assert len(set(seen)) == 4 and len(list(tmp_path.glob("claude_desktop_config.json.*.bak"))) == 4


def test_env_without_equals_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.json"
    with pytest.raises(SystemExit) as info:
        install.main(["claude-desktop", "--name", "x", "--config", str(config), "--env", "NOVALUE", "--", "python"])
    assert info.value.code == 2 and not config.exists()
    assert "KEY=VALUE" in capsys.readouterr().err
    assert install.main(["claude-desktop", "--name", "x", "--config", str(config), "--no-check",
                         "--env", "A=b=c", "--", "python"]) == 0
    assert json.loads(config.read_text())["mcpServers"]["x"]["env"] == {"A": "b=c"}


@pytest.mark.parametrize(("command", "said"), [
    (["python", "-m", "no_such_module_for_install_xyz"], "No module named"),
    (["no-such-program-for-install-xyz"], "is not on PATH"),
    (["python", "-c", "import sys; sys.stdin.read()"], "did not answer"),
])
def test_a_command_that_does_not_start_is_refused_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], said: str
) -> None:
    config = tmp_path / "c.json"
    assert install.main(["claude-desktop", "--name", "x", "--config", str(config), "--check-timeout", "1",
                         "--", *command]) == 1
    assert not config.exists()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("mcp-agent-kit: ") and said in err[0], err
