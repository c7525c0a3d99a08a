"""Generated projects stay green as users grow them, and the older kit's quick start works as written.

The older "stateless MCP" kit's five lines are pasted into bash, with the kit's wheel in a fresh
virtualenv on PATH (what `source venv/bin/activate` does) and pip kept offline (a local
wheelhouse). The tutorial's step 4 (docs/tutorial.md) is followed literally: its code replaces
the generated tools, the generated tests stay green, and a planted failing test fails validate.py
with a ✗ line naming it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mcp_agent_kit.packaging.skill_validate import validate_skill
from mcp_agent_kit.scaffold.cli import main_new
from tests.scaffold.conftest import KitWheel

ROOT = Path(__file__).resolve().parents[2]
# The older kit's quick start, word for word; its first line installs from PyPI, which here is the wheel.
OLDER_KITS_FIVE_LINES = """\
pip install mcp-agent-kit
create-mcp-agent my_agent
cd my_agent
python validate.py
python server.py
"""
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}
PLANTED = '''import unittest


class PlantedTest(unittest.TestCase):
    def test_shout_is_polite(self) -> None:
        from weather_agent.tools import shout

        self.assertEqual(shout("hi"), "hi")
'''


def venv_env(venv: Path, house: Path) -> dict[str, str]:
    """An environment with `venv` activated and pip offline (this test run's own venv left out)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHON", "PIP_"))}
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and not p.startswith(sys.prefix)]
    env.update(PATH=os.pathsep.join([str(venv / "bin"), *rest]), VIRTUAL_ENV=str(venv), PIP_NO_INDEX="1",
               PIP_FIND_LINKS=str(house), PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def test_the_older_kits_five_lines_work_as_written(kit_wheel: KitWheel, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    script = OLDER_KITS_FIVE_LINES.replace("pip install mcp-agent-kit", f"pip install -q '{kit_wheel.wheel}'")
    script = "set -e\n" + script.replace("python server.py", "python server.py < ../discover.jsonl")
    (tmp_path / "discover.jsonl").write_text(json.dumps(DISCOVER) + "\n")
    done = subprocess.run(["bash"], input=script, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=venv_env(venv, kit_wheel.house))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout.splitlines()
    assert f"Created {tmp_path / 'my_agent'}" in out and any(line.startswith("Installed my-agent into") for line in out)
    checks = [line for line in out if line.startswith(("✓", "✗"))]
    assert checks and all(line.startswith("✓") for line in checks), done.stdout
    for name in ("Claude Desktop entry", "project tests", "dual-era probe", "SKILL.md"):
        assert any(line.startswith(f"✓ {name}:") for line in checks), name
    answer = json.loads(out[-1])
    assert answer["id"] == 1 and "2026-07-28" in answer["result"]["supportedVersions"], out[-1]
    # A --force rerun refreshes, and does not install again (the project is already installed, editable).
    again = subprocess.run(["create-mcp-agent", "my_agent", "--force"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120, env=venv_env(venv, kit_wheel.house))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"Refreshed {tmp_path / 'my_agent'}: ") and "Installing" not in again.stdout


def tutorial_step_4_code() -> str:
    text = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    section = text.split("## 4. Add a tool", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "docs/tutorial.md step 4 has no python block"
    return found.group(1)


def validate(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "validate.py", *args], cwd=project, capture_output=True, text=True,
                          timeout=300)


def not_installed_only(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The ✗ lines other than the Claude Desktop entry (the project is not pip-installed here)."""
    return [line for line in done.stdout.splitlines()
            if line.startswith("✗") and not line.startswith("✗ Claude Desktop entry:")]


def test_the_tutorials_step_4_keeps_the_tests_green_and_a_failing_test_fails_validate(tmp_path: Path) -> None:
    desc = "Reports simple statistics about text."
    assert main_new(["--no-install", "weather-agent", "--desc", desc, "--dir", str(tmp_path)]) == 0
    project = tmp_path / "weather-agent"
    (project / "weather_agent" / "tools" / "__init__.py").write_text(tutorial_step_4_code(), encoding="utf-8")
    fixed = validate(project, "--fix")
    assert not not_installed_only(fixed), fixed.stdout
    assert "✓ project tests: 3 test(s) passed" in fixed.stdout and "✓ tool design rules: tool 'shout'" in fixed.stdout
    tests = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests", "-v"], cwd=project,
                           capture_output=True, text=True, timeout=120)
    assert tests.returncode == 0 and "OK" in tests.stderr, tests.stderr
    skill = project / "skills" / "weather-agent"
    about = validate_skill(skill, strict=True)
    assert not [f for f in about.findings if f.severity == "error"], about.findings
    head = (skill / "SKILL.md").read_text(encoding="utf-8").split("---")[1]
    assert f"{desc} Use when the user wants text in capital letters, or when you need the number of words" in head
    checked = subprocess.run([sys.executable, "-m", "skills_ref.cli", "validate", str(skill)], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    (project / "tests" / "test_planted.py").write_text(PLANTED, encoding="utf-8")
    failed = validate(project)
    assert failed.returncode == 1
    bad = not_installed_only(failed)
    assert bad == ["✗ project tests: FAIL test_planted.PlantedTest.test_shout_is_polite: tests/test_planted.py:8:"
                   " AssertionError: 'HI' != 'hi'"], failed.stdout
    report = json.loads(validate(project, "--json").stdout)
    rows = [row for row in report["checks"] if row["check"] == "project tests"]
    assert report["ok"] is False and [row["ok"] for row in rows] == [False]
    assert "test_planted.PlantedTest.test_shout_is_polite" in rows[0]["detail"]


def test_a_test_module_that_does_not_import_and_a_hanging_test_are_named(tmp_path: Path) -> None:
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 0
    project = tmp_path / "demo-agent"
    (project / "tests" / "test_broken.py").write_text("import no_such_module_here\n", encoding="utf-8")
    hangs = "import threading\nimport unittest\n\n\nclass HangTest(unittest.TestCase):\n" \
            "    def test_waits_forever(self) -> None:\n        threading.Event().wait()\n"
    (project / "tests" / "test_hangs.py").write_text(hangs, encoding="utf-8")
    done = validate(project, "--tests-timeout", "3")
    bad = not_installed_only(done)
    assert bad[0] == ("✗ project tests: tests/test_broken.py cannot be imported: "
                      "ModuleNotFoundError: No module named 'no_such_module_here'"), done.stdout
    assert bad[1].startswith("✗ project tests: the tests did not finish within 3 s (still running: "
                             "test_hangs.HangTest.test_waits_forever)"), done.stdout
    assert len(bad) == 2 and done.returncode == 1
    usage = validate(project, "--tests-timeout", "0")
    assert usage.returncode == 2 and "expected a positive number of seconds" in usage.stderr
