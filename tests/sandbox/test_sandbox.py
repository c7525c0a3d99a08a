"""`"sandbox": "bwrap"`: an ACP agent under bubblewrap (mcp_agent_kit.sandbox), driven by the kit's ACP client.

A scripted agent (probe_agent.py) tries things with plain Python: writes inside its workspace land, writes
outside do not; the home directories are empty; a loopback port of the host is out of reach without network;
what it starts ends with it, however it detached; its terminals run in the same sandbox. Then the config's
keys, the one-line errors, and the docs' sample. No test skips: a machine where bwrap cannot make its
namespaces fails here, saying so.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit import sandbox
from mcp_agent_kit.acp.client.client import AcpAgent, ClientOptions, Timeouts
from mcp_agent_kit.gateway.agents_config import parse_agents
from mcp_agent_kit.gateway.config import ConfigError
from tests.net import until

PROBE = str(Path(__file__).resolve().parent / "probe_agent.py")
ROOT = Path(__file__).resolve().parents[2]
KIT = (str(ROOT), sys.prefix, sys.base_prefix)  # wherever the checkout lives (a home too), the agent runs from it
DOC = ROOT / "docs" / "sandbox.md"
FAST = Timeouts(initialize=20, request=20, turn=30, cancel_grace=2, stop_grace=1, permission=10)


@pytest.fixture(scope="module")
def bwrap_works(tmp_path_factory: pytest.TempPathFactory) -> None:
    """bwrap makes its namespaces here, or the test fails naming the cause (some containers refuse them)."""
    try:
        argv = sandbox.bwrap_argv(["true"], workspace=str(tmp_path_factory.mktemp("bwrap")), network=False)
    except sandbox.SandboxUnavailable as exc:
        pytest.fail(f"{exc} (.ci/run installs it)")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if done.returncode:
        pytest.fail(f"bwrap cannot create its sandbox here as uid {os.getuid()} ({done.stderr.strip()}): this "
                    "environment refuses user namespaces; allow them (sysctl kernel.unprivileged_userns_clone=1, "
                    "or user.max_user_namespaces > 0; in Docker, --security-opt seccomp=unconfined and apparmor="
                    "unconfined, or run as root) and run the test again")


class Probe:
    """One probe agent in its sandbox: call it with a prompt for the reply's text; `agent` is the AcpAgent."""

    def __init__(self, agent: AcpAgent, workspace: Path) -> None:
        self.agent = agent
        agent.initialize()
        self.session = agent.new_session(str(workspace))

    def __call__(self, text: str) -> str:
        return self.session.run(text).text


@pytest.fixture
def probe(tmp_path: Path, bwrap_works: None) -> Iterator[Any]:
    """probe(*argv tags, env=..., **sandbox keys) -> a Probe in tmp_path/ws under bwrap (closed at the end)."""
    started: list[AcpAgent] = []
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def make(*tags: str, env: dict[str, str] | None = None, **keys: Any) -> Probe:
        config = sandbox.parse({"sandbox": "bwrap", **keys}, "test:")
        agent = AcpAgent.spawn([sys.executable, PROBE, *tags], cwd=str(workspace), env=env, sandbox=config,
                               sandbox_binds=KIT, timeouts=FAST, options=ClientOptions(terminal=True),
                               log=lambda message: None)
        started.append(agent)
        return Probe(agent, workspace)

    yield make
    for agent in started:
        agent.close()


def test_writes_land_inside_the_workspace_only(probe: Any, tmp_path: Path) -> None:
    (tmp_path / "ws" / ".git").mkdir()
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("secret\n")
    shared, out = tmp_path / "shared", tmp_path / "out"
    shared.mkdir()
    out.mkdir()
    (shared / "notes.txt").write_text("shared notes\n")
    ask = probe(env={"HOME": str(home)}, binds=[str(shared)], writable=[str(out)])
    token = uuid.uuid4().hex

    assert ask(f"write {tmp_path / 'ws' / 'inside.txt'}") == "ok"
    assert (tmp_path / "ws" / "inside.txt").read_text() == "written by the probe\n"
    assert ask(f"write /etc/probe-{token}") == "error EROFS"
    assert not os.path.exists(f"/etc/probe-{token}")
    assert ask(f"write {tmp_path / 'ws' / '.git' / 'config'}") == "error EROFS", "the workspace's .git is read-only"
    assert ask(f"write {tmp_path / 'outside.txt'}") == "ok"  # its private /tmp takes it ...
    assert not (tmp_path / "outside.txt").exists()  # ... and the host never sees it
    assert ask(f"write {out / 'result.txt'}") == "ok" and (out / "result.txt").exists(), "writable: writable"
    assert ask(f"read {shared / 'notes.txt'}") == "ok shared notes", "binds: readable"
    assert ask(f"write {shared / 'notes.txt'}") == "error EROFS", "binds: read-only"
    assert ask(f"read {home / '.ssh' / 'id_ed25519'}") == "error ENOENT", "the agent's HOME is absent"
    home_dir = Path.home()
    kit_in_home = {Path(path).relative_to(home_dir).parts[0] for path in KIT if Path(path).is_relative_to(home_dir)}
    assert set(json.loads(ask(f"list {Path.home()}").removeprefix("ok "))) == kit_in_home, "our home is empty inside"
    assert ask("list /home") in ("ok []", "error ENOENT")


