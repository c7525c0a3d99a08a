"""board.changes: a workspace's changes as the board shows and keeps them: diff, commit, merge.

Rules: runs git through board.git only; knows paths, refs and commits, not tasks. Nothing here
touches the index of a checkout a person uses: a diff stages the workspace into a temporary
index (a copy of the workspace's own, GIT_INDEX_FILE), so it sees new untracked files (not
ignored ones) as the commit would; a commit is made with plumbing (write-tree, commit-tree) and
the branch moved with a compare-and-swap (update-ref NEW OLD). A merge is computed without any
checkout (`git merge-tree --write-tree`, git 2.38 and newer; older gits merge in a temporary
detached worktree that is removed again) and then applied to the base branch only as a
fast-forward: with update-ref where the branch is not checked out, with `merge --ff-only` in the
one clean checkout where it is. A dirty or busy base checkout, or a conflict, is a MergeRefused
raised before any ref, index or file changed (git may have written unreferenced objects).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NotRequired, TypedDict

from mcp_agent_kit.board.git import Git, GitError, WorkspaceError

STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "added", "T": "modified"}
DIFF_FLAGS = ("--no-ext-diff", "--no-textconv", "--no-relative", "--no-color", "-M")
_AUTHOR = re.compile(r"^\s*([^<>]*?)\s*<([^<>\s]+)>\s*$")
# where a worktree's git directory says its branch is being rebased or bisected (so it is not free)
BUSY_FILES = ("rebase-merge/head-name", "rebase-apply/head-name", "BISECT_START")


class MergeRefused(WorkspaceError):
    """The merge into the base branch was not done, and nothing changed; `conflicts` lists the
    conflicting paths (empty when the base checkout was dirty or busy)."""

    def __init__(self, message: str, conflicts: list[str] | None = None) -> None:
        super().__init__(message)
        self.conflicts = conflicts or []


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


def parse_author(author: str) -> dict[str, str]:
    """`Name <email>` as the GIT_AUTHOR_* variables; anything else is a WorkspaceError."""
    found = _AUTHOR.match(author)
    if not found or not found[1]:
        raise WorkspaceError(f"author {author!r} is not 'Name <email>': give it as e.g. 'Ada <ada@example.com>'")
    return {"GIT_AUTHOR_NAME": found[1], "GIT_AUTHOR_EMAIL": found[2]}


@contextmanager
def staged(git: Git, path: Path) -> Iterator[dict[str, str]]:
    """An environment whose GIT_INDEX_FILE is a temporary index holding every change in the
    checkout at `path` (tracked, and untracked files not ignored); the checkout's index is only read."""
    index = Path(path, git.text(["rev-parse", "--git-path", "index"], path))
    with tempfile.TemporaryDirectory(prefix="board-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch, "index"))}
        if index.is_file():  # a copy keeps the stat data, so only changed files are hashed again, and its
            shutil.copy2(index, env["GIT_INDEX_FILE"])  # time too: git trusts no entry as new as the index
        elif git.succeeds(["rev-parse", "--verify", "--quiet", "HEAD"], path):
            git.run(["read-tree", "HEAD"], path, env=env)
        git.run(["add", "--all", "--", ":/"], path, env=env)
        yield env


def diff(git: Git, path: Path, base_commit: str, *, binary: bool = False) -> Diff:
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


def commit_all(git: Git, path: Path, parent: str, message: str, author: str | None) -> str:
    """A commit of everything in the checkout at `path` (as `diff` sees it) on top of `parent`, or
    `parent` itself when nothing differs from it. Nothing is moved: the caller moves the branch."""
    env = parse_author(author) if author else {}
    with staged(git, path) as index:
        tree = git.text(["write-tree"], path, env=index)
    if tree == git.text(["rev-parse", f"{parent}^{{tree}}"], path):
        return parent
    return git.text(["commit-tree", tree, "-p", parent, "-m", message], path, env=env)


def move_branch(git: Git, path: Path, new: str, old: str) -> None:
    """Move the checkout's HEAD (its branch) from `old` to `new` and bring its index along; its files,
    already those of `new`, stay as they are."""
    if new != old:
        git.run(["update-ref", "-m", "board: accept", "HEAD", new, old], path)
        git.run(["reset", "--mixed"], path)  # no --quiet: older gits then skip the refresh


def common_dir(git: Git, root: Path) -> Path:
    return Path(root, git.text(["rev-parse", "--git-common-dir"], root)).resolve()


def _busy(git: Git, root: Path, ref: str) -> str | None:
    """Why `ref` may not be moved now (a rebase or bisect of it somewhere), or None."""
    common = common_dir(git, root)
    admin = [common, *(sorted((common / "worktrees").iterdir()) if (common / "worktrees").is_dir() else [])]
    for folder in admin:
        for name in BUSY_FILES:
            try:
                said = (folder / name).read_text("utf-8").strip()
            except OSError:
                continue
            if said in (ref, ref.removeprefix("refs/heads/")):
                return "rebase" if name.startswith("rebase") else "bisect"
    return None


def merge_plan(git: Git, root: Path, base_branch: str) -> tuple[str, Path | None]:
    """(the base branch's tip, the checkout where it is checked out or None) when merging into it
    cannot touch uncommitted work; otherwise a MergeRefused naming what to do first."""
    ref = f"refs/heads/{base_branch}"
    found = git.run(["rev-parse", "--verify", "--quiet", ref], root, ok=(0, 1))
    if found.returncode:
        raise MergeRefused(f"the base branch {base_branch} no longer exists: accept without merge")
    busy = _busy(git, root, ref)
    if busy:
        raise MergeRefused(f"the base branch {base_branch} is in the middle of a {busy}: finish or abort it first")
    checkouts = [tree for tree in git.worktrees(root) if tree.branch == ref]
    if not checkouts:
        return found.stdout.decode().strip(), None
    where = Path(checkouts[0].path)
    if checkouts[0].prunable or not where.is_dir():
        raise MergeRefused(f"the base branch {base_branch} is checked out in {where}, which is missing: "
                           "run 'git worktree prune' first")
    dirty = git.run(["status", "--porcelain", "-z", "--untracked-files=no"], where).stdout
    merging = git.succeeds(["rev-parse", "--verify", "--quiet", "MERGE_HEAD"], where)
    if dirty or merging:
        raise MergeRefused(f"the base branch {base_branch} is checked out in {where} with uncommitted changes: "
                           "commit or stash them there first")
    return found.stdout.decode().strip(), where


def merged_commit(git: Git, root: Path, scratch: Path, base_tip: str, commit: str, message: str) -> str:
    """The commit the base branch would point at after merging `commit` into `base_tip`: `base_tip`
    when it already holds it, `commit` when that is a fast-forward, else a new merge commit.
    A conflict is a MergeRefused listing the paths."""
    if git.succeeds(["merge-base", "--is-ancestor", commit, base_tip], root):
        return base_tip
    if git.succeeds(["merge-base", "--is-ancestor", base_tip, commit], root):
        return commit
    if git.version >= (2, 38):
        done = git.run(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", base_tip, commit],
                       root, ok=(0, 1))
        tree, *paths = done.stdout.decode("utf-8", "replace").split("\0")
        if done.returncode:
            raise _conflict(paths)
        return git.text(["commit-tree", tree, "-p", base_tip, "-p", commit, "-m", message], root)
    return _merge_in_scratch_worktree(git, root, scratch, base_tip, commit, message)


def _merge_in_scratch_worktree(git: Git, root: Path, scratch: Path, base_tip: str, commit: str, message: str) -> str:
    """merged_commit for gits without `merge-tree --write-tree`: a merge in a detached worktree
    made for it under `scratch` and removed again."""
    scratch.mkdir(parents=True, exist_ok=True)
    where = Path(tempfile.mkdtemp(prefix="merge-", dir=scratch))
    git.run(["worktree", "add", "--detach", str(where), base_tip], root)
    try:
        done = git.run(["merge", "--no-ff", "--no-edit", "-m", message, commit], where, ok=(0, 1))
        if done.returncode:
            names = git.run(["diff", "--name-only", "--diff-filter=U", "-z"], where).stdout
            raise _conflict(names.decode("utf-8", "replace").split("\0"))
        return git.text(["rev-parse", "HEAD"], where)
    finally:
        git.run(["worktree", "remove", "--force", "--force", str(where)], root)
        shutil.rmtree(where, ignore_errors=True)


def _conflict(paths: list[str]) -> MergeRefused:
    names = list(dict.fromkeys(path for path in paths if path))
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return MergeRefused(f"merging would conflict in {shown or 'the tree'}: nothing was merged; resolve it on "
                        "the task branch (or merge by hand)", names)


def fast_forward(git: Git, root: Path, base_branch: str, old: str, new: str, checkout: Path | None) -> None:
    """Move the base branch from `old` to `new` (a descendant): a ref update where it is not checked
    out, `merge --ff-only` in its clean checkout otherwise (which refuses, changing nothing, when the
    checkout moved on or an untracked file there would be overwritten)."""
    if new == old:
        return
    try:
        if checkout is None:
            git.run(["update-ref", "-m", "board: merge", f"refs/heads/{base_branch}", new, old], root)
        else:
            git.run(["merge", "--ff-only", "--quiet", new], checkout)
    except GitError as exc:
        raise MergeRefused(f"the base branch {base_branch} could not be moved: {exc}") from None
