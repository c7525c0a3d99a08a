"""board.git: the one place the board runs git, and the errors every workspace operation raises.

Rules: standard library only; imports nothing of ours. git (MIN_VERSION or newer) is found on PATH
once per Git object; a missing or older git is one GitUnavailable line naming the fix. Every
command runs from a list argv (never a shell) with stdin closed, a timeout, and these settings
for that command only (nothing is written to any git config):
- no hooks (`core.hooksPath=/dev/null`): the board runs unattended, and a repository whose hooks
  live in its tree (`core.hooksPath=.husky`) would otherwise run code an agent edited in its
  worktree. Commits are made with plumbing (commit-tree), which runs no hooks anyway; the
  board's `setup` command is the place for per-workspace preparation;
- no background maintenance (`gc.auto=0`, `maintenance.auto=false`), paths unquoted;
- GIT_TERMINAL_PROMPT=0 (a credential prompt fails instead of waiting), GIT_OPTIONAL_LOCKS=0
  (status never rewrites a checkout's index), and none of the variables that point git at
  another repository or index (GIT_DIR, GIT_INDEX_FILE, ... as `git rev-parse --local-env-vars`
  lists them) inherited from whoever started the board.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_agent_kit.board.errors import BoardError

MIN_VERSION = (2, 30)
DEFAULT_TIMEOUT_S = 120.0  # one git command; `worktree add` of a large repository checks out every file
SETTINGS = ("core.hooksPath=/dev/null", "core.quotePath=false", "gc.auto=0", "maintenance.auto=false",
            "advice.detachedHead=false")
LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
             "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
             "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_SHALLOW_FILE",
             "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_INTERNAL_SUPER_PREFIX")
FIX = "install git 2.30 or newer"
_VERSION = re.compile(r"git version (\d+)\.(\d+)(?:\.(\d+))?")


class WorkspaceError(BoardError):
    """A workspace operation could not be done; the message is one line naming the problem."""


class GitUnavailable(WorkspaceError):
    """git is missing or older than MIN_VERSION."""


class GitError(WorkspaceError):
    """A git command failed: the message quotes git's own last line; `stderr` holds all of it."""

    def __init__(self, argv: Sequence[str], returncode: int | None, stderr: str, what: str | None = None) -> None:
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        why = what or (lines[-1] if lines else f"exit status {returncode}")
        super().__init__(f"git {argv[0] if argv else ''} failed: {why}")
        self.argv, self.returncode, self.stderr = list(argv), returncode, stderr


def git_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment without the variables that aim git elsewhere, plus the board's settings and `extra`."""
    env = {name: value for name, value in os.environ.items() if name not in LOCAL_ENV}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_MERGE_AUTOEDIT="no")
    env.update(extra or {})
    return env


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(2, 39, 5) from `git version 2.39.5` (also `... (Apple Git-145)`, `2.41.0.windows.1`)."""
    found = _VERSION.search(text)
    return (int(found[1]), int(found[2]), int(found[3] or 0)) if found else None


@dataclass(frozen=True)
class Worktree:
    """One entry of `git worktree list --porcelain`."""

    path: str
    head: str | None = None  # None in a repository without commits
    branch: str | None = None  # `refs/heads/x`, None when detached
    bare: bool = False
    locked: bool = False
    prunable: bool = False


def parse_worktrees(text: str, separator: str) -> list[Worktree]:
    """The entries of `git worktree list --porcelain` (separator "\\0" with -z, else "\\n")."""
    found: list[Worktree] = []
    fields: dict[str, str] = {}
    for line in [*text.split(separator), ""]:
        if line:
            key, _, value = line.partition(" ")
            fields[key] = value
        elif "worktree" in fields:
            found.append(Worktree(path=fields["worktree"], head=fields.get("HEAD"), branch=fields.get("branch"),
                                  bare="bare" in fields, locked="locked" in fields, prunable="prunable" in fields))
            fields = {}
    return found


class Git:
    """Runs git for the board: `run` (bytes out, an error on failure) and `text` (stripped output)."""

    def __init__(self, executable: str = "git", *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        found = shutil.which(executable)
        if found is None:
            raise GitUnavailable(f"git is not installed (no {executable!r} on PATH): {FIX}")
        self.executable, self.timeout = found, timeout
        try:
            done = subprocess.run([found, "--version"], stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, env=git_environment(), check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitUnavailable(f"cannot run {found} --version ({exc}): {FIX}") from None
        version = parse_version(done.stdout.decode("utf-8", "replace"))
        if version is None:
            raise GitUnavailable(f"{found} does not say which git it is: {FIX}")
        if version[:2] < MIN_VERSION:
            raise GitUnavailable(f"git {'.'.join(map(str, version))} is too old: {FIX}")
        self.version = version

    def run(self, args: Sequence[str], cwd: str | Path, *, env: Mapping[str, str] | None = None,
            ok: Sequence[int] = (0,), timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """`git <args>` in `cwd`; a return code outside `ok`, a timeout or a failed start is a GitError."""
        argv = [self.executable, *(word for setting in SETTINGS for word in ("-c", setting)), *args]
        limit = self.timeout if timeout is None else timeout
        try:
            done = subprocess.run(argv, cwd=cwd, env=git_environment(env), stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=limit, check=False)
        except subprocess.TimeoutExpired:
            raise GitError(args, None, "", f"no answer within {limit:g} s") from None
        except OSError as exc:
            raise GitError(args, None, "", str(exc)) from None
        if done.returncode not in ok:
            raise GitError(args, done.returncode, done.stderr.decode("utf-8", "replace"))
        return done

    def text(self, args: Sequence[str], cwd: str | Path, *, env: Mapping[str, str] | None = None) -> str:
        """`run`'s output as text (UTF-8, undecodable bytes replaced), surrounding whitespace stripped."""
        return self.run(args, cwd, env=env).stdout.decode("utf-8", "replace").strip()

    def succeeds(self, args: Sequence[str], cwd: str | Path) -> bool:
        """Whether `git <args>` exits 0 (1 is a plain no; anything else is still a GitError)."""
        return self.run(args, cwd, ok=(0, 1)).returncode == 0

    def worktrees(self, cwd: str | Path) -> list[Worktree]:
        """Every worktree of the repository at `cwd` (-z where git has it, 2.36 and newer)."""
        if self.version >= (2, 36):
            out = self.run(["worktree", "list", "--porcelain", "-z"], cwd).stdout
            return parse_worktrees(out.decode("utf-8", "surrogateescape"), "\0")
        return parse_worktrees(self.run(["worktree", "list", "--porcelain"], cwd).stdout.decode(
            "utf-8", "surrogateescape"), "\n")
