"""gitwork: running git, and a checkout's changes — the protocol-free part the board and the agent host share.

Rules: standard library only; imports nothing of ours; knows paths, refs and commits, never tasks or requests.
git (MIN_VERSION or newer) is found on PATH once per GitRunner object; a missing or older git is one GitMissing
line naming the fix. Every command runs from a list argv (never a shell) with stdin closed, a timeout, and these
settings for that command only (nothing is written to any git config):
- no hooks (`core.hooksPath=/dev/null`): a repository whose hooks live in its tree (`core.hooksPath=.husky`)
  would otherwise run code an agent edited in its worktree. Commits are made with plumbing (commit-tree),
  which runs no hooks anyway;
- no background maintenance (`gc.auto=0`, `maintenance.auto=false`), paths unquoted;
- GIT_TERMINAL_PROMPT=0 (a credential prompt fails instead of waiting), GIT_OPTIONAL_LOCKS=0 (status never
  rewrites a checkout's index), and none of the variables that point git at another repository or index
  (GIT_DIR, GIT_INDEX_FILE, ... as `git rev-parse --local-env-vars` lists them) inherited from our caller.
Changes: a diff stages the checkout into a temporary index (a copy of its own, GIT_INDEX_FILE), so it sees
new untracked files (not ignored ones) as the commit would; a commit is made with plumbing (write-tree,
commit-tree) and the branch moved with a compare-and-swap (update-ref NEW OLD). The error types a GitRunner raises
are its class attributes (board.git subclasses them into the board's error family).
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "DIFF_FLAGS",
    "FIX",
    "LOCAL_ENV",
    "MIN_VERSION",
    "SETTINGS",
    "STATUS",
    "Diff",
    "FileChange",
    "GitFailed",
    "GitMissing",
    "GitRunner",
    "GitWorkError",
    "Worktree",
    "commit_all",
    "diff",
    "git_environment",
    "move_branch",
    "parse_author",
    "parse_listing",
    "parse_version",
    "parse_worktrees",
    "staged",
]

MIN_VERSION = (2, 30)
DEFAULT_TIMEOUT_S = 120.0  # one git command; `worktree add` of a large repository checks out every file
SETTINGS = ("core.hooksPath=/dev/null", "core.quotePath=false", "gc.auto=0", "maintenance.auto=false",
            "advice.detachedHead=false")
LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
             "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
             "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_SHALLOW_FILE",
             "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_INTERNAL_SUPER_PREFIX")
FIX = "install git 2.30 or newer"
STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "added", "T": "modified"}
DIFF_FLAGS = ("--no-ext-diff", "--no-textconv", "--no-relative", "--no-color", "-M")
_AUTHOR = re.compile(r"^\s*([^<>]*?)\s*<([^<>\s]+)>\s*$")
_VERSION = re.compile(r"git version (\d+)\.(\d+)(?:\.(\d+))?")


class GitWorkError(Exception):
    """A git operation could not be done; the message is one line naming the problem."""


class GitMissing(GitWorkError):
    """git is missing or older than MIN_VERSION."""


class GitFailed(GitWorkError):
    """A git command failed: the message quotes git's own last line; `stderr` holds all of it."""

    def __init__(self, argv: Sequence[str], returncode: int | None, stderr: str, what: str | None = None) -> None:
        lines = [line.strip() for line in stderr.splitlines() if line.strip()]
        why = what or (lines[-1] if lines else f"exit status {returncode}")
        super().__init__(f"git {argv[0] if argv else ''} failed: {why}")
        self.argv, self.returncode, self.stderr = list(argv), returncode, stderr


