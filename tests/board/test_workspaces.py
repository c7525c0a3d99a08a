"""board.workspaces on temporary git repositories: make (base, names, copy, setup), find again,
in place, discard and prune, git missing; checked with git itself."""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path

import pytest

from mcp_agent_kit.board.git import Git
from mcp_agent_kit.board.workspaces import (
    GitUnavailable,
    SetupFailed,
    Workspace,
    WorkspaceBusy,
    WorkspaceError,
    WorkspaceMissing,
    Workspaces,
    branch_name,
    safe_id,
    slugify,
)
from tests.board.conftest import run_git, snapshot
from tests.net import until


def is_branch(repo: Path, branch: str | None) -> bool:
    refs = run_git(repo, "for-each-ref", "--format=%(refname)", "refs/heads")
    return f"refs/heads/{branch}" in refs.splitlines()


def worktree_paths(repo: Path) -> list[str]:
    return [line.removeprefix("worktree ") for line in run_git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


# -- making one -------------------------------------------------------------------------------------

def test_create_from_head_makes_a_branch_and_a_worktree_outside_the_repository(repo: Path, data: Path,
                                                                              spaces: Workspaces) -> None:
    before = snapshot(repo)
    ws = spaces.create("42", "Fix the login bug!")
    assert ws.branch == "task/42-fix-the-login-bug"
    assert Path(ws.path) == data.resolve() / "worktrees" / "42"
    assert not Path(ws.path).resolve().is_relative_to(repo.resolve())
    assert (ws.mode, ws.base, ws.base_branch) == ("worktree", "HEAD", "main")
    assert ws.base_commit == run_git(repo, "rev-parse", "HEAD")
    assert ws.path in worktree_paths(repo)
    assert run_git(Path(ws.path), "symbolic-ref", "HEAD") == f"refs/heads/{ws.branch}"
    assert run_git(Path(ws.path), "rev-parse", "HEAD") == ws.base_commit
    assert (Path(ws.path) / "src" / "app.py").read_text() == (repo / "src" / "app.py").read_text()
    after = snapshot(repo)
    assert after["status"] == before["status"] and after["staged"] == before["staged"] == ""
    assert Workspace.from_json(json.loads(json.dumps(ws.to_json()))) == ws


def test_create_from_a_named_base_branch_tag_or_commit(repo: Path, spaces: Workspaces) -> None:
    first = run_git(repo, "rev-parse", "HEAD")
    run_git(repo, "switch", "-q", "-c", "feature")
    (repo / "feature.txt").write_text("feature\n")
    run_git(repo, "add", "feature.txt")
    run_git(repo, "commit", "-q", "-m", "feature")
    feature = run_git(repo, "rev-parse", "HEAD")
    run_git(repo, "switch", "-q", "main")
    run_git(repo, "tag", "v1", first)
    on_branch = spaces.create("b", "from a branch", base="feature")
    assert (on_branch.base_commit, on_branch.base_branch) == (feature, "feature")
    assert (Path(on_branch.path) / "feature.txt").exists()
    on_tag = spaces.create("t", "from a tag", base="v1")
    assert (on_tag.base_commit, on_tag.base_branch, on_tag.base) == (first, None, "v1")
    on_commit = spaces.create("c", "from a commit", base=feature[:10])
    assert (on_commit.base_commit, on_commit.base_branch) == (feature, None)
    default = Workspaces(repo, spaces.data_dir, base="feature").create("d", "configured base")
    assert default.base_branch == "feature"


@pytest.mark.parametrize("base", ["no-such-branch", "main~99", "-x", " ", "HEAD:README.md"])
def test_a_bad_base_is_a_clear_error_and_makes_nothing(repo: Path, spaces: Workspaces, base: str) -> None:
    before = snapshot(repo)
    with pytest.raises(WorkspaceError, match="give a branch, tag or commit") as caught:
        spaces.create("7", "x", base=base)
    assert "\n" not in str(caught.value)
    assert snapshot(repo) == before
    assert spaces.find("7") is None and not (spaces.worktrees_dir / "7").exists()


def test_a_repository_without_commits_asks_for_a_first_commit(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    run_git(empty, "init", "-q")
    with pytest.raises(WorkspaceError, match="make a first commit"):
        Workspaces(empty, tmp_path / "d").create("1", "x")


def test_a_second_create_for_the_same_task_is_refused(spaces: Workspaces) -> None:
    spaces.create("1", "first")
    with pytest.raises(WorkspaceError, match="already has a workspace"):
        spaces.create("1", "again")


@pytest.mark.parametrize("task_id", ["../../etc", "a b/c", "ünïcødé ✓", "x" * 300, "-rf", ".git", "a..b", "x.lock",
                                     "@{u}", "a\nb", "~/home", "/abs"])
def test_hostile_task_ids_and_titles_stay_inside_and_make_valid_branches(repo: Path, spaces: Workspaces,
                                                                         task_id: str) -> None:
    ws = spaces.create(task_id, "../../" + task_id + " ünïcødé " * 20)
    path = Path(ws.path)
    assert path.parent == spaces.worktrees_dir and path.is_dir()
    assert run_git(repo, "check-ref-format", "--branch", str(ws.branch)) == ws.branch
    assert len(path.name) <= 60 and len(str(ws.branch)) <= 110
    assert spaces.find(task_id) == ws


def test_ids_that_look_alike_get_different_places() -> None:
    ids = ["a/b", "a-b", "a b", "A-B", "a_b"]
    assert len({safe_id(one) for one in ids}) == len(ids)
    assert safe_id("task-7") == "task-7"
    with pytest.raises(WorkspaceError):
        safe_id("")


@pytest.mark.parametrize(("title", "slug"), [
    ("Fix the login bug!", "fix-the-login-bug"), ("  ", "task"), ("Ünïcödé café", "unicode-cafe"), ("日本語", "task"),
    ("a" * 100, "a" * 40), ("word " * 30, "-".join(["word"] * 8)), ("../../etc/passwd", "etc-passwd"),
])
def test_slugs(title: str, slug: str) -> None:
    assert slugify(title) == slug
    assert branch_name("1", title) == f"task/1-{slug}"


# -- copy and setup ---------------------------------------------------------------------------------

def test_copy_globs_bring_untracked_files_only(repo: Path, data: Path) -> None:
    (repo / ".env").write_text("SECRET=1\n")
    (repo / "config" / "dev.local.json").write_text("{}\n")
    (repo / "config" / "base.json").write_text('{"edited": "in the checkout, not committed"}\n')
    (repo / "deep" / "er").mkdir(parents=True)
    (repo / "deep" / "er" / "x.local.json").write_text("{}\n")
    (repo / ".env").chmod(0o600)
    spaces = Workspaces(repo, data, copy=[".env", "config/*.json", "**/*.local.json", "nothing-matches-*"])
    ws = spaces.create("1", "copy")
    target = Path(ws.path)
    assert (target / ".env").read_text() == "SECRET=1\n" and (target / ".env").stat().st_mode & 0o777 == 0o600
    assert (target / "config" / "dev.local.json").exists() and (target / "deep" / "er" / "x.local.json").exists()
    assert (target / "config" / "base.json").read_text() == '{"tracked": true}\n'  # the tracked file stays the base's
    assert run_git(target, "status", "--porcelain") == "?? deep/"  # ignored copies are ignored there as here


@pytest.mark.parametrize("glob", ["../outside", "/etc/passwd", "a/../../b", "~/.ssh/id_rsa", "", "a\\..\\b"])
def test_copy_globs_that_leave_the_repository_are_refused_at_start(repo: Path, data: Path, glob: str) -> None:
    with pytest.raises(WorkspaceError, match="relative to the repository root"):
        Workspaces(repo, data, copy=[glob])


def test_a_copy_match_that_is_a_symlink_out_of_the_repository_makes_nothing(repo: Path, data: Path,
                                                                            tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("outside\n")
    (repo / ".env").symlink_to(tmp_path / "secret")
    spaces = Workspaces(repo, data, copy=[".env"])
    before = snapshot(repo)
    with pytest.raises(WorkspaceError, match="leads outside the repository"):
        spaces.create("1", "x")
    assert snapshot(repo) == before and spaces.recorded() == []


def test_a_symlink_inside_the_repository_is_copied_as_its_content(repo: Path, data: Path) -> None:
    (repo / "real.local.json").write_text("{}\n")
    (repo / "config" / "link.local.json").symlink_to(repo / "real.local.json")
    ws = Workspaces(repo, data, copy=["config/*.local.json"]).create("1", "x")
    copied = Path(ws.path) / "config" / "link.local.json"
    assert copied.read_text() == "{}\n" and not copied.is_symlink()


def test_setup_runs_in_the_worktree_with_the_task_in_its_environment(repo: Path, data: Path) -> None:
    (repo / ".env").write_text("A=1\n")
    setup = 'test -f .env && printf "%s|%s|%s" "$MCP_AGENT_KIT_TASK_ID" "$MCP_AGENT_KIT_REPO" "$PWD" > setup.out'
    ws = Workspaces(repo, data, copy=[".env"], setup=setup).create("t 1", "x")
    assert (Path(ws.path) / "setup.out").read_text() == f"t 1|{repo.resolve()}|{Path(ws.path).resolve()}"


def test_a_failing_setup_carries_the_tail_and_status_and_leaves_the_worktree(repo: Path, data: Path) -> None:
    setup = "head -c 5000 /dev/zero | tr '\\0' x; echo; echo 'npm ERR! missing thing' >&2; exit 3"
    spaces = Workspaces(repo, data, setup=setup)
    with pytest.raises(SetupFailed) as caught:
        spaces.create("1", "x")
    failed = caught.value
    assert failed.exit_code == 3 and not failed.timed_out
    assert failed.output.endswith("npm ERR! missing thing\n") and len(failed.output.encode()) <= 2048
    assert str(failed) == "setup failed with exit status 3: npm ERR! missing thing"
    assert Path(failed.workspace.path).is_dir() and failed.workspace.path in worktree_paths(repo)
    assert spaces.find("1") == failed.workspace


def test_a_setup_past_its_timeout_is_killed_with_everything_it_started(repo: Path, data: Path, tmp_path: Path) -> None:
    never, held = tmp_path / "never", tmp_path / "held"
    os.mkfifo(never)
    os.mkfifo(held)
    # a background child keeps `held` open for reading; the shell itself waits on `never`: neither ends alone
    setup = f"(exec 3<'{held}'; read y <&3) & echo preparing; read x < '{never}'"
    spaces = Workspaces(repo, data, setup=setup, setup_timeout=0.5)
    with pytest.raises(SetupFailed, match=r"did not finish within 0.5 s: preparing") as caught:
        spaces.create("1", "x")
    assert caught.value.timed_out and caught.value.exit_code is None
    assert caught.value.output == "preparing\n"

    def no_reader_left() -> bool:  # opening a FIFO to write without blocking fails (ENXIO) once no reader has it
        try:
            os.close(os.open(held, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as exc:
            return exc.errno == errno.ENXIO
        return False

    until(no_reader_left, "the setup's background child to be killed")


def test_hooks_in_the_repository_do_not_run(repo: Path, data: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    hooks = repo / ".githooks"
    hooks.mkdir()
    for name in ("post-checkout", "pre-commit", "post-merge", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> '{marker}'\n")
        (hooks / name).chmod(0o755)
    run_git(repo, "config", "core.hooksPath", ".githooks")
    spaces = Workspaces(repo, data)
    ws = spaces.create("1", "x")
    (Path(ws.path) / "new.txt").write_text("new\n")
    spaces.accept(ws, "new file", merge=True)
    spaces.discard(ws)
    assert not marker.exists()


def test_variables_that_aim_git_elsewhere_are_not_inherited(repo: Path, data: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    other.mkdir()
    run_git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "stray-index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    ws = Workspaces(repo, data).create("1", "x")
    assert (Path(ws.path) / "README.md").exists() and not (tmp_path / "stray-index").exists()


def test_workspaces_made_at_once_from_many_threads(repo: Path, spaces: Workspaces) -> None:
    made: list[Workspace] = []
    errors: list[BaseException] = []

    def make(number: int) -> None:
        try:
            made.append(spaces.create(str(number), f"task {number}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=make, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(made) == 6
    assert sorted(ws.task_id for ws in spaces.recorded()) == [str(n) for n in range(6)]


# -- finding them again -----------------------------------------------------------------------------

def test_a_restart_finds_and_attaches_every_workspace(repo: Path, data: Path, spaces: Workspaces) -> None:
    one, two = spaces.create("1", "one"), spaces.create("two/2", "two")
    stored = [json.dumps(one.to_json()), json.dumps(two.to_json())]
    again = Workspaces(repo, data)  # a new process, as after a restart
    assert again.recorded() == [one, two]
    assert again.find("two/2") == two and again.find("3") is None
    assert [again.attach(json.loads(record)) for record in stored] == [one, two]


def test_a_worktree_without_its_record_is_a_stray_and_never_pruned(repo: Path, data: Path,
                                                                   spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    (spaces.worktrees_dir / "1.json").unlink()
    again = Workspaces(repo, data)
    assert again.recorded() == [] and again.strays() == [ws.path]
    assert again.prune(force=True) == {"removed": [], "kept": []} and Path(ws.path).is_dir()
    assert again.attach(ws.to_json()) == ws and again.strays() == [] and again.find("1") == ws


def test_attach_of_a_worktree_removed_by_hand_says_it_is_missing(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "x")
    run_git(repo, "worktree", "remove", "--force", ws.path)
    with pytest.raises(WorkspaceMissing, match="is gone"):
        spaces.attach(ws)
    with pytest.raises(WorkspaceMissing):
        spaces.diff(ws)


@pytest.mark.parametrize("field", ["path", "branch"])
def test_a_record_aimed_elsewhere_is_refused(repo: Path, spaces: Workspaces, tmp_path: Path, field: str) -> None:
    ws = spaces.create("1", "x")
    record = ws.to_json() | ({"path": str(tmp_path)} if field == "path" else {"branch": "main"})
    with pytest.raises(WorkspaceError, match="does not belong to this board"):
        spaces.discard(Workspace.from_json(record))
    assert is_branch(repo, "main") and tmp_path.is_dir()


@pytest.mark.parametrize("record", [{}, {"taskId": 1}, {"taskId": "1", "mode": "sideways", "path": "/", "branch": None,
                                                         "base": "HEAD", "baseBranch": None, "baseCommit": "0"}])
def test_a_broken_record_is_a_clear_error(record: dict[str, object]) -> None:
    with pytest.raises(WorkspaceError, match="not a workspace record"):
        Workspace.from_json(record)


# -- in place ---------------------------------------------------------------------------------------

def test_in_place_is_the_repository_itself_one_task_at_a_time(repo: Path, data: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "in place", mode="in-place")
    assert (Path(ws.path), ws.branch, ws.base_branch, ws.mode) == (repo.resolve(), None, "main", "in-place")
    assert spaces.create("1", "again", mode="in-place") == ws
    with pytest.raises(WorkspaceBusy, match="task '1' already works in place"):
        spaces.create("2", "other", mode="in-place")
    assert Workspaces(repo, data).find("1") == ws  # the flag outlives a restart
    with pytest.raises(WorkspaceBusy):
        Workspaces(repo, data).attach(Workspace.from_json(ws.to_json() | {"taskId": "2"}))
    spaces.discard(ws)
    assert spaces.in_place() is None
    assert spaces.create("2", "now", mode="in-place").task_id == "2"


def test_in_place_diff_and_accept_work_on_the_checkout(repo: Path, spaces: Workspaces) -> None:
    ws = spaces.create("1", "in place", mode="in-place")
    (repo / "README.md").write_text("hello\nthere\n")
    (repo / "made.txt").write_text("by the agent\n")
    index = (repo / ".git" / "index").read_bytes()
    found = spaces.diff(ws)
    assert [(f["path"], f["status"]) for f in found["files"]] == [("README.md", "modified"), ("made.txt", "added")]
    assert (repo / ".git" / "index").read_bytes() == index
    done = spaces.accept(ws, "in place work", merge=True)
    assert done["committed"] and done["branch"] == "main" and done["merged"] == "main"
    assert run_git(repo, "rev-parse", "main") == done["commit"]
    assert run_git(repo, "status", "--porcelain") == "" and spaces.in_place() is None


def test_in_place_refuses_another_base(repo: Path, spaces: Workspaces) -> None:
    run_git(repo, "branch", "old")
    (repo / "x").write_text("x")
    run_git(repo, "add", "x")
    run_git(repo, "commit", "-q", "-m", "x")
    with pytest.raises(WorkspaceError, match="works on the checkout as it is"):
        spaces.create("1", "x", base="old", mode="in-place")
    assert spaces.in_place() is None


# -- setup of the object ----------------------------------------------------------------------------

def test_git_missing_is_one_line_naming_the_fix(repo: Path, data: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nothing").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(GitUnavailable) as caught:
        Workspaces(repo, data)
    assert str(caught.value) == "git is not installed (no 'git' on PATH): install git 2.30 or newer"


def test_an_old_git_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    old = tmp_path / "old-git"
    old.write_text("#!/bin/sh\necho 'git version 2.25.1'\n")
    old.chmod(0o755)
    with pytest.raises(GitUnavailable) as caught:
        Git(str(old))
    assert str(caught.value) == "git 2.25.1 is too old: install git 2.30 or newer"


def test_a_data_directory_inside_the_repository_is_refused(repo: Path) -> None:
    with pytest.raises(WorkspaceError, match="inside the repository's working tree"):
        Workspaces(repo, repo / ".board")


def test_a_directory_that_is_no_repository_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorkspaceError, match="not inside a git checkout"):
        Workspaces(plain, tmp_path / "d")
    with pytest.raises(WorkspaceError, match="not a directory"):
        Workspaces(tmp_path / "missing", tmp_path / "d")
    with pytest.raises(WorkspaceError, match="mode"):
        Workspaces(tmp_path, tmp_path / "d", mode="sideways")


@pytest.mark.parametrize("separator", ["\0", "\n"])
def test_worktree_listings_parse_with_and_without_z(separator: str) -> None:
    from mcp_agent_kit.board.git import Worktree, parse_worktrees

    text = separator.join(["worktree /r", "HEAD abc", "branch refs/heads/main", "", "worktree /w", "HEAD def",
                           "detached", "locked reason", "prunable gitdir file points to non-existent location", ""])
    assert parse_worktrees(text, separator) == [
        Worktree(path="/r", head="abc", branch="refs/heads/main"),
        Worktree(path="/w", head="def", branch=None, locked=True, prunable=True)]


@pytest.mark.parametrize(("said", "version"), [("git version 2.39.5", (2, 39, 5)), ("git version 2.30", (2, 30, 0)),
                                               ("git version 2.39.3 (Apple Git-145)", (2, 39, 3)),
                                               ("git version 2.41.0.windows.1", (2, 41, 0)), ("hub 2.1", None)])
def test_git_versions(said: str, version: tuple[int, int, int] | None) -> None:
    from mcp_agent_kit.board.git import parse_version

    assert parse_version(said) == version
