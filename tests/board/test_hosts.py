"""The board on agent hosts (issue #28 item 3): two `mcp-agent-kit agent-host` processes on loopback serving
examples/acp_echo_agent.py, one board with `hosts` of capacity 1 each — tasks spread by capacity, a `kill -9` of a
host sends its unchanged task back to the queue and on to the other host, labels wait for a host that has them, a
host that comes back is used again, and an accepted remote task's branch is in the board's repository. Also the
`hosts` config's errors and the placement table, without processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import ConfigError, parse_config
from mcp_agent_kit.board.hosts import HostPool, HostSpec, parse_hosts
from tests.board.boards import ECHO_AGENT, WAIT_S, Transcript, echo_config, settled
from tests.board.conftest import run_git
from tests.net import free_port, until

READY = "agent host on "


class Host:
    """One `mcp-agent-kit agent-host` process serving the echo agent on 127.0.0.1:port."""

    def __init__(self, config: Path, port: int, *args: str) -> None:
        self.config, self.port, self.args = config, port, args  # args: more of agent-host's (--workspaces DIR)
        self.proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Host:
        proc = self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_agent_kit", "agent-host", str(self.config), "--http", f"127.0.0.1:{self.port}",
             *self.args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        said = []
        for line in proc.stderr:  # its readiness line (or its end)
            said.append(line)
            if line.startswith(READY):
                break
        else:
            raise AssertionError(f"the agent host did not start: {''.join(said)}")
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its pipe drained
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def host_config(tmp_path: Path) -> Path:
    """An agent host's config serving the echo agent as `echo` (its sessions under tmp_path)."""
    config = tmp_path / "host.json"
    config.write_text(json.dumps({"agents": {"echo": {"acp": {
        "command": sys.executable, "args": [str(ECHO_AGENT)], "env": {"ACP_ECHO_AGENT_DIR": str(tmp_path / "s")}}}}}))
    return config


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[tuple[Host, Host]]:
    config = host_config(tmp_path)
    pair = (Host(config, free_port()), Host(config, free_port()))
    try:
        for host in pair:
            host.start()
        yield pair
    finally:
        for host in pair:
            host.kill()


def _board(tmp_path: Path, repo: Path, first: Host, second: Host) -> Board:
    document = echo_config(tmp_path / "sessions")
    document["hosts"] = {
        "h1": {"url": first.url, "capacity": 1, "labels": ["gpu"], "poll": 0.1, "mounted": True},
        "h2": {"url": second.url, "capacity": 1, "agents": ["echo"], "poll": 0.1, "mounted": True}}
    return Board(parse_config(document), repo, data_dir=tmp_path / "board-data")


def _running_on(board: Board, task_id: str, host: str, after: int = 0) -> None:
    """The task runs on `host`, mid-turn (the echo agent said, after seq `after`, that it waits for a cancel)."""
    Transcript(board, task_id, lambda e: e["seq"] > after and e.get("kind") == "message"
               and "Waiting" in e.get("text", "")).wait()
    task = board.get_task(task_id)
    assert (task["state"], task["host"]) == ("running", host), task


def _waiting(board: Board, task_id: str, text: str) -> dict[str, Any]:
    return until(lambda: (t := board.get_task(task_id))["state"] == "queued" and text in (t["waiting"] or "") and t,
                 f"task {task_id} to wait: {text}", WAIT_S)


