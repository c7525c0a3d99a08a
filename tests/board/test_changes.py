"""Reviewing a workspace (board.workspaces over board.changes): diff, accept, merge, discard, prune;
every outcome checked with git itself, and "nothing changed" checked as a person would see it."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from mcp_agent_kit.board.workspaces import MergeRefused, Workspace, WorkspaceError, Workspaces
from tests.board.conftest import run_git, snapshot

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x02"


def agent_edits(ws: Workspace) -> Path:
    """What an agent typically leaves: a modified, a new, a deleted, a binary and an ignored file."""
    root = Path(ws.path)
    (root / "README.md").write_text("hello\nthere\nagain\n")
    (root / "notes").mkdir()
    (root / "notes" / "new.md").write_text("one\ntwo\n")
    (root / "src" / "app.py").unlink()
    (root / "logo.png").write_bytes(PNG)
    (root / "debug.log").write_text("ignored\n")
    return root


@pytest.fixture(params=[(2, 39, 0), (2, 37, 0)], ids=["merge-tree", "scratch-worktree"])
def merging(request: pytest.FixtureRequest, spaces: Workspaces) -> Workspaces:
    """The same Workspaces with the git version it believes in: merge-tree, or the older gits' way."""
    if spaces.git.version < (2, 38) and request.param >= (2, 38):
        pytest.skip("this git has no merge-tree --write-tree")
    spaces.git.version = request.param
    return spaces


def diverge_main(repo: Path, name: str = "main-only.txt", text: str = "from main\n") -> str:
    (repo / name).write_text(text)
    run_git(repo, "add", name)
    run_git(repo, "commit", "-q", "-m", f"main changes {name}")
    return run_git(repo, "rev-parse", "main")


# -- diff -------------------------------------------------------------------------------------------

