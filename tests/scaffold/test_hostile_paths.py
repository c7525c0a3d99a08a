"""Hostile paths: `create-mcp-agent --force` and `validate.py --fix` never write through a symlinked
directory to outside the project, and names with a trailing newline are refused, not a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_agent_kit.core.registry import TOOL_NAME
from mcp_agent_kit.scaffold import checks
from mcp_agent_kit.scaffold.cli import main_new
from mcp_agent_kit.scaffold.names import NameError_, derive
from mcp_agent_kit.scaffold.render import MANIFEST

pytestmark = pytest.mark.skipif(not hasattr(Path, "symlink_to"), reason="needs symlinks")


def generated(tmp_path: Path) -> Path:
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 0
    return tmp_path / "demo-agent"


def swap_for_symlink(project: Path, rel: str, outside: Path) -> None:
    """Replace the project's directory `rel` by a symlink to the empty directory `outside`."""
    shutil.rmtree(project / rel)
    outside.mkdir()
    (project / rel).symlink_to(outside, target_is_directory=True)


@pytest.mark.parametrize("rel", ["skills", "plugin", "skills/demo-agent"])
def test_force_refuses_a_symlinked_directory_out(tmp_path: Path, rel: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    project = generated(tmp_path)
    outside = tmp_path / "outside"
    swap_for_symlink(project, rel, outside)
    capsys.readouterr()
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path), "--force"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "symlink" in err and "nothing was written" in err, err
    assert list(outside.iterdir()) == []


def run_fix(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "validate.py", "--fix"], cwd=project, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("manifest", [True, False], ids=["generated", "no-manifest"])
def test_fix_refuses_a_symlinked_directory_out(tmp_path: Path, manifest: bool) -> None:
    project = generated(tmp_path)
    if not manifest:
        (project / MANIFEST).unlink()
    outside = tmp_path / "outside"
    swap_for_symlink(project, "plugin", outside)
    done = run_fix(project)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().startswith("validate.py --fix: ") and len(done.stderr.strip().splitlines()) == 1
    assert list(outside.iterdir()) == []


def test_fix_without_manifest_does_not_write_through_a_dangling_symlink(tmp_path: Path) -> None:
    project = generated(tmp_path)
    (project / MANIFEST).unlink()
    target = tmp_path / "planted.json"
    (project / "plugin" / "plugin.json").unlink()
    (project / "plugin" / "plugin.json").symlink_to(target)
    run_fix(project)
    assert not target.exists()


def test_force_still_regenerates_inside_symlinks(tmp_path: Path) -> None:
    """A symlinked directory that stays inside the project is not refused."""
    project = generated(tmp_path)
    (project / "docs-real").mkdir()
    (project / "docs-link").symlink_to(project / "docs-real", target_is_directory=True)
    (project / "plugin" / "plugin.json").unlink()
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path), "--force"]) == 0
    assert (project / "plugin" / "plugin.json").is_file()


@pytest.mark.parametrize("raw", ["my-agent\n", "my_agent\n", "agent\r\n"])
def test_a_trailing_newline_is_not_a_name(raw: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(NameError_):
        derive(raw)
    assert main_new(["--no-install", raw]) == 2
    assert "not a safe name" in capsys.readouterr().err


def test_tool_names_are_matched_whole() -> None:
    assert TOOL_NAME.fullmatch("text_stats") and not TOOL_NAME.fullmatch("text_stats\n")
    assert any("name" in v for v in checks.tool_rule_violations({"name": "shout\n", "description": ""}))
    from mcp_agent_kit import Server

    server = Server("t")
    with pytest.raises(ValueError, match="invalid tool name"):
        server.tool(name="shout\n")(lambda: "x")