def test_tasks_spread_by_capacity_move_off_a_killed_host_and_come_back(tmp_path: Path, repo: Path,
                                                                       hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    with _board(tmp_path, repo, first, second) as board:
        board.start()
        until(lambda: all(h["live"] for h in board.status()["hosts"]), "both hosts live", WAIT_S)
        a, b, c = (board.create_task(f"/wait {n}")["id"] for n in "abc")
        _running_on(board, a, "h1")
        _running_on(board, b, "h2")
        _waiting(board, c, "host: every live host of agent echo that fits is full (h1 1/1, h2 1/1)")

        first.kill()  # mid-turn: its task changed nothing, so it goes back to the queue
        task = _waiting(board, a, "h2 1/1")
        assert task["host"] is None and task["error"] is None
        said = [e["text"] for e in board.task_events(a)["events"] if e["kind"] == "error"]
        assert said == ["host h1 running this task vanished: the task is back in the queue (its workspace had no "
                        "changes)"], said
        until(lambda: not next(h for h in board.status()["hosts"] if h["id"] == "h1")["live"], "h1 down", WAIT_S)
        gpu = board.create_task("/wait gpu", labels=["gpu"])
        assert gpu["labels"] == ["gpu"]
        _waiting(board, gpu["id"], "host: no live host of agent echo has the labels gpu (hosts of agent echo "
                                   "without them: h2)")

        seen = board.task_events(a)["next"]
        board.cancel_task(b)  # room on h2: the requeued task (older than c) runs there
        _running_on(board, a, "h2", seen)
        board.cancel_task(c)
        first.start()  # back on its port: used again, for the task only it can run
        _running_on(board, gpu["id"], "h1")
        for task_id in (a, gpu["id"]):
            board.cancel_task(task_id)

        done = board.create_task("hello from a host")
        review = settled(board, done["id"], "review")
        assert review["host"] in ("h1", "h2") and Path(review["workspace"], "echo.txt").is_file()
        accepted = board.accept_task(done["id"])
        assert accepted["state"] == "done"
        assert run_git(repo, "show", f"{review['branch']}:echo.txt") == "hello from a host"


# ---- without processes -------------------------------------------------------------------------------
@pytest.mark.parametrize(("hosts", "error"), [
    ([], '"hosts" must be an object'),
    ({"h 1": {"url": "http://a:1"}}, "may hold only letters"),
    ({"h1": {"url": "ftp://a:1"}}, '"hosts": h1 url must be'),
    ({"h1": {"url": "http://a:1/acp"}}, '"hosts": h1 url must be'),
    ({"h1": {"url": "http://a:1", "capacity": 0}}, '"hosts": h1 capacity'),
    ({"h1": {"url": "http://a:1", "poll": "5"}}, '"hosts": h1 poll'),
    ({"h1": {"url": "http://a:1", "labels": "gpu"}}, '"hosts": h1 labels'),
    ({"h1": {"url": "http://a:1", "mounted": 1}}, '"hosts": h1 mounted'),
    ({"h1": {"url": "http://a:1", "tokenEnv": "BOARD_HOSTS_TEST_UNSET"}}, "tokenEnv BOARD_HOSTS_TEST_UNSET is not set"),
    ({"h1": {"url": "http://a:1", "token": "x"}}, "unknown keys ['token']"),
])
def test_a_hosts_config_mistake_is_one_line_naming_the_key(hosts: Any, error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"hosts": hosts, "agents": {"echo": {"acp": {"command": "x"}}}})
    assert error in str(caught.value) and "\n" not in str(caught.value)


def test_a_host_entry_reads_its_token_and_an_agent_only_hosts_serve_is_the_boards() -> None:
    spec = parse_hosts({"h1": {"url": "https://gpu.example:8123/", "tokenEnv": "T", "agents": ["claude"]}},
                       {"T": "s3cret"})["h1"]
    assert spec == HostSpec("h1", "https://gpu.example:8123", "s3cret", agents=frozenset({"claude"}))
    assert spec.acp_url("claude") == "wss://gpu.example:8123/agents/claude/acp"
    assert spec.headers == {"Authorization": "Bearer s3cret"}
    config = parse_config({"hosts": {"h1": {"url": "http://a:1", "agents": ["claude"]}}, "board": {"agent": "claude"},
                           "agents": {"echo": {"acp": {"command": "x"}}}})
    assert config.default_agent == "claude" and set(config.agents) == {"echo"}


