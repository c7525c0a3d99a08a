"""The agent host's workspaces (hosts.workspaces, hosts.workspace_routes, hosts.confined): a worktree per task from
a local repository or a file:// URL at a ref, idempotent for the same id and ref, 409 for another; the diff after an
edit; the bundle fetched into another clone gives the branch with the commit (checked with git); DELETE refuses
unbundled changes without ?force=1; ids that are no plain names are refused; and a connection bound to a workspace
(`Acp-Workspace`, `?workspace=`) has the host answer the echo agent's fs/write_text_file in the worktree for a
client that advertises no fs at all."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.acp.client.client import AcpAgent, ClientOptions
from mcp_agent_kit.acp.client.permissions import AllowAll
from mcp_agent_kit.hosts.app import AgentHost
from mcp_agent_kit.hosts.workspaces import HostWorkspaces
from tests.hosts.hostkit import DOC, echo_config, http, running_host
from tests.net import until

JSON = {"Content-Type": "application/json"}
SAMPLE_SHA = "9fceb02d0ae598e95dc970b74767f19372d61af8"
SAMPLE_PATH = "/var/lib/agent-host/workspaces/trees/t1"
H_LINE = 'H="Authorization: Bearer $AGENT_HOST_TOKEN"\n'
IDENTITY = ["-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-c", "init.defaultBranch=main"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *IDENTITY, *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two commits on main (README.md, then notes.txt) and the first tagged v1."""
    source = tmp_path / "source"
    source.mkdir()
    git(source, "init", "--quiet")
    (source / "README.md").write_text("hello\n")
    git(source, "add", "README.md")
    git(source, "commit", "--quiet", "-m", "first")
    git(source, "tag", "v1")
    (source / "notes.txt").write_text("one\n")
    git(source, "add", "notes.txt")
    git(source, "commit", "--quiet", "-m", "second")
    return source


@pytest.fixture
def host(tmp_path: Path) -> Iterator[tuple[AgentHost, str]]:
    with running_host(echo_config(tmp_path), workspaces=HostWorkspaces(tmp_path / "spaces")) as served:
        yield served