def test_diff_lists_every_change_new_files_included_ignored_ones_not(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    root = agent_edits(ws)
    own_index = Path(run_git(root, "rev-parse", "--path-format=absolute", "--git-path", "index")).read_bytes()
    repo_index = (repo / ".git" / "index").read_bytes()
    found = spaces.diff(ws)
    files = {change["path"]: change for change in found["files"]}
    assert set(files) == {"README.md", "notes/new.md", "src/app.py", "logo.png"}
    readme = files["README.md"]
    assert (readme["status"], readme["added"], readme["removed"]) == ("modified", 2, 1)
    assert (files["notes/new.md"]["status"], files["notes/new.md"]["added"]) == ("added", 2)
    assert (files["src/app.py"]["status"], files["src/app.py"]["removed"]) == ("deleted", 3)
    assert files["logo.png"] == {"path": "logo.png", "status": "added", "added": 0, "removed": 0, "binary": True}
    assert "+there" in found["patch"] and "Binary files /dev/null and b/logo.png differ" in found["patch"]
    assert "debug.log" not in found["patch"]
    assert "GIT binary patch" in spaces.diff(ws, binary=True)["patch"]
    # neither the workspace's index nor the repository's was touched: new files are still untracked there
    assert Path(run_git(root, "rev-parse", "--path-format=absolute", "--git-path", "index")).read_bytes() == own_index
    assert (repo / ".git" / "index").read_bytes() == repo_index
    assert "?? notes/" in run_git(root, "status", "--porcelain")


def test_diff_includes_commits_the_agent_made_and_renames(spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    root = Path(ws.path)
    run_git(root, "mv", "src/app.py", "src/main.py")
    run_git(root, "commit", "-q", "-m", "agent renamed it")
    found = spaces.diff(ws)
    assert found["files"] == [{"path": "src/main.py", "status": "renamed", "added": 0, "removed": 0, "binary": False,
                               "oldPath": "src/app.py"}]


def test_an_edit_the_index_cannot_tell_by_its_stat_data_is_still_seen(repo: Path, spaces: Workspaces) -> None:
    """Same size, same modification time as the index entry, and the index no older than that: git
    itself must look at the content (racy git); a copied index must keep that, not hide the edit."""
    run_git(repo, "config", "core.trustctime", "false")  # the edit's own ctime would give it away otherwise
    ws = spaces.create("1", "in place", mode="in-place")
    readme, index = repo / "README.md", repo / ".git" / "index"
    old = time.time_ns() - 3600 * 10**9
    os.utime(readme, ns=(old, old))
    run_git(repo, "update-index", "--refresh")  # the entry now says `old`, and is not smudged
    readme.write_text("HELLO\nWORLD\n")
    for path in (readme, index):
        os.utime(path, ns=(old, old))
    assert [change["path"] for change in spaces.diff(ws)["files"]] == ["README.md"]
    assert run_git(repo, "status", "--porcelain") == "M README.md"
    spaces.accept(ws, "upper case")
    assert run_git(repo, "show", "HEAD:README.md") == "HELLO\nWORLD"


def test_diff_of_an_untouched_workspace_is_empty(spaces: Workspaces) -> None:
    assert spaces.diff(spaces.create("1", "x")) == {"files": [], "patch": ""}


# -- accept -----------------------------------------------------------------------------------------

def test_accept_commits_everything_on_the_task_branch_only(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    root = agent_edits(ws)
    before = snapshot(repo)
    done = spaces.accept(ws, "The agent's work", author="Bob Builder <bob@example.com>")
    assert done == {"commit": run_git(repo, "rev-parse", ws.branch), "committed": True, "branch": ws.branch,
                    "merged": None, "mergeCommit": None}
    assert run_git(repo, "log", "-1", "--format=%an <%ae>|%cn|%s|%P", done["commit"]) == \
        f"Bob Builder <bob@example.com>|Ada Tester|The agent's work|{ws.base_commit}"
    assert sorted(run_git(repo, "show", "--name-only", "--format=", done["commit"]).splitlines()) == \
        ["README.md", "logo.png", "notes/new.md", "src/app.py"]
    assert run_git(root, "status", "--porcelain") == ""  # the workspace is clean, its ignored file still there
    assert (root / "debug.log").exists()
    assert snapshot(repo)["status"] == before["status"] and run_git(repo, "rev-parse", "main") == ws.base_commit
    again = spaces.accept(ws, "nothing new")  # nothing to commit is fine: the branch as it is
    assert (again["commit"], again["committed"]) == (done["commit"], False)


def test_accept_with_a_bad_author_or_no_message_changes_nothing(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    agent_edits(ws)
    for message, author in (("msg", "no email"), ("msg", "<only@mail>"), ("  ", None)):
        with pytest.raises(WorkspaceError):
            spaces.accept(ws, message, author=author)
    assert run_git(repo, "rev-parse", ws.branch) == ws.base_commit


def test_accept_refuses_a_workspace_moved_to_another_branch(spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    run_git(Path(ws.path), "switch", "-q", "-c", "elsewhere")
    with pytest.raises(WorkspaceError, match="is not on its branch"):
        spaces.accept(ws, "x")


def test_merge_into_a_clean_checked_out_base_fast_forwards_it(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    agent_edits(ws)
    done = spaces.accept(ws, "work", merge=True)
    assert done["merged"] == "main" and done["mergeCommit"] == done["commit"]
    assert run_git(repo, "rev-parse", "main") == done["commit"]
    assert (repo / "notes" / "new.md").read_text() == "one\ntwo\n" and not (repo / "src" / "app.py").exists()
    assert run_git(repo, "status", "--porcelain") == ""


def test_merge_into_a_diverged_base_makes_a_merge_commit(repo: Path, merging: Workspaces) -> None:
    ws = merging.create("1", "x")
    agent_edits(ws)
    main_before = diverge_main(repo)
    done = merging.accept(ws, "work", merge=True)
    merge = run_git(repo, "rev-parse", "main")
    assert done["mergeCommit"] == merge != done["commit"]
    assert run_git(repo, "log", "-1", "--format=%P|%s", merge) == \
        f"{main_before} {done['commit']}|Merge branch '{ws.branch}' into main"
    assert (repo / "main-only.txt").exists() and (repo / "notes" / "new.md").exists()
    assert run_git(repo, "status", "--porcelain") == ""
    assert run_git(repo, "worktree", "list", "--porcelain").count("worktree ") == 2  # no scratch worktree left


def test_merge_into_a_base_branch_checked_out_nowhere_moves_only_the_ref(repo: Path, spaces: Workspaces) -> None:
    run_git(repo, "branch", "release")
    ws = spaces.create("1", "x", base="release")
    agent_edits(ws)
    before = snapshot(repo)
    done = spaces.accept(ws, "work", merge=True)
    assert done["merged"] == "release" and run_git(repo, "rev-parse", "release") == done["commit"]
    after = snapshot(repo)
    assert (after["status"], after["staged"], after["unstaged"]) == (before["status"], "", "")
    assert run_git(repo, "rev-parse", "main") == ws.base_commit


@pytest.mark.parametrize("dirt", ["unstaged", "staged"])
def test_merge_into_a_dirty_base_is_refused_and_changes_nothing(repo: Path, spaces: Workspaces, dirt: str) -> None:
    ws = spaces.create("1", "x")
    root = agent_edits(ws)
    (repo / "README.md").write_text("the person's own unfinished edit\n")
    if dirt == "staged":
        run_git(repo, "add", "README.md")
    before, workspace_before = snapshot(repo), snapshot(root)
    with pytest.raises(MergeRefused, match=r"checked out in .* with uncommitted changes: commit or stash") as caught:
        spaces.accept(ws, "work", merge=True)
    assert caught.value.conflicts == [] and "\n" not in str(caught.value)
    assert snapshot(repo) == before and snapshot(root) == workspace_before
    assert (repo / "README.md").read_text() == "the person's own unfinished edit\n"


def test_merge_that_would_overwrite_an_untracked_file_is_refused_and_changes_nothing(repo: Path,
                                                                                    spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    root = agent_edits(ws)
    (repo / "notes").mkdir()
    (repo / "notes" / "new.md").write_text("the person's own untracked file\n")
    before, workspace_before = snapshot(repo), snapshot(root)
    with pytest.raises(MergeRefused, match="could not be moved"):
        spaces.accept(ws, "work", merge=True)
    assert snapshot(repo) == before and snapshot(root) == workspace_before
    assert (repo / "notes" / "new.md").read_text() == "the person's own untracked file\n"


def test_merge_with_a_conflict_is_refused_and_changes_nothing(repo: Path, merging: Workspaces) -> None:
    ws = merging.create("1", "x")
    root = agent_edits(ws)
    diverge_main(repo, "README.md", "hello\nfrom main\n")
    before, workspace_before = snapshot(repo), snapshot(root)
    with pytest.raises(MergeRefused, match=r"merging would conflict in README\.md: nothing was merged") as caught:
        merging.accept(ws, "work", merge=True)
    assert caught.value.conflicts == ["README.md"]
    assert snapshot(repo) == before and snapshot(root) == workspace_before
    assert run_git(repo, "rev-parse", ws.branch) == ws.base_commit


def test_merge_needs_a_base_branch(repo: Path, spaces: Workspaces) -> None:
    run_git(repo, "tag", "v1")
    ws = spaces.create("1", "x", base="v1")
    agent_edits(ws)
    with pytest.raises(MergeRefused, match="is not a branch"):
        spaces.accept(ws, "work", merge=True)
    assert run_git(repo, "rev-parse", ws.branch) == ws.base_commit


def test_merge_refuses_a_base_branch_being_rebased(repo: Path, spaces: Workspaces) -> None:
    run_git(repo, "branch", "release")
    ws = spaces.create("1", "x", base="release")
    agent_edits(ws)
    busy = repo / ".git" / "rebase-merge"
    busy.mkdir()
    (busy / "head-name").write_text("refs/heads/release\n")
    with pytest.raises(MergeRefused, match="in the middle of a rebase"):
        spaces.accept(ws, "work", merge=True)
    assert run_git(repo, "rev-parse", "release") == ws.base_commit


# -- discard and prune ------------------------------------------------------------------------------

def test_discard_removes_the_worktree_and_the_branch(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    agent_edits(ws)
    spaces.discard(ws)
    assert not Path(ws.path).exists() and ws.path not in run_git(repo, "worktree", "list")
    assert run_git(repo, "branch", "--list", str(ws.branch)) == "" and spaces.find("1") is None
    assert run_git(repo, "status", "--porcelain") == ""


def test_discard_of_a_worktree_deleted_by_hand_still_deletes_the_branch(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    shutil.rmtree(ws.path)
    spaces.discard(ws)
    assert run_git(repo, "branch", "--list", str(ws.branch)) == ""
    assert ws.path not in run_git(repo, "worktree", "list")


def test_prune_never_removes_unmerged_work_without_force(repo: Path, data: Path, spaces: Workspaces) -> None:
    empty = spaces.create("empty", "nothing done")
    dirty = spaces.create("dirty", "uncommitted")
    agent_edits(dirty)
    kept_branch = spaces.create("committed", "accepted, not merged")
    agent_edits(kept_branch)
    spaces.accept(kept_branch, "work")
    merged = spaces.create("merged", "accepted and merged")
    (Path(merged.path) / "merged.txt").write_text("in main now\n")
    spaces.accept(merged, "merged work", merge=True)
    live = spaces.create("live", "still running")
    gone_dir = spaces.create("gone", "worktree deleted by hand, commits on the branch")
    (Path(gone_dir.path) / "g.txt").write_text("g\n")
    spaces.accept(gone_dir, "g")
    shutil.rmtree(gone_dir.path)

    report = Workspaces(repo, data).prune(keep=["live"])  # after a restart, as a cleanup would
    assert sorted(report["removed"]) == ["empty", "merged"]
    assert {entry["taskId"]: entry["reason"] for entry in report["kept"]} == {
        "dirty": "uncommitted changes in its worktree",
        "committed": f"commits on {kept_branch.branch} not merged anywhere (discard it, or prune with force)",
        "gone": f"commits on {gone_dir.branch} not merged anywhere (discard it, or prune with force)"}
    for ws in (empty, merged):
        assert not Path(ws.path).exists() and run_git(repo, "branch", "--list", str(ws.branch)) == ""
    for ws in (dirty, kept_branch, live):
        assert Path(ws.path).is_dir() and run_git(repo, "branch", "--list", str(ws.branch)) != ""
    assert run_git(repo, "branch", "--list", str(gone_dir.branch)) != ""
    assert (Path(dirty.path) / "notes" / "new.md").exists()

    forced = spaces.prune(force=True, keep=["live"])
    assert sorted(forced["removed"]) == ["committed", "dirty", "gone"]
    assert [ws.task_id for ws in spaces.recorded()] == ["live"]
    assert run_git(repo, "branch", "--list", "task/*") == f"{'+'} {live.branch}"


def test_a_directory_no_longer_a_worktree_is_kept_by_prune_and_removed_by_discard(repo: Path,
                                                                                  spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    (Path(ws.path) / "unsaved.txt").write_text("work\n")
    (Path(ws.path) / ".git").unlink()
    run_git(repo, "worktree", "prune")  # git forgets a worktree whose link is broken
    assert spaces.prune()["kept"][0]["reason"].endswith("is not a registered git worktree: look at it, then discard "
                                                       "it or prune with force")
    assert (Path(ws.path) / "unsaved.txt").exists()
    spaces.discard(ws)
    assert not Path(ws.path).exists() and run_git(repo, "branch", "--list", str(ws.branch)) == ""


def test_prune_keeps_a_locked_worktree(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    run_git(repo, "worktree", "lock", ws.path)
    why = "its worktree is locked (git worktree unlock it first)"
    assert spaces.prune()["kept"] == [{"taskId": "1", "reason": why}]
    assert Path(ws.path).is_dir()
