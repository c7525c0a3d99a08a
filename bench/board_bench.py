"""Benchmark the board: tasks through examples/acp_echo_agent.py, against the same work scripted without the board.

Both sides do, per task, the same work on one temporary git repository (one commit) at the same concurrency:
  floor  `git worktree add -b floor/<n> DIR HEAD` (hooks off and one at a time, as the board runs it), spawn
         the echo agent in DIR through the kit's ACP client (acp.client.AcpAgent, every permission allowed),
         initialize, session/new, one prompt (the agent streams an echo, asks permission and writes
         DIR/echo.txt through the client), close; N tasks on a ThreadPoolExecutor of `--concurrency` threads
  board  a real board.board.Board (sqlite store in a temporary data directory; its agent the echo agent with
         `approve: all`, `max_concurrent` = `--concurrency`): N tasks created at once, each run by the
         board (queue, worktree on task/<id>-<slug>, agent process, turn, transcript, state moves) until it
         is in `review` (Board.wait_task); every task's echo.txt is checked in its worktree
Printed: the wall time of each side, tasks per minute, the slot time per task (wall x concurrency / N: how long
one task holds one of the slots), the mean time of one task from its start to its end (floor: the task
function; board: startedAt to endedAt), the board's overhead per task (slot time, board less floor) and the
ratio board / floor against the goal (at most 1.5: the board adds at most 50 % to the floor). The floor runs
first, after one untimed warm-up task; a failed task on either side stops the bench (exit 1).

    python bench/board_bench.py [--tasks 100] [--concurrency 8]

Hosts mode (`--hosts`, issue #28 item 3): the board with its tasks on agent hosts, `mcp-agent-kit agent-host`
processes on loopback (mounted: they serve the echo agent, the board makes the worktrees). First the tasks per
minute of N tasks with the agents local (no hosts), on 1 host and on 2 hosts (the same concurrency in all three:
each host's capacity is its share of it). Then the host hop: the kit's ACP client runs the same turns on the echo
agent spawned here and through a host (ACP's WebSocket profile, /agents/echo/acp); a turn streams `--words`
agent updates, and the hop's added time per agent update is (turn via the host - turn direct) / updates (the
median of `--turns` turns each), against the goal (under 2 ms on loopback); the added time of a one-update turn
(a round trip) is printed beside it.

    python bench/board_bench.py --hosts [--tasks 40] [--concurrency 4] [--turns 20] [--words 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_agent_kit.acp.client.client import AcpAgent  # noqa: E402
from mcp_agent_kit.acp.client.permissions import AllowAll  # noqa: E402
from mcp_agent_kit.board.board import Board  # noqa: E402
from mcp_agent_kit.board.config import parse_config  # noqa: E402
from mcp_agent_kit.board.git import LOCAL_ENV  # noqa: E402

ECHO_AGENT = ROOT / "examples" / "acp_echo_agent.py"
GOAL = 1.5  # the board's time per task at most this many times the floor's
HOP_GOAL_MS = 2.0  # the host hop adds at most this much per agent update
TASK_TIMEOUT_S = 600.0  # the bound on waiting for any one task
WORKTREE_LOCK = threading.Lock()
GIT = ("git", "-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0")


class BenchFailed(Exception):
    """A task failed on one side: the bench's numbers would mean nothing."""


def isolate_git(home: Path) -> None:
    """This process and its children use a git with no system or global config and a fixed identity."""
    for name in LOCAL_ENV:
        os.environ.pop(name, None)
    os.environ.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
                       "XDG_CONFIG_HOME": str(home / ".config")})
    for who in ("AUTHOR", "COMMITTER"):
        os.environ[f"GIT_{who}_NAME"] = "Board Bench"
        os.environ[f"GIT_{who}_EMAIL"] = "bench@example.com"