def git_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment without the variables that aim git elsewhere, plus our settings and `extra`."""
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


class GitRunner:
    """Runs git: `run` (bytes out, an error on failure) and `text` (stripped output). The error types it raises
    are class attributes, so a caller with its own error family subclasses them (board.git)."""

    unavailable: type[GitMissing] = GitMissing
    failed: type[GitFailed] = GitFailed
    invalid: type[Exception] = GitWorkError  # bad input (an author that is not 'Name <email>')

    def __init__(self, executable: str = "git", *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.options: tuple[str, ...] = ()  # global options after the settings (`bound`)
        found = shutil.which(executable)
        if found is None:
            raise self.unavailable(f"git is not installed (no {executable!r} on PATH): {FIX}")
        self.executable, self.timeout = found, timeout
        try:
            done = subprocess.run([found, "--version"], stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, env=git_environment(), check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise self.unavailable(f"cannot run {found} --version ({exc}): {FIX}") from None
        version = parse_version(done.stdout.decode("utf-8", "replace"))
        if version is None:
            raise self.unavailable(f"{found} does not say which git it is: {FIX}")
        if version[:2] < MIN_VERSION:
            raise self.unavailable(f"git {'.'.join(map(str, version))} is too old: {FIX}")
        self.version = version

    def run(self, args: Sequence[str], cwd: str | Path, *, env: Mapping[str, str] | None = None,
            ok: Sequence[int] = (0,), timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """`git <args>` in `cwd`; a return code outside `ok`, a timeout or a failed start is a GitFailed."""
        argv = [self.executable, *(word for setting in SETTINGS for word in ("-c", setting)), *self.options, *args]
        limit = self.timeout if timeout is None else timeout
        try:
            done = subprocess.run(argv, cwd=cwd, env=git_environment(env), stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=limit, check=False)
        except subprocess.TimeoutExpired:
            raise self.failed(args, None, "", f"no answer within {limit:g} s") from None
        except OSError as exc:
            raise self.failed(args, None, "", str(exc)) from None
        if done.returncode not in ok:
            raise self.failed(args, done.returncode, done.stderr.decode("utf-8", "replace"))
        return done

    def bound(self, *options: str) -> GitRunner:
        """A copy that puts `options` (`--git-dir=...`, `-c name=value`) before every command's arguments."""
        twin = copy.copy(self)
        twin.options = (*self.options, *options)
        return twin

    def text(self, args: Sequence[str], cwd: str | Path, *, env: Mapping[str, str] | None = None) -> str:
        """`run`'s output as text (UTF-8, undecodable bytes replaced), surrounding whitespace stripped."""
        return self.run(args, cwd, env=env).stdout.decode("utf-8", "replace").strip()

    def succeeds(self, args: Sequence[str], cwd: str | Path) -> bool:
        """Whether `git <args>` exits 0 (1 is a plain no; anything else is still a GitFailed)."""
        return self.run(args, cwd, ok=(0, 1)).returncode == 0

    def worktrees(self, cwd: str | Path) -> list[Worktree]:
        """Every worktree of the repository at `cwd` (-z where git has it, 2.36 and newer)."""
        if self.version >= (2, 36):
            out = self.run(["worktree", "list", "--porcelain", "-z"], cwd).stdout
            return parse_worktrees(out.decode("utf-8", "surrogateescape"), "\0")
        return parse_worktrees(self.run(["worktree", "list", "--porcelain"], cwd).stdout.decode(
            "utf-8", "surrogateescape"), "\n")


class FileChange(TypedDict):
    path: str
    status: str  # added | modified | deleted | renamed
    added: int  # lines; 0 for a binary file
    removed: int
    binary: bool
    oldPath: NotRequired[str]  # renamed: where it came from


class Diff(TypedDict):
    files: list[FileChange]
    patch: str


def parse_author(author: str, error: type[Exception] = GitWorkError) -> dict[str, str]:
    """`Name <email>` as the GIT_AUTHOR_* variables; anything else is an `error`."""
    found = _AUTHOR.match(author)
    if not found or not found[1]:
        raise error(f"author {author!r} is not 'Name <email>': give it as e.g. 'Ada <ada@example.com>'")
    return {"GIT_AUTHOR_NAME": found[1], "GIT_AUTHOR_EMAIL": found[2]}


