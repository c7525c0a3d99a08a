"""The hosts mode of bench/board_bench.py (`--hosts`): the board's tasks on agent hosts, and the host hop's cost.

Run through `python bench/board_bench.py --hosts` (its docstring says what is measured). Agent hosts are
`mcp-agent-kit agent-host` processes on 127.0.0.1, each on a port it picks (its readiness line names it), serving
examples/acp_echo_agent.py; the board's hosts are `mounted` (this machine's worktrees). Printed: a table of the
tasks per minute with the agents here, on 1 host and on 2 hosts, then the hop's added time per agent update and per
one-update turn, with the goal. A failed task stops the bench (exit 1).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import board_bench as bb

from mcp_agent_kit.acp.client.client import AcpAgent
from mcp_agent_kit.acp.client.permissions import AllowAll
from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config

READY = re.compile(r"agent host on http://127\.0\.0\.1:(\d+)")


@contextmanager
def agent_host(config: Path) -> Iterator[str]:
    """An agent-host process on a port of its choosing until the block ends; yields its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", "agent-host", str(config), "--http",
                             "127.0.0.1:0"], cwd=bb.ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        said = []
        for line in proc.stderr:
            said.append(line)
            found = READY.match(line)
            if found:
                break
        else:
            raise bb.BenchFailed(f"the agent host did not start: {''.join(said)[-500:]}")
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its pipe drained
        yield f"http://127.0.0.1:{found.group(1)}"
    finally:
        proc.terminate()
        proc.wait(10)


def run_on_hosts(root: Path, repo: Path, urls: list[str], tasks: int, concurrency: int, name: str) -> float:
    """Wall seconds of `tasks` board tasks on the hosts at `urls` (none: the agents here), all in `review`."""
    document = bb.board_config(root / f"{name}-sessions", concurrency)
    share = max(1, math.ceil(concurrency / len(urls))) if urls else 0
    if urls:
        document["hosts"] = {f"h{n}": {"url": url, "capacity": share, "agents": ["echo"], "poll": 1, "mounted": True}
                             for n, url in enumerate(urls, 1)}
    board = Board(parse_config(document), repo, data_dir=root / f"{name}-data")
    try:
        board.start()
        deadline = time.monotonic() + 60
        while urls and not all(h["live"] for h in board.status()["hosts"]):
            if time.monotonic() > deadline:
                raise bb.BenchFailed("the hosts did not come up")
            time.sleep(0.05)
        began = time.perf_counter()
        ids = [board.create_task(bb.prompt(n))["id"] for n in range(tasks)]
        done = [board.wait_task(task_id, ("review", "failed", "cancelled"), bb.TASK_TIMEOUT_S) for task_id in ids]
        wall = time.perf_counter() - began
    finally:
        board.close()
    for task in done:
        if task["state"] != "review" or not Path(task["workspace"], "echo.txt").is_file():
            raise bb.BenchFailed(f"{name} task {task['id']}: {task['state']} ({task.get('error') or 'no echo.txt'})")
        if urls and not task["host"]:
            raise bb.BenchFailed(f"{name} task {task['id']} ran here, not on a host")
    return wall


def turn_times(agent: AcpAgent, cwd: Path, prompt: str, turns: int) -> tuple[float, int]:
    """(the median seconds of one turn of `prompt`, the agent updates a turn brought), over `turns` turns."""
    agent.initialize()
    session = agent.new_session(str(cwd))
    session.run("turns?")  # warm-up
    times, counts = [], []
    seen = [0]

    def count(_event: object) -> None:
        seen[0] += 1

    for _ in range(turns):
        seen[0] = 0
        began = time.perf_counter()
        result = session.run(prompt, on_event=count)
        times.append(time.perf_counter() - began)
        counts.append(seen[0])
        if result.stop_reason != "end_turn":
            raise bb.BenchFailed(f"a hop turn ended with {result.stop_reason}")
    return statistics.median(times), max(counts)


def hop(root: Path, url: str, turns: int, words: int, sessions: Path) -> dict[str, float]:
    """The host hop's added seconds: per agent update of a streaming turn, and per one-update turn."""
    cwd = root / "hop"
    cwd.mkdir(exist_ok=True)
    stream = " ".join(f"w{n}" for n in range(words))  # the echo streams each word as one update ("turns?": one)
    measured: dict[str, tuple[float, int]] = {}
    for where, prompt in (("stream", stream), ("single", "turns?")):
        for side in ("direct", "host"):
            if side == "direct":
                agent = AcpAgent.spawn(sys.executable, [str(bb.ECHO_AGENT)], env={"ACP_ECHO_AGENT_DIR": str(sessions)},
                                       cwd=str(cwd), policy=AllowAll())
            else:
                agent = AcpAgent.connect(url.replace("http://", "ws://") + "/agents/echo/acp", {}, cwd=str(cwd),
                                         policy=AllowAll())
            with agent:
                measured[f"{where}-{side}"] = turn_times(agent, cwd, prompt, turns)
    updates = measured["stream-direct"][1]
    return {"per_update": (measured["stream-host"][0] - measured["stream-direct"][0]) / max(1, updates),
            "updates": updates,
            "round_trip": measured["single-host"][0] - measured["single-direct"][0]}


def run_hosts_bench(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="board-hosts-bench-") as temp, ExitStack() as hosts:
        root = Path(temp)
        (root / "home").mkdir()
        bb.isolate_git(root / "home")
        config = root / "host.json"
        sessions = root / "host-sessions"
        config.write_text(json.dumps({"agents": {"echo": {"acp": {
            "command": sys.executable, "args": [str(bb.ECHO_AGENT)], "env": {"ACP_ECHO_AGENT_DIR": str(sessions)}},
            "max_concurrent": max(4, args.concurrency + 2)}}}))
        try:
            repo = bb.make_repo(root)
            urls = [hosts.enter_context(agent_host(config)) for _ in range(2)]
            walls = {name: run_on_hosts(root, repo, chosen, args.tasks, args.concurrency, name)
                     for name, chosen in (("here", []), ("1 host", urls[:1]), ("2 hosts", urls))}
            cost = hop(root, urls[0], args.turns, args.words, sessions)
        except bb.BenchFailed as exc:
            print(f"board bench: {exc}", file=sys.stderr)
            return 1
    print(f"board bench, hosts: {args.tasks} tasks through examples/acp_echo_agent.py, concurrency "
          f"{args.concurrency}, agent-host processes on loopback, {os.cpu_count()} CPUs")
    print(f"{'':8} {'wall s':>8} {'tasks/min':>10}")
    for name, wall in walls.items():
        print(f"{name:8} {wall:8.2f} {args.tasks * 60 / wall:10.1f}")
    per_update_ms = cost["per_update"] * 1000
    print(f"host hop: {per_update_ms:+.3f} ms per agent update ({cost['updates']:.0f} updates a turn, median of "
          f"{args.turns} turns); {cost['round_trip'] * 1000:+.3f} ms per one-update turn (goal < {bb.HOP_GOAL_MS:.2f} "
          f"ms per update: {'met' if per_update_ms < bb.HOP_GOAL_MS else 'NOT met'})")
    return 0