@pytest.mark.parametrize("network", [False, True])
def test_network_false_cuts_the_loopback_of_the_host(probe: Any, network: bool) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        reply = probe(network=network)(f"connect {server.getsockname()[1]}")
    # without network the sandbox has a loopback of its own, where nothing listens
    assert reply == "ok" if network else reply in ("error ECONNREFUSED", "error ENETUNREACH"), reply


def test_terminals_of_a_sandboxed_agent_run_in_its_sandbox(probe: Any, tmp_path: Path) -> None:
    ask = probe(network=False)
    token = uuid.uuid4().hex
    code = ("for path in ({!r}, 'inside.txt'):\n    try:\n        open(path, 'w').close(); print(path, 'ok')\n"
            "    except OSError as exc:\n        print(path, exc.strerror)")
    reply = ask("terminal " + code.format(f"/etc/probe-{token}"))
    assert reply == f"ok 0 /etc/probe-{token} Read-only file system\ninside.txt ok", reply
    assert (tmp_path / "ws" / "inside.txt").exists() and not os.path.exists(f"/etc/probe-{token}")


def test_an_agent_spawned_by_a_thread_that_ended_lives_on(probe: Any, tmp_path: Path) -> None:
    """bwrap dies with the thread that forked it (PR_SET_PDEATHSIG): a board run's or a request's thread ends
    long before its agent should, so the agent is forked by one that lasts."""
    made: list[Probe] = []
    starter = threading.Thread(target=lambda: made.append(probe()))
    starter.start()
    starter.join()
    assert made, "the agent did not start"
    assert made[0](f"write {tmp_path / 'ws' / 'later.txt'}") == "ok"
    assert made[0].agent.running