def _pool(**live: bool) -> HostPool:
    specs = {"h1": HostSpec("h1", "http://a:1", capacity=1, labels=frozenset({"gpu"}), agents=frozenset({"echo"})),
             "h2": HostSpec("h2", "http://a:2", capacity=2, agents=frozenset({"echo"}))}
    pool = HostPool(specs, local={"echo", "here"})
    for host_id, up in live.items():
        pool.hosts[host_id].live = up
    return pool


@pytest.mark.parametrize(("live", "task", "load", "placed"), [
    ({"h1": True, "h2": True}, {"agent": "echo"}, {}, ("h1", None)),
    ({"h1": True, "h2": True}, {"agent": "echo"}, {"h1": 1}, ("h2", None)),
    ({"h1": True, "h2": True}, {"agent": "echo"}, {"h2": 1}, ("h1", None)),  # the least loaded by share
    ({"h1": True, "h2": True}, {"agent": "echo", "labels": ["gpu"]}, {}, ("h1", None)),
    ({"h1": True, "h2": True}, {"agent": "here"}, {}, (None, None)),  # no host serves it: here
    ({}, {"agent": "here", "labels": ["gpu"]}, {}, (None, "host: no live host of agent here has the labels gpu")),
    ({"h1": False, "h2": True}, {"agent": "echo", "labels": ["gpu"]}, {}, (None, "host: no live host of agent echo "
                                                                            "has the labels gpu")),
    ({"h1": True, "h2": True}, {"agent": "echo"}, {"h1": 1, "h2": 2}, (None, "host: every live host of agent echo "
                                                                       "that fits is full (h1 1/1, h2 2/2)")),
    ({}, {"agent": "echo"}, {}, (None, "host: no host of agent echo is live (h1 (not reached yet), h2 (not reached "
                                       "yet)): starts when one comes back")),
    ({}, {"agent": "nobody"}, {}, (None, "host: no host serves agent nobody")),
    ({"h1": True, "h2": True}, {"agent": "echo", "host": "h1", "workspace": "/w"}, {"h2": 0}, ("h1", None)),
    ({"h1": True, "h2": True}, {"agent": "echo", "host": "h1", "workspace": "/w"}, {"h1": 1},
     (None, "host: host h1 keeps this task's workspace and is full, 1/1")),  # a follow-up goes back to its host
])
def test_placement_takes_the_first_rule_that_applies(live: dict[str, bool], task: dict[str, Any],
                                                     load: dict[str, int], placed: tuple[str | None, str | None]
                                                     ) -> None:
    host, why = _pool(**live).place(task, load)
    assert host == placed[0] and (why or "").startswith(placed[1] or ""), why
    assert (why is None) == (placed[1] is None)


def test_a_run_on_a_host_connects_to_the_agent_there_bound_to_its_workspace_unless_mounted(tmp_path: Path,
                                                                                           repo: Path) -> None:
    from mcp_agent_kit.board.host_workspaces import RemoteWorkspaces
    from mcp_agent_kit.board.workspaces import Workspaces

    specs = {"kept": HostSpec("kept", "http://127.0.0.1:1", "t"), "seen": HostSpec("seen", "https://h:2", mounted=True)}
    remote = RemoteWorkspaces(HostPool(specs, local=()), Workspaces(repo, tmp_path / "data"), None)
    assert remote.repo_url == str(repo.resolve())
    config = parse_config(echo_config(tmp_path / "sessions"))
    task = {"id": "t1", "agent": "echo", "host": "kept", "workspace": "/srv/work/t1"}
    spec = remote.spec_for(task, config.agents["echo"])
    assert (spec.url, spec.command, spec.approve) == ("ws://127.0.0.1:1/agents/echo/acp", "", "all")
    assert spec.headers == {"Authorization": "Bearer t", "Acp-Workspace": "t1"} and remote.kept(task)
    mounted = {**task, "host": "seen", "agent": "claude"}
    spec = remote.spec_for(mounted, None)  # an agent only hosts serve: an entry's defaults
    assert (spec.url, spec.headers, spec.approve) == ("wss://h:2/agents/claude/acp", {}, "ask")
    assert not remote.kept(mounted) and remote.unchanged("t1")
