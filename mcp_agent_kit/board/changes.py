"""board.changes: a workspace's changes as the board shows and keeps them: diff, commit, merge.

Rules: runs git through board.git only; knows paths, refs and commits, not tasks. Nothing here
touches the index of a checkout a person uses. The diff, the commit and the branch's move are
gitwork's (shared with the agent host), named here too: a diff stages the workspace into a
temporary index, so it sees new untracked files (not ignored ones) as the commit would; a commit
is made with plumbing and the branch moved with a compare-and-swap. A merge is computed without any
checkout (`git merge-tree --write-tree`, git 2.38 and newer; older gits merge in a temporary
detached worktree that is removed again) and then applied to the base branch only as a
fast-forward: with update-ref where the branch is not checked out, with `merge --ff-only` in the
one clean checkout where it is. A dirty or busy base checkout, or a conflict, is a MergeRefused
raised before any ref, index or file changed (git may have written unreferenced objects).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import mcp_agent_kit.gitwork as gitwork
from mcp_agent_kit.board.git import Git, GitError, WorkspaceError
from mcp_agent_kit.gitwork import Diff, FileChange, commit_all, diff, move_branch, parse_listing, staged

__all__ = ["Diff", "FileChange", "MergeRefused", "commit_all", "diff", "fast_forward", "merge_plan", "merged_commit",
           "move_branch", "parse_author", "parse_listing", "staged"]

# where a worktree's git directory says its branch is being rebased or bisected (so it is not free)
BUSY_FILES = ("rebase-merge/head-name", "rebase-apply/head-name", "BISECT_START")


class MergeRefused(WorkspaceError):
    """The merge into the base branch was not done, and nothing changed; `conflicts` lists the
    conflicting paths (empty when the base checkout was dirty or busy)."""

    def __init__(self, message: str, conflicts: list[str] | None = None) -> None:
        super().__init__(message)
        self.conflicts = conflicts or []


def parse_author(author: str) -> dict[str, str]:
    """`Name <email>` as the GIT_AUTHOR_* variables; anything else is a WorkspaceError."""
    return gitwork.parse_author(author, WorkspaceError)


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
