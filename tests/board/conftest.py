"""Fixtures for the board's tests: a temporary git repository with git's identity and config kept
inside the test (HOME, no system or global config, author and committer from the environment)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.git import LOCAL_ENV
from mcp_agent_kit.board.workspaces import Workspaces


def run_git(cwd: Path | str, *args: str) -> str:
    """git itself, as the tests' witness: its stripped stdout; a failure fails the test."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@pytest.fixture(autouse=True)
def git_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    for name in LOCAL_ENV:
        monkeypatch.delenv(name, raising=False)
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Ada Tester")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "ada@example.com")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on `main` with one commit: a README, a small program, a tracked config, a .gitignore."""
    root = tmp_path / "repo"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("hello\nworld\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('one')\nprint('two')\nprint('three')\n")
    (root / "config").mkdir()
    (root / "config" / "base.json").write_text('{"tracked": true}\n')
    (root / ".gitignore").write_text(".env\n*.log\nconfig/*.local.json\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "first")
    return root


@pytest.fixture(params=["fake", "real"])
def any_board(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """For the surfaces' tests that use only the Board contract: the FakeBoard, then the real Board (not
    started) on a temporary repository (tests/board/surfaces.py)."""
    from tests.board.surfaces import BOARDS

    opened = BOARDS[request.param](tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def any_url(any_board: Any) -> Iterator[str]:
    """`any_board`'s MCP endpoint, served in this process."""
    from tests.board.surfaces import served

    with served(any_board) as address:
        yield address


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "board-data"


@pytest.fixture
def spaces(repo: Path, data: Path) -> Workspaces:
    return Workspaces(repo, data)


def snapshot(root: Path) -> dict[str, str]:
    """What a person would see of a checkout and its refs: branches, status, staged and unstaged diffs, worktrees."""
    return {"refs": run_git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
            "status": run_git(root, "status", "--porcelain=v1", "--untracked-files=all"),
            "staged": run_git(root, "diff", "--cached"), "unstaged": run_git(root, "diff"),
            "worktrees": run_git(root, "worktree", "list", "--porcelain")}


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Any]:
    """The FakeBoard (tests/board/fake_board.py) for the surfaces' tests that play its runner's steps."""
    from tests.board.surfaces import open_board

    opened = open_board(tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def url(board: Any) -> Iterator[str]:
    """`board`'s MCP endpoint, served in this process."""
    from tests.board.surfaces import served

    with served(board) as address:
        yield address
