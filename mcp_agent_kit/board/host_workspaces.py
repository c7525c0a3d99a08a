"""board.host_workspaces: a task's run on an agent host — its agent entry there, and the workspace the host keeps.

`spec_for(task, spec)`: the agent's entry pointed at the agent's ACP endpoint on the task's host (its token; for a
host that manages workspaces, `Acp-Workspace: <task id>`, so the host starts the agent in the task's worktree and
answers its fs and terminal requests there); an agent only hosts serve gets an entry's defaults.

A host without `mounted` keeps each task's workspace (HOSTS_API, the host's `/api/v1/workspaces`): `create` POSTs
`{"id", "repo" (board.repoUrl, default the repository's path), "ref" (the base commit), "branch"
(task/<id>-<slug>)}` (idempotent for the same id and ref: a follow-up gets the same one) and records it under the
data directory (`host-workspaces/<id>.json`, what accept needs: the base branch); `diff` is the host's; `accept`
POSTs the bundle (the host commits everything on the branch), `git fetch`es it into the board's repository as the
task branch, merges into the base branch when asked (board.changes, as a local accept does), then DELETEs the
host's workspace; `discard` DELETEs it with `?force=1` (already gone is fine). A mounted host's tasks use the local
worktree (board.workspaces) and none of this. `edits(event)` and `unchanged(id)` tell whether a run whose host
vanished changed anything (board.runner). Rules: every call bounded; a refusal or an unreachable host is a
WorkspaceError naming the host and what to do.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import urllib.error
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.board import changes
from mcp_agent_kit.board.git import WorkspaceError
from mcp_agent_kit.board.hosts import HostPool, request
from mcp_agent_kit.board.workspaces import Accepted, Workspace, Workspaces, branch_name, safe_id

__all__ = ["HOST_MODE", "RemoteWorkspaces", "edits"]

log = logging.getLogger("mcp_agent_kit.board")
HOST_MODE = "host"  # the `mode` of a Workspace a host keeps
CALL_TIMEOUT_S = 600.0  # a clone, a setup or a bundle may take a while
EDIT_KINDS = frozenset({"edit", "delete", "move"})  # tool call kinds that change files


def edits(event: ev.Event) -> bool:
    """Does the turn event show the agent changing files (an edit tool call, a diff, a file written)?"""
    if isinstance(event, ev.FileWritten):
        return event.error is None
    if not isinstance(event, ev.ToolCall):
        return False
    return event.tool_kind in EDIT_KINDS or any(isinstance(item, dict) and item.get("type") == "diff"
                                                 for item in event.content or ())


class RemoteWorkspaces:
    """The board's side of its hosts' workspaces (see the module's doc)."""

    def __init__(self, pool: HostPool, workspaces: Workspaces, repo_url: str | None) -> None:
        self.pool, self.workspaces = pool, workspaces
        self.repo_url = repo_url or str(workspaces.root)
        self.records = workspaces.data_dir / "host-workspaces"

    # ---- the run ------------------------------------------------------------------------------------------
    def spec_for(self, task: dict[str, Any], spec: Any) -> Any:
        """The agent entry (gateway.agents_config.AgentSpec, None: only hosts serve it) as run on the task's host."""
        agent, where = task["agent"], self.pool.spec(task["host"])
        if spec is None:
            from mcp_agent_kit.board.config import DEFAULT_TURN_TIMEOUT
            from mcp_agent_kit.gateway.agents_config import AgentSpec

            spec = AgentSpec("default", agent, "acp", timeout=DEFAULT_TURN_TIMEOUT)
        bound = {} if where.mounted else {"Acp-Workspace": task["id"]}
        return replace(spec, url=where.acp_url(agent), headers={**spec.headers, **where.headers, **bound},
                       token_env="", command="", sandbox=None)

    def kept(self, task: dict[str, Any]) -> bool:
        """Does a host keep the task's workspace (it runs, or ran, on a host that is not mounted)?"""
        host = task.get("host")
        return bool(host) and host in self.pool.hosts and not self.pool.spec(host).mounted

    def create(self, task: dict[str, Any]) -> Workspace:
        """The task's workspace on its host (made now, or the one it has: same id and base)."""
        task_id, host = task["id"], task["host"]
        record = self.find(task_id)
        if record is not None:
            commit, asked, base_branch = record.base_commit, record.base, record.base_branch
        else:
            commit, asked, base_branch = self.workspaces._resolve_base(task.get("base") or self.workspaces.base
                                                                         or "HEAD")
        branch = record.branch if record is not None else branch_name(task_id, str(task.get("title") or ""))
        made = self._call(host, "/api/v1/workspaces", "POST", {"id": task_id, "repo": self.repo_url, "ref": commit,
                                                                 "branch": branch}, what="make the task's workspace")
        if not isinstance(made, dict) or not isinstance(made.get("path"), str):
            raise WorkspaceError(f"host {host} answered no workspace path for task {task_id}")
        workspace = Workspace(task_id, HOST_MODE, made["path"], branch, asked, base_branch,
                              str(made.get("base") or commit))
        self.records.mkdir(parents=True, exist_ok=True)
        (self.records / f"{safe_id(task_id)}.json").write_text(json.dumps({**workspace.to_json(), "host": host}),
                                                               "utf-8")
        return workspace

    def unchanged(self, task_id: str) -> bool:
        """Has the task's local worktree (a mounted host's run) no changes? A workspace a vanished host kept cannot
        be read: then True, and the caller goes by what the run showed (`edits`)."""
        found = self.workspaces.find(task_id)
        if found is None:
            return True
        try:
            return not self.workspaces.diff(found)["files"]
        except (WorkspaceError, OSError):
            return False

    def find(self, task_id: str) -> Workspace | None:
        try:
            return Workspace.from_json(json.loads((self.records / f"{safe_id(task_id)}.json").read_text("utf-8")))
        except (OSError, ValueError, WorkspaceError):
            return None

    # ---- review -------------------------------------------------------------------------------------------
    def diff(self, task: dict[str, Any]) -> dict[str, Any]:
        answer = self._call(task["host"], f"/api/v1/workspaces/{quote(task['id'], safe='')}/diff",
                            what="read the task's diff")
        if not isinstance(answer, dict) or not isinstance(answer.get("files"), list):
            raise WorkspaceError(f"host {task['host']} answered no diff for task {task['id']}")
        return {"files": answer["files"], "patch": str(answer.get("patch") or "")}

    def accept(self, task: dict[str, Any], message: str, author: str | None, merge: bool) -> Accepted:
        """The host's bundle of the task branch fetched into the board's repository (merged into the base branch
        with `merge`), then the host's workspace removed."""
        task_id, host = task["id"], task["host"]
        record = self.find(task_id)
        if record is None or record.branch is None:
            raise WorkspaceError(f"task {task_id} has no workspace record on this board: discard it")
        plan = None
        if merge:
            if record.base_branch is None:
                raise changes.MergeRefused(f"the base {record.base!r} is not a branch, so there is nothing to merge "
                                           "into: accept without merge")
            plan = changes.merge_plan(self.workspaces.git, self.workspaces.root, record.base_branch)
        path = f"/api/v1/workspaces/{quote(task_id, safe='')}"
        body, headers = self._call(host, f"{path}/bundle", "POST",
                                   {"message": message, **({"author": author} if author else {})},
                                   what="bundle the task's work", raw=True)
        git, root = self.workspaces.git, self.workspaces.root
        with tempfile.NamedTemporaryFile(suffix=".bundle", dir=self.workspaces.data_dir, delete=False) as handle:
            handle.write(body)
        try:
            git.run(["fetch", "--quiet", "--no-tags", handle.name,
                     f"+refs/heads/{record.branch}:refs/heads/{record.branch}"], root)
        finally:
            os.unlink(handle.name)
        commit = str(headers.get("X-Commit") or git.text(["rev-parse", f"refs/heads/{record.branch}"], root))
        merged_into, merge_commit = None, None
        if plan is not None and record.base_branch is not None:
            tip, checkout = plan
            merge_commit = changes.merged_commit(git, root, self.workspaces.data_dir / "scratch", tip, commit,
                                                 f"Merge branch '{record.branch}' into {record.base_branch}")
            changes.fast_forward(git, root, record.base_branch, tip, merge_commit, checkout)
            merged_into = record.base_branch
        self._remove(task, force=False)
        return {"commit": commit, "committed": commit != record.base_commit, "branch": record.branch,
                "merged": merged_into, "mergeCommit": merge_commit}

    def discard(self, task: dict[str, Any]) -> None:
        """Remove the host's workspace, work and all; a host that cannot be reached keeps it (logged): the task
        is discarded on the board all the same."""
        try:
            self._remove(task, force=True)
        except WorkspaceError as exc:
            log.warning("board: task %s discarded, its workspace left on the host: %s", task["id"], exc)

    def _remove(self, task: dict[str, Any], *, force: bool) -> None:
        try:
            self._call(task["host"], f"/api/v1/workspaces/{quote(task['id'], safe='')}" + ("?force=1" if force else ""),
                       "DELETE", what="remove the task's workspace", missing_ok=True)
        finally:
            (self.records / f"{safe_id(task['id'])}.json").unlink(missing_ok=True)

    def _call(self, host: str, path: str, method: str = "GET", body: Any = None, *, what: str, raw: bool = False,
              missing_ok: bool = False) -> Any:
        try:
            return request(self.pool.spec(host), path, method, body, timeout=CALL_TIMEOUT_S, raw=raw)
        except urllib.error.HTTPError as exc:
            if missing_ok and exc.code == 404:
                return None
            said = _said(exc)
            raise WorkspaceError(f"host {host} refused to {what} (HTTP {exc.code}{': ' + said if said else ''})") \
                from None
        except (OSError, ValueError) as exc:
            raise WorkspaceError(f"cannot reach host {host} to {what} ({exc}): try again when it is back") from None


def _said(exc: urllib.error.HTTPError) -> str:
    """The error text a host answered (its JSON `error`, else the body's start)."""
    try:
        body = exc.read()[:2000].decode("utf-8", "replace")
    except OSError:
        return ""
    try:
        found = json.loads(body)
    except ValueError:
        return body.strip()[:200]
    error = found.get("error") if isinstance(found, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    return str(error or body.strip()[:200])