@contextmanager
def staged(git: GitRunner, path: Path) -> Iterator[dict[str, str]]:
    """An environment whose GIT_INDEX_FILE is a temporary index holding every change in the
    checkout at `path` (tracked, and untracked files not ignored); the checkout's index is only read."""
    index = Path(path, git.text(["rev-parse", "--git-path", "index"], path))
    with tempfile.TemporaryDirectory(prefix="git-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch, "index"))}
        if index.is_file():  # a copy keeps the stat data, so only changed files are hashed again, and its
            shutil.copy2(index, env["GIT_INDEX_FILE"])  # time too: git trusts no entry as new as the index
        elif git.succeeds(["rev-parse", "--verify", "--quiet", "HEAD"], path):
            git.run(["read-tree", "HEAD"], path, env=env)
        git.run(["add", "--all", "--", ":/"], path, env=env)
        yield env


def diff(git: GitRunner, path: Path, base_commit: str, *, binary: bool = False) -> Diff:
    """The checkout at `path` against `base_commit`: commits made there and uncommitted changes
    alike, new untracked files included. `binary` puts applicable binary patches in the patch
    (otherwise `Binary files ... differ`)."""
    with staged(git, path) as env:
        listing = git.run(["diff", "--cached", *DIFF_FLAGS, "--raw", "--numstat", "-z", base_commit, "--"],
                          path, env=env).stdout.decode("utf-8", "replace")
        patch = git.run(["diff", "--cached", *DIFF_FLAGS, "--src-prefix=a/", "--dst-prefix=b/",
                         *(["--binary"] if binary else []), base_commit, "--"], path, env=env).stdout
    return {"files": parse_listing(listing), "patch": patch.decode("utf-8", "replace")}


def parse_listing(listing: str) -> list[FileChange]:
    """`git diff --raw --numstat -z` output as FileChange entries, in git's order."""
    words = iter(listing.split("\0"))
    files: dict[str, FileChange] = {}
    for word in words:
        if word.startswith(":"):
            letter = word.split()[-1][:1]
            old = next(words) if letter in "RC" else None
            change: FileChange = {"path": next(words), "status": STATUS.get(letter, "modified"), "added": 0,
                                  "removed": 0, "binary": False}
            if letter == "R" and old is not None:
                change["oldPath"] = old
            files[change["path"]] = change
        elif word:
            added, removed, name = word.split("\t", 2)
            if not name:  # a rename: the old and the new path follow
                next(words)
                name = next(words)
            if name in files:
                binary = added == "-"
                files[name]["added"] = 0 if binary else int(added)
                files[name]["removed"] = 0 if binary else int(removed)
                files[name]["binary"] = binary
    return list(files.values())


def commit_all(git: GitRunner, path: Path, parent: str, message: str, author: str | None,
               committer: Mapping[str, str] | None = None) -> str:
    """A commit of everything in the checkout at `path` (as `diff` sees it) on top of `parent`, or
    `parent` itself when nothing differs from it (`committer`: GIT_COMMITTER_* variables, when given).
    Nothing is moved: the caller moves the branch."""
    env = {**(parse_author(author, git.invalid) if author else {}), **(committer or {})}
    with staged(git, path) as index:
        tree = git.text(["write-tree"], path, env=index)
    if tree == git.text(["rev-parse", f"{parent}^{{tree}}"], path):
        return parent
    return git.text(["commit-tree", tree, "-p", parent, "-m", message], path, env=env)


def move_branch(git: GitRunner, path: Path, new: str, old: str, reason: str = "board: accept") -> None:
    """Move the checkout's HEAD (its branch) from `old` to `new` and bring its index along; its files,
    already those of `new`, stay as they are (`reason`: the reflog's message)."""
    if new != old:
        git.run(["update-ref", "-m", reason, "HEAD", new, old], path)
        git.run(["reset", "--mixed"], path)  # no --quiet: older gits then skip the refresh