def _pids(token: str, program: str | None = None) -> list[int]:
    """The live processes whose command line carries `token` (and starts with `program`, when given)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
                if token.encode() in argv and (program is None or argv[0] == program.encode()):
                    with open(f"/proc/{entry}/stat", "rb") as stat:
                        if stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X"):
                            found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.parametrize("how", ["close", "kill bwrap", "kill the agent"])
def test_the_process_tree_ends_with_the_agent(probe: Any, how: str) -> None:
    """A child in its own session (setsid, as daemons detach) still ends with the agent: close(), SIGKILL of the
    bwrap we spawned, or SIGKILL of the agent process inside alone."""
    tag, token = f"agent-{uuid.uuid4().hex}", uuid.uuid4().hex
    ask = probe(tag)
    assert ask(f"spawn {token}") == "ok"
    child = until(lambda: _pids(token), "the detached child to run")
    agent = ask.agent
    assert agent.process is not None
    if how == "close":
        agent.close()
    elif how == "kill bwrap":
        os.kill(agent.process.pid, signal.SIGKILL)
    else:
        inner = _pids(tag, sys.executable)
        assert len(inner) == 1 and agent.process.pid not in inner
        for pid in inner:
            os.kill(pid, signal.SIGKILL)
    until(lambda: not _pids(token), f"the detached child {child} to end")
    assert until(lambda: agent.process is not None and agent.process.returncode() is not None, "bwrap to exit")


# ---- the config ------------------------------------------------------------------------------------------
def _agents(acp: dict[str, Any]) -> Any:
    return parse_agents({"agents": {"coder": {"acp": {"command": "agent", **acp}}}})["default/coder"]


def test_an_entry_without_sandbox_runs_as_before() -> None:
    assert _agents({}).sandbox is None


def test_the_keys_become_a_sandbox() -> None:
    spec = _agents({"sandbox": "bwrap", "network": False, "binds": ["~/.npm", "/opt/tools/"],
                    "writable": ["/var/cache/agent"]})
    assert spec.sandbox == sandbox.Sandbox("bwrap", False, (os.path.expanduser("~/.npm"), "/opt/tools"),
                                           ("/var/cache/agent",))


@pytest.mark.parametrize(("keys", "says"), [
    ({"sandbox": "docker"}, "acp sandbox must be one of ['bwrap'], not 'docker'"),
    ({"sandbox": True}, "acp sandbox must be one of ['bwrap'], not True"),
    ({"sandbox": "bwrap", "network": "no"}, "acp network must be true or false, not 'no'"),
    ({"sandbox": "bwrap", "binds": "/opt"}, "acp binds must be a list of absolute paths"),
    ({"sandbox": "bwrap", "writable": ["relative/dir"]}, "acp writable: 'relative/dir' is not an absolute path"),
    ({"sandbox": "bwrap", "writable": ["/"]}, "acp writable: '/' would undo the sandbox"),
    ({"network": False}, 'acp network applies to a sandbox: add "sandbox": "bwrap" or remove it'),
    ({"sandbox": "bwrap", "bind": []}, "unknown acp keys ['bind']"),
])
def test_a_wrong_key_is_one_line_naming_it(keys: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _agents(keys)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("agent 'coder': ") and says in message, message


def test_no_bwrap_is_one_line_naming_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sandbox, "FALLBACK", str(tmp_path / "bwrap"))
    with pytest.raises(ConfigError, match=r"needs bubblewrap, which is not installed: apt-get install bubblewrap"):
        _agents({"sandbox": "bwrap"})
    monkeypatch.setattr(sandbox, "PLATFORM", "darwin")
    with pytest.raises(ConfigError, match=r'needs Linux \(this is darwin\): remove "sandbox"'):
        _agents({"sandbox": "bwrap"})


def test_the_board_and_the_docs_sample_read_it() -> None:
    from mcp_agent_kit.board.config import parse_config

    samples = [json.loads(body) for body in re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S)]
    assert samples, "docs/sandbox.md has a config sample"
    config = parse_config(samples[0])
    boxed = {name: spec.sandbox for name, spec in config.agents.items() if spec.sandbox is not None}
    assert boxed == {"coder": sandbox.Sandbox("bwrap", False, (os.path.expanduser("~/.npm-global"),),
                                              (os.path.expanduser("~/.claude"),))}, boxed
    assert "[sandbox](sandbox.md)" in (ROOT / "docs" / "board.md").read_text()


def test_a_board_task_runs_its_agent_in_the_sandbox(tmp_path: Path, bwrap_works: None) -> None:
    """The board's wiring: the task's worktree is the writable workspace, the rest read-only; git works there,
    read-only, through the repository's .git the runner shows; the agent starts from the run's short-lived thread."""
    from mcp_agent_kit.board.board import Board
    from mcp_agent_kit.board.config import parse_config

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    config = {"agents": {"probe": {"acp": {"command": sys.executable, "args": [PROBE], "approve": "all",
                                           "sandbox": "bwrap", "network": False}}}}
    token = uuid.uuid4().hex
    board = Board(parse_config(config), repo, data_dir=tmp_path / "board-data")
    try:
        board.start()
        task = board.create_task(f"write /etc/probe-{token}")
        done = board.wait_task(task["id"], ("review", "failed"), 30)
        assert (done["state"], done.get("result")) == ("review", "error EROFS"), done
        board.prompt_task(task["id"], "write inside.txt")
        assert board.wait_task(task["id"], ("review", "failed"), 30).get("result") == "ok"
        assert (Path(done["workspace"]) / "inside.txt").exists()
        git = "import subprocess; print(subprocess.run(['git', 'rev-parse', '--is-inside-work-tree'], text=True, " \
              "capture_output=True).stdout)"
        board.prompt_task(task["id"], f"terminal {git}")
        assert board.wait_task(task["id"], ("review", "failed"), 30).get("result") == "ok 0 true"
    finally:
        board.close()
    assert not os.path.exists(f"/etc/probe-{token}")


def test_a_gateway_acp_entry_runs_its_agent_in_the_sandbox(tmp_path: Path, bwrap_works: None) -> None:
    """The gateway's wiring: the entry's cwd is the workspace; the agent starts on a request's thread, which ends."""
    from mcp_agent_kit.gateway.acp_backend import AcpBackend

    workspace = tmp_path / "ws"
    workspace.mkdir()
    spec = parse_agents({"agents": {"probe": {"acp": {"command": sys.executable, "args": [PROBE], "cwd": str(workspace),
                                                      "sandbox": "bwrap", "binds": list(KIT)}}}})["default/probe"]
    backend = AcpBackend(spec)
    try:
        opened: list[str] = []
        request = threading.Thread(target=lambda: opened.append(backend.new_session()))
        request.start()
        request.join()
        assert opened and backend.agent is not None and backend.agent.process is not None
        assert backend.agent.process.argv[0].endswith("bwrap")
        session = backend.sessions[opened[0]]
        assert session.run(f"write {workspace / 'inside.txt'}").text == "ok"
        assert session.run(f"write {tmp_path / 'outside.txt'}").text == "ok" and not (tmp_path / "outside.txt").exists()
        assert backend.agent.running
    finally:
        backend.close()
