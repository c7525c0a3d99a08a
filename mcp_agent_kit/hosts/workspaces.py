"""hosts.workspaces: the checkouts an agent host keeps for a board — a worktree per task, its diff, its bundle.

Under the host's workspaces directory (`--workspaces DIR`): `mirrors/<hash of the repo>.git` one bare mirror per
repository URL or path, fetched on demand (heads into `refs/remotes/origin/*`, tags, or the one commit asked for);
`trees/<id>` the worktree of workspace `<id>` (`git worktree add -B <branch> <path> <commit>`); `records/<id>.json`
what the host knows of it (so a restarted host still has it). `create` is idempotent for the same id and ref, a
WorkspaceConflict for another; a `mounted` workspace is an existing directory used as is (no git: diff and
bundle are a WorkspaceConflict). `diff` is Board.task_diff's shape; `bundle` commits everything on the branch
(plumbing, no hooks) and returns `git bundle` bytes of base..branch; `delete` refuses a workspace whose
changes were never bundled unless forced. Rules: ids and branches are checked before any path or git argument
is made of them, every path stays under the directory; git runs through gitwork (a timeout, no hooks, no
prompts) and, on a worktree, with the mirror's git directory named explicitly (`--git-dir`, `--work-tree`,
`core.fsmonitor=false`): nothing the agent writes in its worktree (a `.git` file, hooks, config) is read by
the host's git. No HTTP here (hosts.workspace_routes).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import mcp_agent_kit.gitwork as gitwork
from mcp_agent_kit.gitwork import GitRunner, GitWorkError

__all__ = ["HostWorkspaces", "WorkspaceConflict", "WorkspaceRecord", "WorkspaceRefused", "WorkspaceUnknown",
           "default_dir"]

ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
SHA = re.compile(r"[0-9a-f]{7,64}\Z")
FETCH_TIMEOUT_S = 600.0
HOST_IDENTITY = {"GIT_COMMITTER_NAME": "mcp-agent-kit agent-host", "GIT_COMMITTER_EMAIL": "agent-host@localhost"}
DEFAULT_AUTHOR = "mcp-agent-kit agent-host <agent-host@localhost>"
REFSPECS = ("+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")


class WorkspaceRefused(Exception):
    """A request the workspaces refuse; `status` is the HTTP status that says so."""

    status = 400


class WorkspaceUnknown(WorkspaceRefused):
    status = 404


class WorkspaceConflict(WorkspaceRefused):
    status = 409


class RefUnfetchable(WorkspaceRefused):
    status = 422


def default_dir(name: str = "default") -> Path:
    """$XDG_DATA_HOME (default ~/.local/share)/mcp-agent-kit/hosts/<name>/workspaces."""
    home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(home, "mcp-agent-kit", "hosts", re.sub(r"[^A-Za-z0-9._-]", "_", name), "workspaces")


@dataclass
class WorkspaceRecord:
    """One workspace as the host keeps it (records/<id>.json)."""

    id: str
    path: str
    base: str | None = None  # the commit it started at (None: mounted)
    branch: str | None = None
    ref: str | None = None  # as the board asked
    repo: str | None = None
    mounted: bool = False
    gitdir: str | None = None  # the worktree's git directory inside the mirror
    mirror: str | None = None
    bundled: str | None = None  # the commit the last bundle carried

    def reply(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "base": self.base, "branch": self.branch,
                **({"mounted": True} if self.mounted else {})}


def _check_id(value: Any) -> str:
    if not isinstance(value, str) or not ID.match(value):
        raise WorkspaceRefused(f"workspace id {str(value)[:80]!r} is not 1-128 letters, digits, '.', '_' or '-' "
                      "(starting with a letter or digit): use the task id")
    return value


class HostWorkspaces:
    """The workspaces under one directory (see the module's doc); thread-safe."""

    def __init__(self, root: str | Path, git: GitRunner | None = None) -> None:
        self.root = Path(root).absolute()
        self._git = git
        self._lock = threading.Lock()  # the records and the lock tables
        self._records: dict[str, WorkspaceRecord] | None = None
        self._locks: dict[str, threading.Lock] = {}  # per workspace id and per mirror

    # ---- the records ---------------------------------------------------------------------------------
    @property
    def git(self) -> GitRunner:
        if self._git is None:
            self._git = GitRunner()  # GitMissing: one line naming the fix
        return self._git

    def _loaded(self) -> dict[str, WorkspaceRecord]:
        """The records, read from records/ on first use (the caller holds self._lock)."""
        if self._records is None:
            self._records = {}
            folder = self.root / "records"
            for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
                with contextlib.suppress(OSError, ValueError, TypeError):
                    record = WorkspaceRecord(**json.loads(file.read_text("utf-8")))
                    if ID.match(record.id) and file.stem == record.id:
                        self._records[record.id] = record
        return self._records

    def _save(self, record: WorkspaceRecord) -> None:
        folder = self.root / "records"
        folder.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(prefix=f".{record.id}-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(asdict(record), out)
        os.replace(scratch, folder / f"{record.id}.json")
        with self._lock:
            self._loaded()[record.id] = record

    def _forget(self, record: WorkspaceRecord) -> None:
        with self._lock:
            self._loaded().pop(record.id, None)
        with contextlib.suppress(FileNotFoundError):
            (self.root / "records" / f"{record.id}.json").unlink()

    def _lock_for(self, key: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(key, threading.Lock())

    def get(self, workspace_id: str) -> WorkspaceRecord:
        _check_id(workspace_id)
        with self._lock:
            record = self._loaded().get(workspace_id)
        if record is None:
            raise WorkspaceUnknown(f"no workspace {workspace_id!r} on this host: POST /api/v1/workspaces first")
        return record

    def count(self) -> int:
        with self._lock:
            return len(self._loaded())

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            records = list(self._loaded().values())
        out = []
        for record in records:
            try:
                changed = self._changed(record, against_bundle=False)
            except (GitWorkError, OSError):
                changed = True  # unknown: the board should look before discarding
            out.append({**record.reply(), "changed": changed})
        return out

    # ---- create ---------------------------------------------------------------------------------------
    def create(self, body: Any) -> tuple[int, dict[str, Any]]:
        """(201 or 200, {"id", "path", "base", "branch"}); WorkspaceRefused (400/409/422) when refused."""
        if not isinstance(body, dict):
            raise WorkspaceRefused('send a JSON object: {"id", "repo", "ref", "branch"} '
                                   '(or {"id", "mounted": true, "path"})')
        workspace_id = _check_id(body.get("id"))
        self.root.mkdir(parents=True, exist_ok=True)
        with self._lock_for(workspace_id):
            with self._lock:
                known = self._loaded().get(workspace_id)
            if body.get("mounted") is True:
                return self._mount(workspace_id, body.get("path"), known)
            repo, ref = body.get("repo"), body.get("ref")
            if not isinstance(repo, str) or not repo or repo.startswith("-"):
                raise WorkspaceRefused('"repo" must be a git URL or a path this host can read (not starting with "-")')
            if not isinstance(ref, str) or not ref or ref.startswith("-") or any(c.isspace() for c in ref):
                raise WorkspaceRefused('"ref" must be a commit sha (or a branch or tag name) of the repository')
            branch = body.get("branch") or f"task/{workspace_id}"
            if known is not None:
                if known.mounted or ref not in (known.ref, known.base):
                    raise WorkspaceConflict(f"workspace {workspace_id!r} exists at {known.ref or known.path}: "
                                            "DELETE it first or use another id")
                return 200, known.reply()
            self._check_branch(branch)
            return 201, self._checkout(workspace_id, repo, ref, branch).reply()

    def _mount(self, workspace_id: str, path: Any, known: WorkspaceRecord | None) -> tuple[int, dict[str, Any]]:
        if not isinstance(path, str) or not os.path.isabs(path) or not os.path.isdir(path):
            raise WorkspaceRefused('a mounted workspace needs "path": an absolute directory that exists on this host')
        if known is not None:
            if not known.mounted or known.path != path:
                raise WorkspaceConflict(f"workspace {workspace_id!r} exists at {known.path}: DELETE it first")
            return 200, known.reply()
        record = WorkspaceRecord(id=workspace_id, path=path, mounted=True)
        self._save(record)
        return 201, record.reply()

    def _check_branch(self, branch: Any) -> None:
        if not isinstance(branch, str) or branch.startswith("-") or not self.git.succeeds(
                ["check-ref-format", "--branch", branch], self.root):
            raise WorkspaceRefused(f'"branch" {str(branch)[:80]!r} is not a valid git branch name '
                                   "(e.g. task/<id>-<slug>)")
        with self._lock:
            holders = [r.id for r in self._loaded().values() if r.branch == branch]
        if holders:
            raise WorkspaceConflict(f"branch {branch} belongs to workspace {holders[0]!r}: give another branch")

    def _checkout(self, workspace_id: str, repo: str, ref: str, branch: str) -> WorkspaceRecord:
        source = os.path.abspath(repo) if os.path.isdir(repo) else repo
        mirror = self.root / "mirrors" / (hashlib.sha256(source.encode()).hexdigest()[:24] + ".git")
        path = self.root / "trees" / workspace_id
        with self._lock_for(str(mirror)):
            if not (mirror / "HEAD").is_file():
                mirror.parent.mkdir(parents=True, exist_ok=True)
                self.git.run(["init", "--bare", "--quiet", str(mirror)], mirror.parent)
            base = self._resolve(mirror, source, ref)
            if path.exists() or path.is_symlink():  # left by a host that died half way: ours to clear
                shutil.rmtree(path, ignore_errors=True)
                self.git.run(["worktree", "prune"], mirror)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.git.run(["worktree", "add", "--quiet", "-B", branch, str(path), base], mirror)
        pointer = (path / ".git").read_text("utf-8").strip()  # written by git this instant: trusted once
        gitdir = pointer.removeprefix("gitdir:").strip()
        record = WorkspaceRecord(id=workspace_id, path=str(path), base=base, branch=branch, ref=ref, repo=source,
                        gitdir=str(Path(mirror, gitdir).resolve()), mirror=str(mirror))
        self._save(record)
        return record

    def _resolve(self, mirror: Path, source: str, ref: str) -> str:
        """The commit `ref` names, fetching the repository into the mirror when the mirror lacks it."""
        def lookup() -> str | None:
            for name in ([ref] if SHA.match(ref) else []) + [f"refs/remotes/origin/{ref}", f"refs/tags/{ref}", ref]:
                found = self.git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"],
                                     mirror, ok=(0, 1))
                if found.returncode == 0:
                    return found.stdout.decode().strip()
            return None

        fetch = ["-c", "protocol.ext.allow=never", "fetch", "--quiet", "--no-write-fetch-head", "--end-of-options",
                 source]
        if (found := lookup()) is None:
            try:
                self.git.run([*fetch, *REFSPECS], mirror, timeout=FETCH_TIMEOUT_S)
            except GitWorkError as exc:
                raise RefUnfetchable(f"cannot fetch {source}: {exc}") from None
            found = lookup()
        if found is None and SHA.match(ref):  # a commit no branch or tag holds: ask for it alone
            with contextlib.suppress(GitWorkError):
                self.git.run([*fetch, ref], mirror, timeout=FETCH_TIMEOUT_S)
            found = lookup()
        if found is None:
            raise RefUnfetchable(f"{source} has no commit, branch or tag {ref!r}: push it first, or give another ref")
        return found

    # ---- diff, bundle, delete ------------------------------------------------------------------------
    def _managed(self, workspace_id: str, what: str) -> tuple[WorkspaceRecord, GitRunner, Path]:
        record = self.get(workspace_id)
        if record.mounted or record.gitdir is None or record.base is None:
            raise WorkspaceConflict(f"workspace {workspace_id!r} is a mounted directory: the host keeps no git "
                                    f"for it, so it has no {what}")
        bound = self.git.bound(f"--git-dir={record.gitdir}", f"--work-tree={record.path}",
                               "-c", "core.fsmonitor=false")
        return record, bound, Path(record.path)

    def diff(self, workspace_id: str) -> dict[str, Any]:
        """{"files": [{"path", "status", "added", "removed", "binary"}], "patch"} against the base commit."""
        record, git, path = self._managed(workspace_id, "diff")
        assert record.base is not None
        with self._lock_for(workspace_id):
            found = gitwork.diff(git, path, record.base)
        return {"files": [dict(change) for change in found["files"]], "patch": found["patch"]}

    def bundle(self, workspace_id: str, message: Any, author: Any = None) -> tuple[bytes, str]:
        """Commit everything on the workspace's branch; (a git bundle of base..branch, the branch's commit)."""
        if not isinstance(message, str) or not message.strip():
            raise WorkspaceRefused('send {"message": "<commit message>"} (and optionally "author": "Name <email>")')
        if author is not None and not isinstance(author, str):
            raise WorkspaceRefused('"author" must be "Name <email>"')
        record, git, path = self._managed(workspace_id, "bundle")
        assert record.base is not None and record.branch is not None
        ref = f"refs/heads/{record.branch}"
        with self._lock_for(workspace_id):
            on = git.run(["symbolic-ref", "--quiet", "HEAD"], path, ok=(0, 1)).stdout.decode().strip()
            if on != ref:
                raise WorkspaceConflict(f"the worktree is on {on or 'a detached HEAD'}, not {ref}: "
                                        "check the branch out again")
            head = git.text(["rev-parse", "--verify", "HEAD"], path)
            try:
                commit = gitwork.commit_all(git, path, head, message, author or DEFAULT_AUTHOR, HOST_IDENTITY)
            except GitWorkError as exc:
                if type(exc) is GitWorkError:  # the author's form
                    raise WorkspaceRefused(str(exc)) from None
                raise
            gitwork.move_branch(git, path, commit, head, "agent-host: bundle")
            # base..branch; with nothing on it, the base commit alone (a bundle is never empty)
            exclude = [f"^{record.base}"] if commit != record.base else ["--not", f"{record.base}^@"]
            with tempfile.TemporaryDirectory(prefix="bundle-", dir=self.root) as scratch:
                out = Path(scratch, "task.bundle")
                git.run(["bundle", "create", "--quiet", str(out), ref, *exclude], path)
                data = out.read_bytes()
            record.bundled = commit
            self._save(record)
        return data, commit

    def delete(self, workspace_id: str, force: bool = False) -> None:
        """Remove the workspace (its worktree and branch; a mounted one is only forgotten); WorkspaceConflict
        when it has changes no bundle carried, unless `force`."""
        record = self.get(workspace_id)
        with self._lock_for(workspace_id):
            if not force and not record.mounted and self._changed(record, against_bundle=True):
                raise WorkspaceConflict(f"workspace {workspace_id!r} has changes no bundle carried: POST its bundle "
                                        "first, or DELETE with ?force=1 to throw them away")
            if not record.mounted and record.mirror is not None:
                mirror = Path(record.mirror)
                with self._lock_for(record.mirror):
                    with contextlib.suppress(GitWorkError):
                        self.git.run(["worktree", "remove", "--force", "--force", record.path], mirror)
                    shutil.rmtree(record.path, ignore_errors=True)
                    self.git.run(["worktree", "prune"], mirror)
                    if record.branch:
                        self.git.run(["branch", "--quiet", "-D", "--", record.branch], mirror, ok=(0, 1))
            self._forget(record)

    def _changed(self, record: WorkspaceRecord, against_bundle: bool) -> bool:
        """Uncommitted changes, or a branch that moved off its base (and, `against_bundle`, off the last bundle)."""
        if record.mounted:
            return False
        _, git, path = self._managed(record.id, "changes")
        if not path.is_dir():
            return False
        if git.run(["status", "--porcelain", "-z", "--untracked-files=all"], path).stdout:
            return True
        head = git.text(["rev-parse", "--verify", "HEAD"], path)
        return head != record.base and not (against_bundle and head == record.bundled)