def git(cwd: Path, *args: str) -> None:
    done = subprocess.run([*GIT, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchFailed(f"git {' '.join(args)}: {done.stderr.strip()}")


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "README.md").write_text("a repository for the board bench\n")
    (repo / "src" / "app.py").write_text("print('hello')\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    return repo


def prompt(number: int) -> str:
    return f"bench task {number}: echo this"


# ---- the floor: the same work, scripted without the board ----------------------------------------------
def floor_task(repo: Path, worktrees: Path, sessions: Path, number: int) -> float:
    """One task without the board; its duration in seconds."""
    began = time.perf_counter()
    path = worktrees / f"t{number}"
    with WORKTREE_LOCK:  # git's `worktree add` is not safe to run concurrently in one repository (the board locks too)
        git(repo, "worktree", "add", "-q", "-b", f"floor/t{number}", str(path), "HEAD")
    with AcpAgent.spawn(sys.executable, [str(ECHO_AGENT)], env={"ACP_ECHO_AGENT_DIR": str(sessions)},
                        cwd=str(path), policy=AllowAll()) as agent:
        agent.initialize()
        session = agent.new_session(str(path))
        result = session.run(prompt(number))
    if result.stop_reason != "end_turn" or not (path / "echo.txt").is_file():
        raise BenchFailed(f"floor task {number}: stop reason {result.stop_reason}, echo.txt written: "
                          f"{(path / 'echo.txt').is_file()}")
    return time.perf_counter() - began


def run_floor(root: Path, repo: Path, tasks: int, concurrency: int) -> tuple[float, list[float]]:
    """(wall seconds, each task's seconds) of `tasks` floor tasks on `concurrency` threads, after a warm-up."""
    worktrees, sessions = root / "floor-worktrees", root / "floor-sessions"
    floor_task(repo, worktrees, sessions, -1)  # warm-up: the interpreter's and git's files in the page cache
    began = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        durations = list(pool.map(lambda n: floor_task(repo, worktrees, sessions, n), range(tasks)))
    return time.perf_counter() - began, durations


# ---- the board -----------------------------------------------------------------------------------------
def board_config(sessions: Path, concurrency: int) -> dict[str, Any]:
    return {"agents": {"echo": {"acp": {"command": sys.executable, "args": [str(ECHO_AGENT)], "approve": "all",
                                        "env": {"ACP_ECHO_AGENT_DIR": str(sessions)}}}},
            "board": {"max_concurrent": concurrency}}


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def run_board(root: Path, repo: Path, tasks: int, concurrency: int) -> tuple[float, list[float]]:
    """(wall seconds from the first create to the last review, each task's startedAt-to-endedAt seconds)."""
    config = parse_config(board_config(root / "board-sessions", concurrency))
    board = Board(config, repo, data_dir=root / "board-data")
    try:
        board.start()
        began = time.perf_counter()
        ids = [board.create_task(prompt(n))["id"] for n in range(tasks)]
        done = [board.wait_task(task_id, ("review", "failed", "cancelled"), TASK_TIMEOUT_S) for task_id in ids]
        wall = time.perf_counter() - began
    finally:
        board.close()
    for task in done:
        if task["state"] != "review" or not Path(task["workspace"], "echo.txt").is_file():
            raise BenchFailed(f"board task {task['id']}: {task['state']} ({task.get('error') or 'no echo.txt'})")
    return wall, [_seconds(t["endedAt"]) - _seconds(t["startedAt"]) for t in done]


# ---- the report ----------------------------------------------------------------------------------------
def report(tasks: int, concurrency: int, floor: tuple[float, list[float]], board: tuple[float, list[float]]) -> None:
    print(f"board bench: {tasks} tasks through examples/acp_echo_agent.py, concurrency {concurrency}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'':8} {'wall s':>8} {'tasks/min':>10} {'slot s/task':>12} {'mean task s':>12}")
    slots = {}
    for name, (wall, durations) in (("floor", floor), ("board", board)):
        slots[name] = wall * concurrency / tasks
        print(f"{name:8} {wall:8.2f} {tasks * 60 / wall:10.1f} {slots[name]:12.3f} {statistics.mean(durations):12.3f}")
    ratio = slots["board"] / slots["floor"]
    overhead_ms = (slots["board"] - slots["floor"]) * 1000
    print(f"board overhead per task: {overhead_ms:+.0f} ms of slot time; ratio board/floor {ratio:.2f} "
          f"(goal <= {GOAL:.2f}: {'met' if ratio <= GOAL else 'NOT met'})")


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--tasks", type=int, default=None, help="tasks on each side (default 100; --hosts: 40)")
    cli.add_argument("--concurrency", type=int, default=None,
                     help="tasks at once: threads and max_concurrent (default 8; --hosts: 4)")
    cli.add_argument("--hosts", action="store_true", help="the hosts mode (see above)")
    cli.add_argument("--turns", type=int, default=20, help="--hosts: turns each way for the hop (default 20)")
    cli.add_argument("--words", type=int, default=200, help="--hosts: agent updates a turn streams (default 200)")
    args = cli.parse_args()
    args.tasks = args.tasks if args.tasks is not None else 40 if args.hosts else 100
    args.concurrency = args.concurrency if args.concurrency is not None else 4 if args.hosts else 8
    if args.tasks < 1 or args.concurrency < 1 or args.turns < 1 or args.words < 1:
        cli.error("--tasks and --concurrency must be at least 1 (and --turns and --words)")
    if args.hosts:
        from board_hosts_bench import run_hosts_bench  # bench/board_hosts_bench.py, beside this file

        return run_hosts_bench(args)
    with tempfile.TemporaryDirectory(prefix="board-bench-") as temp:
        root = Path(temp)
        (root / "home").mkdir()
        isolate_git(root / "home")
        try:
            repo = make_repo(root)
            floor = run_floor(root, repo, args.tasks, args.concurrency)
            board = run_board(root, repo, args.tasks, args.concurrency)
        except BenchFailed as exc:
            print(f"board bench: {exc}", file=sys.stderr)
            return 1
    report(args.tasks, args.concurrency, floor, board)
    return 0


if __name__ == "__main__":
    sys.exit(main())
