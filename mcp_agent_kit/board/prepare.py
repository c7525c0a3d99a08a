"""board.prepare: a new worktree made ready for its agent: untracked files copied in, a setup command run.

Rules: knows paths and commands, not tasks or records; git only through board.git. The `copy`
globs are relative to the repository root (pathlib globs: `*` matches dotfiles, `**` any depth),
files only; a glob that is absolute, has `..` or starts with `~` is refused when the board starts;
a match that is a symlink leading out of the repository is refused before anything is made;
tracked files are never copied (the worktree has them at its base); a copy never replaces a file
the worktree already has, nor writes through a checked-out symlink that leads out of it. The
setup command is a shell string run as `sh -c COMMAND` (as CI files and other tools take it) in
its own process group, stdin closed, stdout and stderr together into a temporary file (so a
chatty command never blocks and only the tail is kept); on timeout the whole group is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from mcp_agent_kit.board.git import Git, WorkspaceError
from mcp_agent_kit.safefile import is_inside

TAIL_BYTES = 2048


def check_copy_globs(globs: Iterable[str]) -> tuple[str, ...]:
    """The `copy` globs, each relative to the repository root and staying inside it."""
    checked = []
    for pattern in globs:
        pure = PurePosixPath(pattern) if isinstance(pattern, str) else None
        if pure is None or not pattern.strip() or "\0" in pattern or pure.is_absolute() or ".." in pure.parts \
                or pattern.startswith("~") or "\\" in pattern:
            raise WorkspaceError(f"copy glob {pattern!r} must be relative to the repository root and stay inside it "
                                 "(e.g. '.env' or 'config/*.local.json')")
        checked.append(pattern)
    return tuple(checked)


def copy_sources(git: Git, root: Path, globs: Iterable[str]) -> list[str]:
    """The untracked files under `root` the globs match, relative and sorted."""
    found: set[str] = set()
    for pattern in globs:
        for match in root.glob(pattern):
            relative = match.relative_to(root)
            if ".git" in relative.parts:
                continue
            if not is_inside(match.resolve(), root):
                raise WorkspaceError(f"copy: {relative.as_posix()} leads outside the repository through a symlink: "
                                     "replace the link with a file or drop it from copy")
            if match.is_file():
                found.add(relative.as_posix())
    if not found:
        return []
    listed = git.run(["ls-files", "-z", "--cached", "--", *sorted(found)], root,
                     env={"GIT_LITERAL_PATHSPECS": "1"}).stdout.decode("utf-8", "surrogateescape")
    return sorted(found - set(listed.split("\0")))


def copy_in(root: Path, target: Path, sources: Iterable[str]) -> list[str]:
    """Copy each source (relative to `root`) to the same place under `target`, mode bits kept;
    returns those copied. An OSError is a WorkspaceError naming the file."""
    target, copied = target.resolve(), []
    for relative in sources:
        destination = target / relative
        parent = destination.parent
        while not parent.exists():
            parent = parent.parent
        if os.path.lexists(destination) or not is_inside(parent.resolve(), target):
            continue
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes((root / relative).read_bytes())
            destination.chmod((root / relative).stat().st_mode & 0o7777)
        except OSError as exc:
            raise WorkspaceError(f"copy of {relative} failed: {exc}") from None
        copied.append(relative)
    return copied


def run_setup(command: str, cwd: Path, env: Mapping[str, str], timeout: float) -> tuple[int | None, str]:
    """Run `sh -c command` in `cwd`: (its exit status, None when it ran past `timeout`; the last
    TAIL_BYTES of its output). A command that cannot start is a WorkspaceError."""
    with tempfile.TemporaryFile() as out:
        try:
            child = subprocess.Popen(["sh", "-c", command], cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            raise WorkspaceError(f"setup could not start: {exc}") from None
        code: int | None = None
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if code is None:  # timed out, or we were interrupted: the whole group goes
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        out.seek(max(0, out.seek(0, os.SEEK_END) - TAIL_BYTES))
        return code, out.read().decode("utf-8", "replace")
