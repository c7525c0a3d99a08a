"""board.workspaces: each board task's own checkout of the repository, made, reviewed, kept or removed.

A task id and title in, a Workspace record out (plain data: `to_json()` / `Workspace.from_json()`),
which the board stores and hands back after a restart (`attach`; a record's mode may also be `host`: a workspace
an agent host keeps, which board.host_workspaces records). Two modes:
- `worktree` (the default): `git worktree add -b task/<id>-<slug> <data>/worktrees/<id> <base commit>`,
  outside the repository's working tree; the base is the repository's HEAD commit unless a ref is
  named. Untracked files matching the `copy` globs (`.env`, `config/*.local.json`; relative to the
  repository root, files only, `**` for any depth) are copied in, never over a checked-out file;
  a glob with `..` or an absolute one is refused, and so is a match that is a symlink leading out
  of the repository. Then `setup`, a shell string run as `sh -c SETUP` in the worktree (as other
  tools and CI files take it) with the caller's environment (less the variables that aim git at
  another repository; GIT_TERMINAL_PROMPT=0) plus MCP_AGENT_KIT_TASK_ID,
  MCP_AGENT_KIT_REPO and MCP_AGENT_KIT_WORKSPACE, stdin closed, its own process group, a timeout;
  a failure (exit status, timeout: the whole group is killed) is a SetupFailed carrying the
  output's last 2 KB, the exit status and the Workspace, which is left in place for inspection.
- `in-place`: the workspace is the repository's own checkout (no worktree, no branch, no copy,
  no setup). One such task at a time: create claims a flag file in the data directory
  (WorkspaceBusy names the holder), accept and discard release it; discard leaves the files, and
  accept commits everything in the checkout (the person's own edits too) on what is checked out.
Review (board.changes): `diff` against the base commit; `accept` commits everything (a clean
workspace is fine: no commit, the branch as it is) and, with merge=True, merges into the base
branch only where that cannot touch uncommitted work. Deleting: `discard` (the person asked)
removes the worktree and its branch; `prune` removes only workspaces whose work is merged into
another ref or empty, unless force=True; nothing else deletes, a restart never does.
Rules: git only through board.git; names are made safe here (a task id or title with `../`,
spaces, unicode or great length gives a plain path and branch); each record is also written
beside its worktree (`<id>.json`) so `find` and `list` work without the board's store.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from mcp_agent_kit.board import changes, prepare
from mcp_agent_kit.board.changes import Diff, MergeRefused
from mcp_agent_kit.board.git import Git, GitError, GitUnavailable, WorkspaceError, Worktree, git_environment
from mcp_agent_kit.safefile import is_inside

__all__ = ["Accepted", "Diff", "GitError", "GitUnavailable", "MergeRefused", "Pruned", "SetupFailed", "Workspace",
           "WorkspaceBusy", "WorkspaceError", "WorkspaceMissing", "Workspaces", "branch_name", "safe_id", "slugify"]

MODES = ("worktree", "in-place")
RECORDED_MODES = (*MODES, "host")  # "host": a workspace an agent host keeps (board.host_workspaces records it)
SLUG_MAX = 40
ID_MAX = 40
DEFAULT_SETUP_TIMEOUT_S = 600.0
IN_PLACE_FLAG = "in-place.json"
_UNSAFE = re.compile(r"[^a-z0-9]+")
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class WorkspaceBusy(WorkspaceError):
    """Another task already works in the repository in place."""


class WorkspaceMissing(WorkspaceError):
    """A recorded workspace is gone (its worktree was removed or never made)."""


class SetupFailed(WorkspaceError):
    """Preparing a new workspace failed after its worktree was made; the worktree stays for inspection."""

    def __init__(self, workspace: Workspace, problem: str, *, output: str = "", exit_code: int | None = None,
                 timed_out: bool = False) -> None:
        super().__init__(problem)
        self.workspace, self.output, self.exit_code, self.timed_out = workspace, output, exit_code, timed_out


@dataclass(frozen=True)
class Workspace:
    """Where a task works: `path`, its `branch` (None in place), the `base` as asked, the base
    branch when the base is one (what merge targets), and the base commit diffs are taken against."""

    task_id: str
    mode: str
    path: str
    branch: str | None
    base: str
    base_branch: str | None
    base_commit: str

    def to_json(self) -> dict[str, Any]:
        return {"taskId": self.task_id, "mode": self.mode, "path": self.path, "branch": self.branch,
                "base": self.base, "baseBranch": self.base_branch, "baseCommit": self.base_commit}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Workspace:
        try:
            found = cls(task_id=data["taskId"], mode=data["mode"], path=data["path"], branch=data["branch"],
                        base=data["base"], base_branch=data["baseBranch"], base_commit=data["baseCommit"])
        except (KeyError, TypeError) as exc:
            raise WorkspaceError(f"not a workspace record (no {exc}): pass what Workspace.to_json() gave") from None
        texts = [found.task_id, found.mode, found.path, found.base, found.base_commit]
        if not all(isinstance(value, str) for value in texts) or found.mode not in RECORDED_MODES or not all(
                value is None or isinstance(value, str) for value in (found.branch, found.base_branch)):
            raise WorkspaceError("not a workspace record (a field has the wrong type): pass what to_json() gave")
        return found


class Accepted(TypedDict):
    commit: str  # the task branch's tip (in place: HEAD's) after the accept
    committed: bool  # False when there was nothing to commit
    branch: str | None
    merged: str | None  # the base branch merged into (in place: the branch committed on, when merge was asked)
    mergeCommit: str | None  # what the base branch points at now, when merged


class Pruned(TypedDict):
    removed: list[str]  # task ids
    kept: list[dict[str, str]]  # {"taskId", "reason"}


def slugify(title: str) -> str:
    """A title as a branch-name word: ASCII lowercase letters and digits joined by single dashes,
    at most SLUG_MAX characters, `task` when nothing is left."""
    if not isinstance(title, str):
        raise WorkspaceError(f"a task title must be a string, not {type(title).__name__}")
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = _UNSAFE.sub("-", ascii_title.lower()).strip("-")
    if len(slug) > SLUG_MAX:
        slug = slug[:SLUG_MAX].rsplit("-", 1)[0] if "-" in slug[:SLUG_MAX] else slug[:SLUG_MAX]
    return slug.strip("-") or "task"


def safe_id(task_id: str) -> str:
    """The task id as a directory and branch word: unchanged when it is already plain (letters,
    digits, `-`, `_`; at most ID_MAX), else its plain part plus a hash of the whole, so two ids never meet."""
    if not isinstance(task_id, str) or not task_id:
        raise WorkspaceError("a task id must be a non-empty string")
    if len(task_id) <= ID_MAX and _SAFE_ID.fullmatch(task_id):
        return task_id
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    plain = re.sub(r"[^A-Za-z0-9]+", "-", task_id).strip("-")[: ID_MAX - 13].strip("-")
    return f"{plain}-{digest}" if plain else digest


def branch_name(task_id: str, title: str) -> str:
    return f"task/{safe_id(task_id)}-{slugify(title)}"


class Workspaces:
    """The workspaces of one repository's board. `data_dir` (outside the repository's working tree)
    holds the worktrees, their records and the in-place flag. Thread-safe: git changes are serialized."""

    def __init__(self, repo: str | os.PathLike[str], data_dir: str | os.PathLike[str], *, base: str | None = None,
                 copy: Sequence[str] = (), setup: str | None = None, setup_timeout: float = DEFAULT_SETUP_TIMEOUT_S,
                 mode: str = "worktree", git: Git | None = None) -> None:
        self.git = git or Git()
        if mode not in MODES:
            raise WorkspaceError(f"workspace mode {mode!r} is not one of {', '.join(MODES)}")
        if not Path(repo).is_dir():
            raise WorkspaceError(f"repository {os.fspath(repo)} is not a directory: give a git checkout")
        top = self.git.run(["rev-parse", "--show-toplevel"], Path(repo), ok=(0, 128))
        if top.returncode or not top.stdout.strip():
            raise WorkspaceError(f"{os.fspath(repo)} is not inside a git checkout: run 'git init' there or give one")
        self.root = Path(top.stdout.decode().strip()).resolve()
        self.data_dir = Path(data_dir).resolve()
        if is_inside(self.data_dir, self.root):
            raise WorkspaceError(f"the board's data directory {self.data_dir} is inside the repository's working tree "
                                 f"{self.root}: choose one outside it")
        self.worktrees_dir = self.data_dir / "worktrees"
        if not (setup is None or isinstance(setup, str)) or not setup_timeout > 0:
            raise WorkspaceError("setup must be a shell command string, with a timeout above 0 seconds")
        self.base, self.copy, self.setup, self.mode = base, prepare.check_copy_globs(copy), setup, mode
        self.setup_timeout = setup_timeout
        self._lock = threading.RLock()

    # -- making one ---------------------------------------------------------------------------------

    def create(self, task_id: str, title: str = "", *, base: str | None = None, mode: str | None = None) -> Workspace:
        """A new workspace for `task_id` (see the module docstring); WorkspaceError when it exists."""
        mode = mode or self.mode
        if mode not in MODES:
            raise WorkspaceError(f"workspace mode {mode!r} is not one of {', '.join(MODES)}")
        if mode == "in-place":
            return self._claim_in_place(task_id, base)
        name = safe_id(task_id)
        commit, asked, base_branch = self._resolve_base(base or self.base or "HEAD")
        path = self.worktrees_dir / name
        workspace = Workspace(task_id, "worktree", str(path), branch_name(task_id, title), asked, base_branch, commit)
        sources = prepare.copy_sources(self.git, self.root, self.copy)
        with self._lock:
            record = self._record_path(task_id)
            if record.exists() or os.path.lexists(path):
                raise WorkspaceError(f"task {task_id!r} already has a workspace at {path}: attach it or discard it")
            self.worktrees_dir.mkdir(parents=True, exist_ok=True)
            _write_json(record, workspace.to_json())
            try:
                self.git.run(["worktree", "add", "-b", str(workspace.branch), str(path), commit], self.root)
            except BaseException:
                record.unlink(missing_ok=True)
                raise
        self._prepare(workspace, sources)
        return workspace

    def _resolve_base(self, base: str) -> tuple[str, str, str | None]:
        """(commit, the base as asked, the local branch it names or None)."""
        if not isinstance(base, str) or not base.strip() or base.startswith("-"):
            raise WorkspaceError(f"base {base!r} is not a ref: give a branch, tag or commit")
        branch: str | None = None
        if base == "HEAD":
            head = self.git.run(["symbolic-ref", "--quiet", "HEAD"], self.root, ok=(0, 1)).stdout.decode().strip()
            branch = head.removeprefix("refs/heads/") if head.startswith("refs/heads/") else None
        elif self.git.succeeds(["show-ref", "--verify", "--quiet", f"refs/heads/{base.removeprefix('refs/heads/')}"],
                               self.root):
            branch = base.removeprefix("refs/heads/")
        ref = f"refs/heads/{branch}" if branch and base != "HEAD" else base
        found = self.git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                             self.root, ok=(0, 1))
        if found.returncode:
            hint = "make a first commit" if base == "HEAD" else "give a branch, tag or commit"
            raise WorkspaceError(f"base {base!r} names no commit in {self.root}: {hint}")
        return found.stdout.decode().strip(), base, branch

    def _prepare(self, workspace: Workspace, sources: list[str]) -> None:
        """Copy the untracked files in, run setup: a failure is a SetupFailed, the worktree stays."""
        try:
            prepare.copy_in(self.root, Path(workspace.path), sources)
        except WorkspaceError as exc:
            raise SetupFailed(workspace, str(exc)) from None
        if not self.setup:
            return
        env = git_environment({"MCP_AGENT_KIT_TASK_ID": workspace.task_id, "MCP_AGENT_KIT_REPO": str(self.root),
                               "MCP_AGENT_KIT_WORKSPACE": workspace.path})
        try:
            code, tail = prepare.run_setup(self.setup, Path(workspace.path), env, self.setup_timeout)
        except WorkspaceError as exc:
            raise SetupFailed(workspace, str(exc)) from None
        if code == 0:
            return
        last = next((line.strip() for line in reversed(tail.splitlines()) if line.strip()), "")
        problem = (f"setup did not finish within {self.setup_timeout:g} s" if code is None
                   else f"setup failed with exit status {code}")
        raise SetupFailed(workspace, problem + (f": {last[:200]}" if last else ""), output=tail, exit_code=code,
                          timed_out=code is None)

    # -- in place -------------------------------------------------------------------------------------

    def _claim_in_place(self, task_id: str, base: str | None) -> Workspace:
        commit, _, base_branch = self._resolve_base("HEAD")
        if base and base != "HEAD" and self._resolve_base(base)[0] != commit:
            raise WorkspaceError(f"an in-place task works on the checkout as it is, not on {base!r}: "
                                 "check that out first or use the worktree mode")
        return self._claim(Workspace(task_id, "in-place", str(self.root), None, "HEAD", base_branch, commit))

    def _claim(self, workspace: Workspace) -> Workspace:
        """Take the in-place flag for `workspace`'s task (the record already there when it holds it)."""
        flag = self.data_dir / IN_PLACE_FLAG
        with self._lock:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            draft = flag.with_name(f".{IN_PLACE_FLAG}.{os.getpid()}.{threading.get_ident()}")
            _write_json(draft, workspace.to_json())
            try:
                os.link(draft, flag)  # atomic: fails when the flag exists
            except FileExistsError:
                holder = self.in_place()
                if holder is not None and holder.task_id == workspace.task_id:
                    return holder
                raise WorkspaceBusy(f"task {holder.task_id if holder else '?'!r} already works in place in "
                                    f"{self.root}: one in-place task at a time (finish it, or use worktrees)") from None
            finally:
                draft.unlink(missing_ok=True)
        return workspace

    def in_place(self) -> Workspace | None:
        """The in-place task's workspace, when one holds the flag."""
        try:
            return Workspace.from_json(json.loads((self.data_dir / IN_PLACE_FLAG).read_text("utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, WorkspaceError) as exc:
            raise WorkspaceError(f"the in-place flag {self.data_dir / IN_PLACE_FLAG} is unreadable ({exc}): "
                                 "delete it if no task works in place") from None

    def release(self, workspace: Workspace) -> None:
        """Drop the in-place flag if this workspace's task holds it (accept and discard do this)."""
        with self._lock:
            holder = self.in_place()
            if workspace.mode == "in-place" and holder is not None and holder.task_id == workspace.task_id:
                (self.data_dir / IN_PLACE_FLAG).unlink(missing_ok=True)

    # -- finding them again ---------------------------------------------------------------------------

    def _record_path(self, task_id: str) -> Path:
        return self.worktrees_dir / f"{safe_id(task_id)}.json"

    def find(self, task_id: str) -> Workspace | None:
        """The workspace recorded for `task_id` (worktree or in place), or None."""
        holder = self.in_place()
        if holder is not None and holder.task_id == task_id:
            return holder
        try:
            found = Workspace.from_json(json.loads(self._record_path(task_id).read_text("utf-8")))
        except (OSError, ValueError, WorkspaceError):
            return None
        return found if found.task_id == task_id else None

    def recorded(self) -> list[Workspace]:
        """Every recorded workspace (worktrees by task id order, then the in-place one)."""
        found = []
        for record in sorted(self.worktrees_dir.glob("*.json")) if self.worktrees_dir.is_dir() else []:
            try:
                found.append(Workspace.from_json(json.loads(record.read_text("utf-8"))))
            except (OSError, ValueError, WorkspaceError):
                continue
        holder = self.in_place()
        return sorted(found, key=lambda ws: ws.task_id) + ([holder] if holder else [])

    def strays(self) -> list[str]:
        """Worktrees git knows under this board's worktrees directory that have no record (never
        pruned: the board shows them, a person decides)."""
        known = {Path(ws.path) for ws in self.recorded()}
        return sorted(tree.path for tree in self.git.worktrees(self.root)
                      if Path(tree.path).parent == self.worktrees_dir and Path(tree.path) not in known)

    def attach(self, record: Workspace | Mapping[str, Any]) -> Workspace:
        """A stored record checked against the repository after a restart: the worktree is still
        registered where the record says (WorkspaceMissing otherwise); an in-place one re-claims its flag."""
        workspace = self._checked(record if isinstance(record, Workspace) else Workspace.from_json(record))
        if workspace.mode == "in-place":
            return self._claim(workspace)
        if self._registered(workspace) is None:
            raise WorkspaceMissing(f"the worktree of task {workspace.task_id!r} at {workspace.path} is gone: "
                                   "discard the task's workspace or create it again")
        if not self._record_path(workspace.task_id).exists():
            _write_json(self._record_path(workspace.task_id), workspace.to_json())
        return workspace

    def _checked(self, workspace: Workspace) -> Workspace:
        """Refuse a record that does not name this board's own place for its task (a record from a
        store is data: it must not aim a remove at anything else)."""
        if workspace.mode == "in-place":
            good = Path(workspace.path) == self.root and workspace.branch is None
        else:
            good = (Path(workspace.path) == self.worktrees_dir / safe_id(workspace.task_id)
                    and (workspace.branch or "").startswith(f"task/{safe_id(workspace.task_id)}-"))
        if not good:
            raise WorkspaceError(f"the workspace record of task {workspace.task_id!r} does not belong to this board "
                                 f"({self.root}, {self.worktrees_dir})")
        return workspace

    def _registered(self, workspace: Workspace) -> Worktree | None:
        path = Path(workspace.path)
        return next((tree for tree in self.git.worktrees(self.root)
                     if Path(tree.path) == path and not tree.prunable and path.is_dir()), None)

    # -- review ---------------------------------------------------------------------------------------

    def diff(self, workspace: Workspace, *, binary: bool = False) -> Diff:
        """Files (path, status, added, removed, binary) and the patch against the base commit."""
        return changes.diff(self.git, self._present(workspace), workspace.base_commit, binary=binary)

    def _present(self, workspace: Workspace) -> Path:
        self._checked(workspace)
        if workspace.mode == "worktree" and self._registered(workspace) is None:
            raise WorkspaceMissing(f"the worktree of task {workspace.task_id!r} at {workspace.path} is gone")
        return Path(workspace.path)

    def accept(self, workspace: Workspace, message: str, *, author: str | None = None,
               merge: bool = False) -> Accepted:
        """Commit the workspace's changes on its branch (nothing to commit is fine: the branch stays
        as it is) and, with `merge`, merge the branch into the base branch (see board.changes).
        In place, the commit lands on whatever is checked out and `merge` has nothing more to do.
        Returns {"commit", "committed", "branch", "merged" (the base branch or None), "mergeCommit"}."""
        if not isinstance(message, str) or not message.strip():
            raise WorkspaceError("an accept needs a commit message")
        if author is not None:
            changes.parse_author(author)
        path = self._present(workspace)
        with self._lock:
            head_ref = self.git.run(["symbolic-ref", "--quiet", "HEAD"], path, ok=(0, 1)).stdout.decode().strip()
            if workspace.mode == "worktree" and head_ref != f"refs/heads/{workspace.branch}":
                raise WorkspaceError(f"the workspace of task {workspace.task_id!r} is not on its branch "
                                     f"{workspace.branch}: check it out again in {path}")
            plan = None
            if merge and workspace.mode == "worktree":
                if workspace.base_branch is None:
                    raise MergeRefused(f"the base {workspace.base!r} is not a branch, so there is nothing to "
                                               f"merge into: accept without merge")
                plan = changes.merge_plan(self.git, self.root, workspace.base_branch)
            head = self.git.text(["rev-parse", "HEAD"], path)
            commit = changes.commit_all(self.git, path, head, message, author)
            merged_into, merge_commit = None, None
            if plan is not None and workspace.base_branch is not None:
                tip, checkout = plan
                merge_commit = changes.merged_commit(self.git, self.root, self.data_dir / "scratch", tip, commit,
                                                     f"Merge branch '{workspace.branch}' into {workspace.base_branch}")
                changes.fast_forward(self.git, self.root, workspace.base_branch, tip, merge_commit, checkout)
                merged_into = workspace.base_branch
            elif workspace.mode == "in-place" and head_ref.startswith("refs/heads/"):
                merged_into = head_ref.removeprefix("refs/heads/") if merge else None
            changes.move_branch(self.git, path, commit, head)
            self.release(workspace)
        branch = workspace.branch or (head_ref.removeprefix("refs/heads/") if head_ref else None)
        return {"commit": commit, "committed": commit != head, "branch": branch,
                "merged": merged_into, "mergeCommit": merge_commit}

    # -- removing ---------------------------------------------------------------------------------------

    def discard(self, workspace: Workspace) -> None:
        """Remove the worktree (its changes too: the person asked) and delete its branch. In place,
        only the in-place flag is dropped: the repository's files are the person's own."""
        self._checked(workspace)
        if workspace.mode == "in-place":
            self.release(workspace)
            return
        with self._lock:
            ref = f"refs/heads/{workspace.branch}"
            elsewhere = [tree.path for tree in self.git.worktrees(self.root)
                         if tree.branch == ref and Path(tree.path) != Path(workspace.path)]
            if elsewhere:
                raise WorkspaceError(f"the branch {workspace.branch} is checked out in {elsewhere[0]}: switch that "
                                     "checkout to another branch first")
            self._remove(workspace)

    def _remove(self, workspace: Workspace) -> None:
        path = Path(workspace.path)
        if any(Path(tree.path) == path for tree in self.git.worktrees(self.root)):
            self.git.run(["worktree", "remove", "--force", "--force", str(path)], self.root)
        if path.is_dir() and not path.is_symlink():  # left by a worktree add that failed, or unregistered by hand
            shutil.rmtree(path)
        if self.git.succeeds(["show-ref", "--verify", "--quiet", f"refs/heads/{workspace.branch}"], self.root):
            self.git.run(["branch", "-D", "--end-of-options", str(workspace.branch)], self.root)
        self._record_path(workspace.task_id).unlink(missing_ok=True)

    def prune(self, *, force: bool = False, keep: Iterable[str] = ()) -> Pruned:
        """Remove the recorded worktree workspaces (not those of the task ids in `keep`: live tasks)
        whose work is merged into another branch, tag or remote branch, or who have none; with
        `force`, all of them. Returns the task ids removed and, for those kept, why."""
        spared = set(keep)
        report: Pruned = {"removed": [], "kept": []}
        with self._lock:
            for workspace in self.recorded():
                if workspace.mode != "worktree" or workspace.task_id in spared:
                    continue
                try:
                    self._checked(workspace)
                    why = None if force else self._unmerged_work(workspace)
                except WorkspaceError as exc:
                    why = str(exc)
                if why:
                    report["kept"].append({"taskId": workspace.task_id, "reason": why})
                    continue
                self._remove(workspace)
                report["removed"].append(workspace.task_id)
        return report

    def _unmerged_work(self, workspace: Workspace) -> str | None:
        """Why removing this workspace would lose work, or None."""
        path, tips = Path(workspace.path), []
        tree = next((tree for tree in self.git.worktrees(self.root) if Path(tree.path) == path), None)
        if tree is not None and tree.locked:
            return "its worktree is locked (git worktree unlock it first)"
        if tree is None and os.path.lexists(path):
            return f"{path} is not a registered git worktree: look at it, then discard it or prune with force"
        if tree is not None and path.is_dir():
            if self.git.run(["status", "--porcelain", "-z", "--untracked-files=all"], path).stdout:
                return "uncommitted changes in its worktree"
            tips.append(self.git.text(["rev-parse", "HEAD"], path))
        ref = f"refs/heads/{workspace.branch}"
        branch_tip = self.git.run(["rev-parse", "--verify", "--quiet", ref], self.root, ok=(0, 1))
        if branch_tip.returncode == 0:
            tips.append(branch_tip.stdout.decode().strip())
        for tip in dict.fromkeys(tips):
            if tip == workspace.base_commit:
                continue
            holders = self.git.text(["for-each-ref", "--contains", tip, "--format=%(refname)", "refs/heads",
                                     "refs/tags", "refs/remotes"], self.root).splitlines()
            if not [name for name in holders if name != ref]:
                return f"commits on {workspace.branch} not merged anywhere (discard it, or prune with force)"
        return None


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write a record whole or not at all (a temporary file renamed over it)."""
    draft = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    draft.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", "utf-8")
    os.replace(draft, path)
