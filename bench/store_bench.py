"""Benchmark the stores: tasks created and polled per second, memory vs sqlite vs PostgreSQL, 1 and 3 replicas.

What one replica does for a task, straight on the store (no HTTP, so the numbers are the store's):
  create  insert the task record (leased to this replica, as the replica running it holds it),
          append its first event to the task's channel, then mark it completed by compare-and-set
  poll    read the task record (what tasks/get / GetTask does on any replica)
A replica is one process (`--tasks` creates, then `--polls` polls per task, one thread); with 3
replicas the three processes start at the same instant on the same store and the rate is their
total over the wall time. Memory is the floor (ratios are against memory with one replica); three
memory "replicas" share nothing (each has its own), they only show the ceiling. PostgreSQL is a
server this script starts in a temporary directory (tests/store/pg.py: fsync off, loopback), or
the one `--postgres URL` names (its database must be empty or a kit store).

    python bench/store_bench.py [--tasks 2000] [--polls 3] [--runs 3] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_agent_kit.store import Record, open_store  # noqa: E402

BODY = {"taskId": "", "status": "working", "statusMessage": "started", "createdAt": "2026-12-01T00:00:00Z",
        "ttl": 60000, "pollInterval": 500, "request": {"name": "calculate_metrics", "arguments": {"values": [1, 2]}}}


def worker(url: str, tasks: int, polls: int, start: float, barrier: Callable[[], None] = lambda: None
           ) -> dict[str, float]:
    """One replica's run: when (wall clock) its create phase began and ended, and its poll phase began
    (after `barrier`: every replica has created its tasks) and ended."""
    store = open_store(url)
    me = uuid.uuid4().hex[:8]
    keys = [f"{me}-{i:06d}" for i in range(tasks)]
    time.sleep(max(0.0, start - time.time()))
    began = time.time()
    for i, key in enumerate(keys):
        body = {**BODY, "taskId": key}
        store.insert(Record("bench_tasks", key, body, owner="alice", state="working", order=f"{began + i:.6f}",
                            holder=me), lease_s=30)
        store.append(f"task:bench_tasks:{key}", {"status": "working"})
        current = store.get("bench_tasks", key)
        assert current is not None
        done = current._replace(body={**body, "status": "completed"}, state="completed", holder=None)
        assert store.update(done, expect_version=current.version) is not None
    created = time.time()
    barrier()
    polling = time.time()
    for _ in range(polls):
        for key in keys:
            assert store.get("bench_tasks", key) is not None
    ended = time.time()
    store.close()
    return {"began": began, "created": created, "polling": polling, "ended": ended}


def barrier() -> None:
    """A worker's side of the phase barrier: say it has created its tasks, wait for the go."""
    print("created", flush=True)
    sys.stdin.readline()


def run(url: str, replicas: int, tasks: int, polls: int) -> tuple[float, float]:
    """(tasks created per second, polls per second), all replicas together."""
    start = time.time() + 1.0
    if replicas == 1 and url == "memory:":  # the floor runs in this process: no interpreter start in the way
        times = [worker(url, tasks, polls, start)]
    else:
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", url, str(tasks), str(polls), str(start)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(replicas)]
        for proc in procs:  # every replica has created its tasks: let them all poll
            assert proc.stdout is not None and proc.stdout.readline().strip() == "created"
        times = [json.loads(proc.communicate("go\n", timeout=600)[0]) for proc in procs]
        if any(proc.returncode for proc in procs):
            raise SystemExit(f"a replica failed on {url}")
    began, created = min(t["began"] for t in times), max(t["created"] for t in times)
    poll_start, ended = min(t["polling"] for t in times), max(t["ended"] for t in times)
    return replicas * tasks / (created - began), replicas * tasks * polls / max(1e-9, ended - poll_start)


def fresh_sqlite(directory: Path) -> str:
    return f"sqlite:///{directory / (uuid.uuid4().hex + '.db')}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000, help="tasks each replica creates per run")
    parser.add_argument("--polls", type=int, default=3, help="polls of each task per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per cell; the median is shown")
    parser.add_argument("--postgres", metavar="URL", help="use this PostgreSQL database instead of starting one")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, tasks, polls, start = args.worker
        print(json.dumps(worker(url, int(tasks), int(polls), float(start), barrier)))
        return
    server = None
    if args.postgres is None:
        from tests.store.pg import PostgresServer

        server = PostgresServer()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            urls = {"memory": lambda: "memory:", "sqlite": lambda: fresh_sqlite(Path(tmp)),
                    "postgresql": lambda: args.postgres or server.new_database()}  # type: ignore[union-attr]
            table: dict[tuple[str, int], tuple[float, float]] = {}
            for name, make in urls.items():
                for replicas in (1, 3):
                    results = [run(make(), replicas, args.tasks, args.polls) for _ in range(args.runs)]
                    table[name, replicas] = (statistics.median(r[0] for r in results),
                                             statistics.median(r[1] for r in results))
    finally:
        if server is not None:
            server.stop()
    floor = table["memory", 1]
    print(f"tasks created and polled per second ({args.tasks} tasks per replica, {args.polls} polls each, "
          f"median of {args.runs}; x = ratio to memory with 1 replica)")
    print(f"{'store':<12}{'create/s 1':>12}{'x':>7}{'create/s 3':>12}{'x':>7}"
          f"{'poll/s 1':>12}{'x':>7}{'poll/s 3':>12}{'x':>7}")
    for name in urls:
        one, three = table[name, 1], table[name, 3]
        print(f"{name:<12}{one[0]:>12.0f}{one[0] / floor[0]:>7.3f}{three[0]:>12.0f}{three[0] / floor[0]:>7.3f}"
              f"{one[1]:>12.0f}{one[1] / floor[1]:>7.3f}{three[1]:>12.0f}{three[1] / floor[1]:>7.3f}")
    print("memory with 3 replicas: three separate stores (memory is not shared), the ceiling only")


if __name__ == "__main__":
    main()
