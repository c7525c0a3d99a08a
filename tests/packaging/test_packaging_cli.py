"""The skill and plugin CLI: exit codes, JSON output, install and build, and the module entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_agent_kit.packaging.cli import main, main_plugin, main_skill
from mcp_agent_kit.packaging.plugin_validate import validate_plugin
from mcp_agent_kit.packaging.skill_validate import validate_skill

DESC = "Use when greeting people. Do not use for farewells."
GOOD = f"---\nname: greet\ndescription: {DESC}\n---\nSay hello.\n"
BAD = "---\nname: Greet_Me\ndescription: <b>\n---\n"
REPO = Path(__file__).resolve().parents[2]


def run_module(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "mcp_agent_kit.packaging.cli", *argv],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=cwd,
    )


def test_skill_validate_exit_codes(
    make_skill: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    good = make_skill("greet", GOOD)
    bad = make_skill("bad", BAD)
    assert main_skill(["validate", str(good)]) == 0
    assert main_skill(["validate", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}/SKILL.md:2: error: Skill name 'Greet_Me' must be lowercase" in out
    assert main_skill(["validate", str(good / "missing")]) == 2
    assert main_skill(["validate"]) == 2
    assert main_skill(["frobnicate"]) == 2
    assert main(["nothing"]) == 2


def test_skill_validate_json_and_strict(
    make_skill: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    plain = make_skill("plain", "---\nname: plain\ndescription: Greets\n---\nHi.\n")
    assert main_skill(["validate", "--json", str(plain)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] is True and data["skills"][0]["name"] == "plain"
    assert main_skill(["validate", "--json", "--strict", str(plain)]) == 1
    data = json.loads(capsys.readouterr().out)
    rules = {e["rule"] for e in data["skills"][0]["errors"]}
    assert rules == {"design-description-form", "design-description-length"}
    assert all(e["line"] == 3 for e in data["skills"][0]["errors"])


def test_module_entry_point(make_skill: Callable[..., Path]) -> None:
    good = make_skill("greet", GOOD)
    bad = make_skill("bad", BAD)
    assert run_module("skill", "validate", str(good)).returncode == 0
    done = run_module("skill", "validate", "--json", str(bad))
    assert done.returncode == 1
    assert json.loads(done.stdout)["valid"] is False
    assert run_module("skill", "validate", ".", cwd=good).returncode == 0
    assert run_module("bogus").returncode == 2


def test_skill_new(tmp_path: Path, oracle: Callable[[Path], list[str]]) -> None:
    assert main_skill(["new", "my_agent", "--desc", DESC, "--dir", str(tmp_path)]) == 0
    root = tmp_path / "my-agent"
    assert oracle(root) == []
    assert validate_skill(root, strict=True).valid
    assert main_skill(["new", "my_agent", "--desc", DESC, "--dir", str(tmp_path)]) == 1
    assert main_skill(["new", "x", "--desc", "<bad>", "--dir", str(tmp_path)]) == 2


def test_skill_install(
    make_skill: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = make_skill("greet", GOOD, files={"references/a.md": "A"})
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    assert main_skill(["install", str(source)]) == 0
    installed = home / ".claude" / "skills" / "greet"
    assert (installed / "SKILL.md").read_text() == GOOD
    assert (installed / "references" / "a.md").is_file()
    (installed / "local-notes.md").write_text("mine")
    assert main_skill(["install", str(source)]) == 1
    assert (installed / "local-notes.md").exists()
    assert main_skill(["install", str(source / "SKILL.md"), "--force"]) == 0
    assert not (installed / "local-notes.md").exists()
    assert sorted(p.name for p in installed.parent.iterdir()) == ["greet"]
    bad = make_skill("bad", BAD)
    assert main_skill(["install", str(bad), "--dest", str(tmp_path / "d")]) == 1
    assert not (tmp_path / "d" / "bad").exists()


def test_plugin_build_and_validate(
    make_skill: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    oracle: Callable[[Path], list[str]],
) -> None:
    skill = make_skill("greet", GOOD)
    work = tmp_path / "src"
    work.mkdir()
    (work / "run-server").write_text("#!/bin/sh\nexec python3 -m my_agent\n")
    monkeypatch.chdir(work)
    out = tmp_path / "pkg"
    argv = [
        "build",
        "--name",
        "greeter",
        "--desc",
        "Greets",
        "--command",
        "./run-server",
        "--args",
        "--port '8 0'",
        "--url",
        "https://greet.example/mcp",
        "--skill",
        str(skill),
        "--out",
        str(out),
        "--claude-code",
    ]
    assert main_plugin(argv) == 0
    assert os.access(out / "run-server", os.X_OK)
    mcp = json.loads((out / "mcp.json").read_text())
    assert mcp["mcpServers"] == {
        "greeter": {"type": "stdio", "command": "./run-server", "args": ["--port", "8 0"]},
        "greeter-http": {"type": "streamable-http", "url": "https://greet.example/mcp"},
    }
    claude = json.loads((out / ".mcp.json").read_text())
    assert claude["mcpServers"]["greeter"]["command"] == "${CLAUDE_PLUGIN_ROOT}/run-server"
    assert claude["mcpServers"]["greeter-http"] == {
        "type": "http",
        "url": "https://greet.example/mcp",
    }
    cc = json.loads((out / ".claude-plugin" / "plugin.json").read_text())
    assert cc == {"name": "greeter", "version": "0.1.0", "description": "Greets"}
    assert oracle(out / "skills" / "greet") == []
    assert validate_plugin(out).valid
    assert main_plugin(["validate", str(out)]) == 0
    assert main_plugin(["validate", "--json", str(out)]) == 0
    capsys.readouterr()
    assert main_plugin(argv) == 1  # exists
    assert main_plugin([*argv, "--force"]) == 0
    assert main_plugin(["validate", str(tmp_path / "nope")]) == 2


@pytest.mark.parametrize(
    "extra",
    [
        ["--name", "Bad Name"],
        ["--name", "a.b", "--claude-code"],
        ["--command", "python3 x.py"],
        ["--command", "./missing"],
        ["--url", "http://public.example/mcp"],
    ],
)
def test_plugin_build_refuses_invalid(extra: list[str], tmp_path: Path) -> None:
    argv = ["build", "--name", "ok", "--command", "python3", "--out", str(tmp_path / "p"), *extra]
    assert main_plugin(argv) == 1
    assert not (tmp_path / "p").exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_plugin_validate_reports_invalid_component(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main_plugin(["build", "--name", "p", "--command", "node", "--out", str(tmp_path / "p")])
        == 0
    )
    (tmp_path / "p" / "mcp.json").write_text("{")
    capsys.readouterr()
    assert main_plugin(["validate", "--json", str(tmp_path / "p")]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["plugin"] == "ok" and data["mcp"]["component"] == "invalid"


def test_skill_new_indexes_a_servers_tools(tmp_path: Path) -> None:
    from mcp_agent_kit.packaging.cli import main_skill

    root = Path(__file__).resolve().parents[2]
    code = main_skill(["new", "metrics", "--desc", "Use when you need statistics. Do not use for text.",
                       "--dir", str(tmp_path), "--tools-from", f"{root / 'examples' / 'metrics_server.py'}:server"])
    assert code == 0
    text = (tmp_path / "metrics" / "SKILL.md").read_text()
    assert "calculate_metrics" in text
    assert main_skill(["validate", str(tmp_path / "metrics"), "--strict"]) == 0
    assert main_skill(["new", "other", "--desc", "Use when a. Do not use for b.", "--dir", str(tmp_path),
                       "--tools-from", str(tmp_path / "missing.py") + ":server"]) == 2


def test_skill_validate_walks_a_folder_of_skills(
    make_skill: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder holding skill folders (as ~/.claude/skills does) validates each of them."""
    good = make_skill("greet", GOOD)
    bad = make_skill("bad", BAD)
    (good.parent / ".cache").mkdir()  # hidden folders are not skills
    folder = good.parent
    assert main_skill(["validate", str(folder)]) == 1  # one of them is invalid
    out = capsys.readouterr().out
    assert f"Valid skill: {good}" in out and f"Invalid skill: {bad}" in out
    assert "1 of 2 skills valid" in out
    assert main_skill(["validate", "--json", str(folder)]) == 1
    assert [s["path"] for s in json.loads(capsys.readouterr().out)["skills"]] == [str(bad), str(good)]
    bad.joinpath("SKILL.md").write_text(GOOD.replace("greet", "bad"))
    assert main_skill(["validate", str(folder)]) == 0
    empty = folder / "empty"
    empty.mkdir()
    assert main_skill(["validate", str(empty)]) == 1  # no skill in it at all: still named as missing


def test_an_existing_skill_names_force_once(
    make_skill: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_skill("greet", GOOD)
    dest = tmp_path / "installed"
    assert main_skill(["install", str(source), "--out", str(dest)]) == 0
    capsys.readouterr()
    assert main_skill(["install", str(source), "--out", str(dest)]) == 1
    err = capsys.readouterr().err
    assert err.count("--force") == 1 and len(err.splitlines()) == 1, err
    assert main_skill(["new", "greet", "--desc", DESC, "--out", str(dest)]) == 1
    assert capsys.readouterr().err.count("--force") == 1


def test_plugin_validate_prints_readable_lines(
    make_skill: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skill = make_skill("greet", GOOD)
    out = tmp_path / "pkg"
    argv = ["build", "--name", "greeter", "--command", "node", "--url", "https://greet.example/mcp",
            "--skill", str(skill), "--out", str(out)]
    assert main_plugin(argv) == 0
    capsys.readouterr()
    assert main_plugin(["validate", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["plugin.json: ok (greeter)", "skills: ok (1: greet ok)",
                     "mcp.json servers: ok (2: greeter ok, greeter-http ok)", "package: ok",
                     f"Valid plugin: {out}"]
    assert not any("{" in line for line in lines)  # no Python dict reprs