def call(where: str, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
    status, headers, data = http(f"http://{where}{path}", method, None if body is None else json.dumps(body).encode(),
                                 JSON)
    parsed = json.loads(data) if headers.get("Content-Type") == "application/json" else data
    return status, headers, parsed


def test_create_diff_bundle_and_delete(repo: Path, host: tuple[AgentHost, str], tmp_path: Path) -> None:
    _, where = host
    head = git(repo, "rev-parse", "HEAD")
    ask = {"id": "t1", "repo": str(repo), "ref": head, "branch": "task/t1-fix"}
    status, _, made = call(where, "POST", "/api/v1/workspaces", ask)
    assert status == 201 and made["base"] == head and made["branch"] == "task/t1-fix"
    path = Path(made["path"])
    assert path.is_relative_to(tmp_path / "spaces") and (path / "notes.txt").read_text() == "one\n"
    assert call(where, "POST", "/api/v1/workspaces", ask)[::2] == (200, made)  # idempotent
    status, _, refused = call(where, "POST", "/api/v1/workspaces", {**ask, "ref": "v1"})
    assert status == 409 and "DELETE it first" in refused["error"]
    assert call(where, "GET", "/api/v1/workspaces")[2]["workspaces"] == [{**made, "changed": False}]

    (path / "README.md").write_text("hello\nworld\n")
    (path / "new.txt").write_text("new\n")
    status, _, diff = call(where, "GET", "/api/v1/workspaces/t1/diff")
    assert status == 200 and "+world" in diff["patch"]
    assert {(f["path"], f["status"], f["added"], f["removed"]) for f in diff["files"]} == {
        ("README.md", "modified", 1, 0), ("new.txt", "added", 1, 0)}
    assert call(where, "GET", "/api/v1/workspaces")[2]["workspaces"][0]["changed"] is True
    status, _, refused = call(where, "DELETE", "/api/v1/workspaces/t1")
    assert status == 409 and "?force=1" in refused["error"]

    status, headers, bundle = call(where, "POST", "/api/v1/workspaces/t1/bundle",
                                   {"message": "Fix the README (task t1)", "author": "Bob <bob@example.com>"})
    assert status == 200 and headers["Content-Type"] == "application/x-git-bundle"
    commit = headers["X-Commit"]
    (tmp_path / "t1.bundle").write_bytes(bundle)
    other = tmp_path / "board-repo"
    git(tmp_path, "clone", "--quiet", str(repo), str(other))
    git(other, "fetch", "--quiet", str(tmp_path / "t1.bundle"), "task/t1-fix:task/t1-fix")
    assert git(other, "rev-parse", "task/t1-fix") == commit
    assert git(other, "log", "-1", "--format=%an|%s|%P", "task/t1-fix") == f"Bob|Fix the README (task t1)|{head}"
    assert git(other, "show", "task/t1-fix:new.txt") == "new"
    assert call(where, "GET", "/api/v1/workspaces/t1/diff")[2]["files"]  # still against the base
    assert call(where, "DELETE", "/api/v1/workspaces/t1")[0] == 204  # bundled: nothing to lose
    assert not path.exists() and call(where, "GET", "/api/v1/workspaces/t1")[0] == 404
    assert git(repo, "branch", "--list", "task/*") == ""  # the source repository was never touched


def test_a_file_url_at_a_tag_and_a_forced_delete(repo: Path, host: tuple[AgentHost, str]) -> None:
    _, where = host
    status, _, made = call(where, "POST", "/api/v1/workspaces",
                           {"id": "t2", "repo": repo.as_uri(), "ref": "v1", "branch": "task/t2"})
    assert status == 201 and made["base"] == git(repo, "rev-parse", "v1^{commit}")
    path = Path(made["path"])
    assert (path / "README.md").is_file() and not (path / "notes.txt").exists()
    status, headers, bundle = call(where, "POST", "/api/v1/workspaces/t2/bundle", {"message": "nothing"})
    assert status == 200 and headers["X-Commit"] == made["base"] and bundle.startswith(b"# v2 git bundle")
    (path / "scratch.txt").write_text("draft\n")
    assert call(where, "DELETE", "/api/v1/workspaces/t2")[0] == 409
    assert call(where, "DELETE", "/api/v1/workspaces/t2?force=1")[0] == 204 and not path.exists()
    status, _, refused = call(where, "POST", "/api/v1/workspaces", {"id": "t3", "repo": repo.as_uri(), "ref": "nope"})
    assert status == 422 and "'nope'" in refused["error"]


def test_ids_branches_and_mounted_directories(repo: Path, host: tuple[AgentHost, str], tmp_path: Path) -> None:
    _, where = host
    for bad in ("../evil", "..", "a/b", ".hidden", ""):
        status, _, refused = call(where, "POST", "/api/v1/workspaces", {"id": bad, "repo": str(repo), "ref": "v1"})
        assert status == 400 and "use the task id" in refused["error"], bad
    assert call(where, "GET", "/api/v1/workspaces/..%2F..%2Fetc/diff")[0] == 400
    assert call(where, "GET", "/api/v1/workspaces/nope/diff")[0] == 404
    status, _, refused = call(where, "POST", "/api/v1/workspaces",
                              {"id": "t4", "repo": str(repo), "ref": "v1", "branch": "-x..y"})
    assert status == 400 and "branch" in refused["error"]
    assert not (tmp_path / "spaces" / "trees" / "t4").exists()
    status, _, made = call(where, "POST", "/api/v1/workspaces", {"id": "m1", "mounted": True, "path": str(repo)})
    assert status == 201 and made["path"] == str(repo) and made["base"] is None
    assert call(where, "GET", "/api/v1/workspaces/m1/diff")[0] == 409
    assert call(where, "DELETE", "/api/v1/workspaces/m1")[0] == 204 and (repo / "README.md").is_file()
    assert call(where, "PUT", "/api/v1/workspaces/m1")[0] == 405
    status, _, refused = http(f"http://{where}/acp", "POST", b'{"jsonrpc":"2.0","id":0,"method":"initialize"}',
                              {**JSON, "Acp-Workspace": "nope"})
    assert status == 404


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_a_bound_connection_has_the_host_serve_fs(repo: Path, host: tuple[AgentHost, str], profile: str) -> None:
    _, where = host
    _, _, made = call(where, "POST", "/api/v1/workspaces", {"id": "t5", "repo": str(repo), "ref": "main"})
    url, headers = (f"ws://{where}/acp", {"Acp-Workspace": "t5"}) if profile == "ws" else (
        f"http://{where}/acp?workspace=t5", {})
    no_fs = ClientOptions(read_files=False, write_files=False, terminal=False)
    with AcpAgent.connect(url, headers=headers, options=no_fs, policy=AllowAll()) as agent:
        agent.initialize()
        session = agent.new_session(made["path"])
        result = session.run("hello")
        assert result.text == "Echo: hello\nFile: written." and result.files_written == []  # the host wrote it
    assert (Path(made["path"]) / "echo.txt").read_text() == "hello\n"
    _, _, diff = call(where, "GET", "/api/v1/workspaces/t5/diff")
    assert [(f["path"], f["status"]) for f in diff["files"]] == [("echo.txt", "added")]


def test_the_doc_samples(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The doc's curl block (cut where the agent works) and its Python sample, against a host with a token:
    the agent's echo.txt arrives on the task branch in the board's repository."""
    text = DOC.read_text()
    block = re.search(r"```sh\n(H=\"Authorization.*?)```", text, re.S)
    python = re.search(r"```python\n(import os\n\nfrom mcp_agent_kit.acp.client.client import.*?)```", text, re.S)
    created = re.search(r"The create answers.*?```json\n(.*?)```", text, re.S)
    assert block and python and created, "docs/agent-host.md has the Workspaces samples"
    cut = block.group(1).index("# what the agent changed")
    before, after = block.group(1)[:cut], H_LINE + block.group(1)[cut:]
    board = tmp_path / "board-repo"
    git(tmp_path, "clone", "--quiet", str(repo), str(board))
    monkeypatch.setenv("AGENT_HOST_TOKEN", "s3cret")
    with running_host(echo_config(tmp_path), tokens={"s3cret": "board"},
                      workspaces=HostWorkspaces(tmp_path / "spaces")) as (_, where):
        def real(sample: str) -> str:
            return (sample.replace("agents.example:8123", where).replace("https://git.example/app.git", str(repo))
                    .replace(SAMPLE_SHA, git(repo, "rev-parse", "HEAD")))

        def shell(sample: str) -> str:
            done = subprocess.run(["bash", "-euc", real(sample)], cwd=board, capture_output=True, text=True,
                                  env=dict(os.environ), timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout

        made = json.loads(shell(before))
        assert set(made) == set(json.loads(created.group(1)))
        exec(compile(real(python.group(1)).replace(SAMPLE_PATH, made["path"]), "docs/agent-host.md", "exec"),
             {"__name__": "sample"})
        assert capsys.readouterr().out.strip() == "Echo: hello\nFile: written."
        diff = json.loads(shell(after).split("\n", 1)[0])
        assert [change["path"] for change in diff["files"]] == ["echo.txt"]
    assert git(board, "show", "task/t1-fix-login:echo.txt") == "hello"
    assert git(board, "log", "-1", "--format=%an %s", "task/t1-fix-login") == "Ada Fix the login (task t1)"
    assert not (tmp_path / "spaces" / "trees" / "t1").exists()


def test_the_host_keeps_fs_and_terminals_inside_the_worktree(tmp_path: Path) -> None:
    """hosts.confined on its own: a write outside the worktree is refused, a terminal runs inside it, and
    initialize advertises fs and terminal while keeping the client's other fields."""
    from mcp_agent_kit.hosts.config import parse
    from mcp_agent_kit.hosts.confined import Confined

    tree = tmp_path / "tree"
    tree.mkdir()
    replies: dict[Any, dict[str, Any]] = {}
    confined = Confined(str(tree), parse(echo_config(tmp_path), {}).agents["echo"],
                        lambda reply: replies.__setitem__(reply["id"], reply))
    init = confined.initialize({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False}},
                                           "clientInfo": {"name": "board"}}})
    assert init is not None and init["params"]["clientInfo"] == {"name": "board"}
    assert init["params"]["clientCapabilities"] == {"fs": {"readTextFile": True, "writeTextFile": True},
                                                    "terminal": True}
    assert confined.initialize({"jsonrpc": "2.0", "id": 1, "method": "session/new"}) is None
    assert not confined.intercept({"jsonrpc": "2.0", "id": 2, "method": "session/request_permission"})
    outside = {"path": str(tmp_path / "escaped.txt"), "content": "x", "sessionId": "s"}
    assert confined.intercept({"jsonrpc": "2.0", "id": 3, "method": "fs/write_text_file", "params": outside})
    assert confined.intercept({"jsonrpc": "2.0", "id": 4, "method": "terminal/create",
                               "params": {"command": "pwd", "sessionId": "s"}})
    until(lambda: {3, 4} <= set(replies), "the host's answers")
    assert "outside" in replies[3]["error"]["message"] and not (tmp_path / "escaped.txt").exists()
    terminal = {"terminalId": replies[4]["result"]["terminalId"], "sessionId": "s"}
    confined.intercept({"jsonrpc": "2.0", "id": 5, "method": "terminal/wait_for_exit", "params": terminal})
    until(lambda: 5 in replies, "the command to end")
    confined.intercept({"jsonrpc": "2.0", "id": 6, "method": "terminal/output", "params": terminal})
    until(lambda: 6 in replies, "the output")
    assert replies[6]["result"]["output"].strip() == str(tree.resolve())
    confined.close()
