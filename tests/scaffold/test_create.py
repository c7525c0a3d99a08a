"""create-mcp-agent: names, no-clobber writes, --force, validate.py verdicts, install helpers."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_agent_kit.scaffold import checks, install
from mcp_agent_kit.scaffold.cli import main_new
from mcp_agent_kit.scaffold.names import NameError_, derive
from mcp_agent_kit.scaffold.render import MANIFEST


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("raw", "dist", "package"),
    [("my-agent", "my-agent", "my_agent"), ("my_agent", "my-agent", "my_agent"), ("Weather2", "weather2", "weather2")],
)
def test_names(raw: str, dist: str, package: str) -> None:
    names = derive(raw)
    assert (names.dist, names.package) == (dist, package)


@pytest.mark.parametrize(
    "raw", ["", "../evil", "a b", "json", "tools", "a2a", "1abc", "café", "x" * 65, "a--b", "-a", "class"]
)
def test_unsafe_names_are_refused(raw: str) -> None:
    with pytest.raises(NameError_):
        derive(raw)


def test_create_twice_leaves_the_first_byte_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 0
    project = tmp_path / "demo-agent"
    before = tree_digest(project)
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path), "--desc", "something else"]) == 1
    assert "already exists" in capsys.readouterr().err
    assert tree_digest(project) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo-agent"]  # no staging leftovers


def test_force_replaces_only_our_unchanged_files(tmp_path: Path) -> None:
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 0
    project = tmp_path / "demo-agent"
    (project / "README.md").write_text("my own notes\n")
    (project / "notes.txt").write_text("mine\n")
    (project / "server.py").unlink()
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path), "--force"]) == 0
    assert (project / "README.md").read_text() == "my own notes\n"
    assert (project / "notes.txt").read_text() == "mine\n"
    assert (project / "server.py").is_file()
    manifest = json.loads((project / MANIFEST).read_text())["files"]
    assert "README.md" not in manifest and "server.py" in manifest


def test_force_refuses_a_directory_we_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "demo-agent").mkdir()
    (tmp_path / "demo-agent" / "precious.txt").write_text("keep")
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path), "--force"]) == 1
    assert (tmp_path / "demo-agent" / "precious.txt").read_text() == "keep"


def test_failure_leaves_nothing_half_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_agent_kit.scaffold.render as render

    def explode(root: Path, files: dict[str, str]) -> None:
        (root / "partial.txt").write_text("x")
        raise OSError("disk full")

    monkeypatch.setattr(render, "_write_all", explode)
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 1
    assert list(tmp_path.iterdir()) == []


def generated(tmp_path: Path) -> Path:
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 0
    return tmp_path / "demo-agent"


def run_validate(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "validate.py", *args], cwd=project, capture_output=True, text=True, timeout=120
    )


def test_generated_project_validates_and_its_tests_pass(tmp_path: Path) -> None:
    project = generated(tmp_path)
    done = run_validate(project)
    rows = done.stdout.splitlines()
    # Not installed into this interpreter: the entry Claude Desktop would run cannot start, and says why.
    failed = [line for line in rows if not line.startswith("✓ ")]
    assert len(failed) == 1 and failed[0].startswith("✗ Claude Desktop entry:"), done.stdout
    assert "No module named 'demo_agent'" in failed[0] and f"-m pip install -e {project}" in failed[0]
    assert done.returncode == 1 and len(rows) >= 9
    report = json.loads(run_validate(project, "--json").stdout)
    assert report["ok"] is False and {row["check"] for row in report["checks"]} == {name for name, _ in checks.CHECKS}
    for runner in (["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                   ["-m", "unittest", "discover", "-s", "tests", "-p", "test_*.py", "-v"]):
        tests = subprocess.run([sys.executable, *runner], cwd=project, capture_output=True, text=True, timeout=120)
        assert tests.returncode == 0, tests.stdout + tests.stderr
        assert "Ran 0 tests" not in tests.stderr and "no tests ran" not in tests.stdout
    direct = subprocess.run([sys.executable, "server.py"], cwd=project, input="", capture_output=True, timeout=30)
    assert direct.returncode == 0


def test_validate_runs_from_any_directory(tmp_path: Path) -> None:
    project = generated(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "plugin" / "plugin.json").unlink()
    done = subprocess.run([sys.executable, str(project / "validate.py"), "--fix", "--json"], cwd=elsewhere,
                          capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout)
    assert (project / "plugin" / "plugin.json").is_file() and list(elsewhere.iterdir()) == []
    assert all(row["ok"] for row in report["checks"] if row["check"] != "Claude Desktop entry"), done.stdout


@pytest.mark.parametrize(
    ("source", "where", "error"),
    [
        ("def text_stats(text: str) -> dict[str, int]:\n    return {\n", "demo_agent/tools/example.py:2",
         "SyntaxError"),
        ("import no_such_module_here\n", "demo_agent/tools/example.py:1", "ModuleNotFoundError"),
        ("raise RuntimeError('boom')\n", "demo_agent/tools/example.py:1", "RuntimeError: boom"),
    ],
)
def test_a_server_that_does_not_import_is_a_failed_check(tmp_path: Path, source: str, where: str, error: str) -> None:
    project = generated(tmp_path)
    (project / "demo_agent" / "tools" / "example.py").write_text(source)
    done = run_validate(project)
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    assert done.stdout.startswith("✗ server imports: " + where) and error in done.stdout, done.stdout
    report = json.loads(run_validate(project, "--json").stdout)
    assert report["ok"] is False and report["checks"][0]["detail"].startswith(where)


def test_validate_without_the_kit_names_the_install_command(tmp_path: Path) -> None:
    project = generated(tmp_path)
    done = subprocess.run([sys.executable, "-I", "-S", str(project / "validate.py"), "--json"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["ok"] is False
    assert f"-m pip install -e {project}" in report["checks"][0]["detail"]


def test_signature_and_hint_rules() -> None:
    from mcp_agent_kit import Server

    server = Server("rules", "1.0.0")
    description = "Use when testing the design rules. Do not use for anything else."

    def mismatch(b: str) -> str:
        return b

    server.add_tool(mismatch, description=description, read_only=True,
                    input_schema={"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})

    def neither(text: str) -> str:
        return text

    server.add_tool(neither, description=description, read_only=False, destructive=False)

    def fine(text: str, ctx: object = None, limit: int = 3) -> str:
        return text

    server.add_tool(fine, description=description, destructive=True)
    problems = {}
    for tool in server.listing("tools"):
        handler = server.get_tool(tool.name).handler
        skip = frozenset({handler.context_arg}) if handler.context_arg else frozenset()
        problems[tool.name] = checks.tool_rule_violations(tool.wire) + checks.signature_violations(
            tool.wire, handler.fn, skip)
    assert problems["fine"] == [] or all("ctx" in p for p in problems["fine"]), problems
    assert any("allows a but mismatch() has no such parameter" in p for p in problems["mismatch"])
    assert any("mismatch() needs b" in p for p in problems["mismatch"])
    assert problems["neither"] == [
        "one of read_only or destructive must be true (a tool that neither only reads nor destroys:"
        " read_only=False, destructive=False says nothing)"
    ]


def test_a_project_without_tests_says_so(tmp_path: Path) -> None:
    project = generated(tmp_path)
    (project / "tests" / "test_server.py").write_text("def test_pytest_style() -> None:\n    assert True\n")
    done = run_validate(project)
    assert "✗ project tests: tests/ has no tests to run" in done.stdout, done.stdout


def test_a_tool_breaking_a_design_rule_fails_validation(tmp_path: Path) -> None:
    project = generated(tmp_path)
    tools = project / "demo_agent" / "tools" / "__init__.py"
    tools.write_text(
        tools.read_text()
        + '''

def shout(text: str) -> str:
    """Shouts the text."""
    return text.upper()


_register = register_all


def register_all(server: Server) -> None:
    _register(server)
    server.add_tool(shout)
'''
    )
    done = run_validate(project)
    assert done.returncode == 1
    bad = [line for line in done.stdout.splitlines() if line.startswith("✗")]
    assert any("'shout'" in line and "Use when X. Do not use for Y." in line for line in bad), done.stdout
    assert any("'shout'" in line and "readOnlyHint or destructiveHint" in line for line in bad), done.stdout
    assert any("SKILL.md does not mention tool(s) shout" in line for line in bad), done.stdout


def test_fix_regenerates_skill_and_plugin(tmp_path: Path) -> None:
    project = generated(tmp_path)
    (project / "plugin" / "plugin.json").unlink()
    assert "✗ plugin package: plugin/plugin.json is missing" in run_validate(project).stdout
    fixed = run_validate(project, "--fix").stdout
    assert "✓ plugin package" in fixed and "✓ SKILL.md" in fixed, fixed


def test_install_claude_desktop_keeps_other_entries_and_backs_up(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    original = {"mcpServers": {"other": {"command": "x", "args": []}}, "theme": "dark"}
    config.write_text(json.dumps(original))
    code = install.main(
        ["claude-desktop", "--name", "demo", "--config", str(config), "--no-check", "--", "python", "-m", "demo.server"]
    )
    assert code == 0
    data = json.loads(config.read_text())
    assert data["mcpServers"]["other"] == original["mcpServers"]["other"] and data["theme"] == "dark"
    entry = data["mcpServers"]["demo"]
    assert Path(entry["command"]).is_absolute() and entry["args"] == ["-m", "demo.server"]
    backups = list(tmp_path.glob("claude_desktop_config.json.*.bak"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == original
    assert install.main(["claude-desktop", "--name", "demo", "--config", str(config), "--no-check",
                         "--", "python"]) == 1


def test_install_claude_desktop_refuses_a_malformed_config(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text("{not json")
    assert install.main(["claude-desktop", "--name", "demo", "--config", str(config), "--no-check",
                         "--", "python"]) == 1
    assert config.read_text() == "{not json" and not list(tmp_path.glob("*.bak"))


def test_install_claude_code_prints_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert install.main(["claude-code", "--name", "demo", "--no-check", "--", "python", "-m", "demo.server"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("claude mcp add --scope user demo -- /") and line.endswith("-m demo.server")


def test_fix_never_overwrites_a_skill_you_edited(tmp_path: Path) -> None:
    project = generated(tmp_path)
    skill = project / "skills" / "demo-agent" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nMy own notes.\n")
    (project / "plugin" / "plugin.json").unlink()
    done = run_validate(project, "--fix")
    assert "kept skills/demo-agent/SKILL.md" in done.stderr and "wrote plugin/plugin.json" in done.stderr
    assert skill.read_text().endswith("My own notes.\n")
    manifest = json.loads((project / MANIFEST).read_text())["files"]
    assert "skills/demo-agent/SKILL.md" not in manifest and "server.py" in manifest


def test_the_project_serves_its_skill_over_mcp(tmp_path: Path) -> None:
    project = generated(tmp_path)
    assert "✓ skill served over MCP: skill://demo-agent/SKILL.md is served" in run_validate(project).stdout
    server = project / "demo_agent" / "server.py"
    server.write_text(server.read_text().replace("skills=[SKILLS] if SKILLS.is_dir() else [],", ""))
    bad = [line for line in run_validate(project).stdout.splitlines() if line.startswith("✗ skill served over MCP")]
    assert bad and "does not serve its skills over MCP" in bad[0], bad


def test_force_says_what_it_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "demo-agent"
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith(f"Created {project}\n")
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path), "--force"]) == 0
    assert capsys.readouterr().out.startswith(f"Refreshed {project}: every file it generated is already up to date\n")
    (project / "server.py").unlink()
    (project / "README.md").write_text("mine\n")
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path), "--force", "--desc", "Counts words."]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "kept README.md (you changed it)"
    assert re.fullmatch(rf"Updated {re.escape(str(project))}: \d+ file\(s\) rewritten, 1 added", out[1]), out[1]


def test_the_directory_is_the_name_as_typed(tmp_path: Path) -> None:
    assert main_new(["--no-install", "my_agent", "--dir", str(tmp_path)]) == 0
    project = tmp_path / "my_agent"
    assert (project / "skills" / "my-agent" / "SKILL.md").is_file() and (project / "my_agent" / "server.py").is_file()
    assert 'name = "my-agent"' in (project / "pyproject.toml").read_text()


def test_outside_a_virtualenv_nothing_is_installed_and_the_command_is_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcp_agent_kit.scaffold import finish

    monkeypatch.setattr(finish, "in_virtualenv", lambda: False)
    monkeypatch.setattr(finish.subprocess, "run", lambda *a, **k: pytest.fail("nothing may be installed"))
    assert main_new(["demo-agent", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"Not installed ({sys.executable} does not run from a virtual environment)" in out
    assert f"  {sys.executable} -m pip install -e ." in out


def test_in_a_virtualenv_the_project_is_installed_with_its_pip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcp_agent_kit.scaffold import finish

    calls: list[list[str]] = []

    def pip(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        failing = len(calls) > 1
        return subprocess.CompletedProcess(command, 1 if failing else 0, "", "ERROR: no network\n" if failing else "")

    monkeypatch.setattr(finish, "in_virtualenv", lambda: True)
    monkeypatch.setattr(finish.subprocess, "run", pip)
    assert main_new(["demo-agent", "--dir", str(tmp_path)]) == 0
    project = tmp_path / "demo-agent"
    assert calls == [[sys.executable, "-m", "pip", "install", "-q", "-e", str(project)]]
    out = capsys.readouterr().out
    assert f"Installed demo-agent into {sys.prefix} in editable mode" in out and "pip install -e ." not in out
    assert main_new(["other-agent", "--dir", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"mcp-agent-kit: {tmp_path / 'other-agent'} was made, but installing it failed: ERROR: no network;"
        f" fix that, then run: {sys.executable} -m pip install -e {tmp_path / 'other-agent'}"]
    assert (tmp_path / "other-agent" / "validate.py").is_file() and "pip install -e ." in captured.out


@pytest.mark.parametrize(
    ("description", "tools", "expected"),
    [
        ("Reports text statistics.", [("text_stats", "Use when you need word counts. Do not use for tokens.")],
         "Reports text statistics. Use when you need word counts. Do not use for tokens."),
        ("Reports text statistics", [("a", "Use when you need A. Do not use for B."),
                                     ("b", "Use when the user wants <b>. Do not use for C.")],
         "Reports text statistics. Use when you need A, or when the user wants ‹b›."
         " Do not use for anything none of its tools covers."),
        ("Use when x happens. Do not use for y.", [("a", "Use when you need A. Do not use for B.")],
         "Use when x happens. Do not use for y."),
        ("Does things.", [("plain", "Shouts.")], "Does things. Use when a task calls for plain."
         " Do not use for anything none of its tools covers."),
    ],
)
def test_the_skill_description_reads_from_the_tools(
    description: str, tools: list[tuple[str, str]], expected: str
) -> None:
    from mcp_agent_kit.scaffold.render import skill_description

    wire = [{"name": name, "description": text} for name, text in tools]
    assert skill_description(description, derive("demo-agent"), wire) == expected


def test_a_skill_description_of_many_tools_stays_within_the_limit() -> None:
    from mcp_agent_kit.packaging.skill_validate import validate_text
    from mcp_agent_kit.scaffold.render import MAX_SKILL_DESCRIPTION, packaging_files, skill_description

    tools = [{"name": f"tool_{n}", "description": f"Use when you need thing number {n} done {'well ' * 10}."
              " Do not use for other things.", "inputSchema": {"type": "object"}} for n in range(40)]
    text = skill_description("Many tools.", derive("demo-agent"), tools)
    assert len(text) <= MAX_SKILL_DESCRIPTION and text.endswith(
        ", or when another of its 40 tools fits. Do not use for anything none of its tools covers.")
    skill = packaging_files(tools, derive("demo-agent"), "Many tools.")["skills/demo-agent/SKILL.md"]
    found, _ = validate_text(skill, dir_name="demo-agent")
    assert not [f for f in found if f.severity == "error"]
