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

`--servers` measures the same through real servers instead: 1 and 3 replicas of
examples/everything_server.py (`--http 127.0.0.1:PORT`, `--store URL` but for memory, one secret in
$MCP_AGENT_KIT_SECRET, tests/store/replicas.py) per store, driven by `--clients` threads, each with a
keep-alive connection to every replica, speaking 2026-07-28 (no session):
  create  tools/call slow_compute {"seconds": 0} declaring the tasks extension: a CreateTaskResult;
          task i goes to replica i mod N
  poll    tasks/get of each task through the next replica (i + 1 mod N: the polls cross replicas),
          `--polls` times and on until it reports completed (memory with 3 replicas shares no
          tasks: there each task is polled on the replica that created it)
Rates are all clients together over the wall time of each phase (every task is created before any
is polled), after a warm-up run; any error reply, or a task not completed within 30 s, stops the bench.

    python bench/store_bench.py --servers [--tasks 300] [--polls 3] [--runs 3] [--clients 4] [--postgres URL]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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


# ---- --servers: real MCP tasks through real replicas of examples/everything_server.py ----------------------
SERVER = ["examples/everything_server.py", "--http", "127.0.0.1:{port}"]
PROTOCOL = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "store-bench", "version": "0"}}
CREATE = {"name": "slow_compute", "arguments": {"seconds": 0}}
HTTP_TIMEOUT_S = 30.0
POLL_WAIT_S = 30.0


class Client:
    """One client thread's keep-alive connections, one per replica, speaking 2026-07-28 over plain JSON."""

    def __init__(self, ports: list[int]) -> None:
        self.conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT_S) for port in ports]

    def call(self, replica: int, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": PROTOCOL, "Mcp-Method": method, "Mcp-Name": name}
        conn = self.conns[replica]
        conn.request("POST", "/mcp", json.dumps(body).encode(), headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            reply = json.loads(raw)
        except ValueError:
            raise RuntimeError(f"{method} on replica {replica}: HTTP {response.status}, not JSON: {raw[:200]!r}"
                               ) from None
        if not isinstance(reply, dict) or not isinstance(reply.get("result"), dict):
            raise RuntimeError(f"{method} on replica {replica}: {str(reply)[:300]}")
        result: dict[str, Any] = reply["result"]
        return result

    def create(self, replica: int) -> str:
        created = self.call(replica, "tools/call", CREATE, "slow_compute")
        if created.get("resultType") != "task" or not isinstance(created.get("taskId"), str):  # CreateTaskResult
            raise RuntimeError(f"tools/call slow_compute did not create a task: {str(created)[:300]}")
        return str(created["taskId"])

    def poll(self, replica: int, task_id: str, polls: int) -> int:
        """tasks/get `polls` times, then on until the task is completed; how many gets it took."""
        deadline = time.monotonic() + POLL_WAIT_S
        done = 0
        while True:
            status = self.call(replica, "tasks/get", {"taskId": task_id}, task_id).get("status")
            done += 1
            if status == "completed" and done >= polls:
                return done
            if status not in ("working", "completed") or time.monotonic() > deadline:
                raise RuntimeError(f"task {task_id} on replica {replica}: {status} after {done} polls")

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


def drive(ports: list[int], clients: int, tasks: int, polls: int, cross: bool) -> tuple[float, float]:
    """(tasks created per second, polls per second) over `clients` threads: every thread creates its
    share of `tasks` round-robin over the replicas, then (when all have) polls each through the next
    replica when `cross`, else through the one that created it."""
    shares = [list(range(index, tasks, clients)) for index in range(clients)]
    conns = [Client(ports) for _ in range(clients)]
    made: list[list[tuple[int, str]]] = [[] for _ in range(clients)]
    counts = [0] * clients

    def create(index: int) -> None:
        for number in shares[index]:
            replica = number % len(ports)
            made[index].append((replica, conns[index].create(replica)))

    def poll(index: int) -> None:
        for replica, task_id in made[index]:
            counts[index] += conns[index].poll((replica + 1) % len(ports) if cross else replica, task_id, polls)

    try:
        with ThreadPoolExecutor(clients) as pool:
            began = time.monotonic()
            list(pool.map(create, range(clients)))
            created = time.monotonic()
            list(pool.map(poll, range(clients)))
            ended = time.monotonic()
    finally:
        for conn in conns:
            conn.close()
    return tasks / max(1e-9, created - began), sum(counts) / max(1e-9, ended - created)


def serve(url: str | None, replicas: int, args: argparse.Namespace) -> tuple[float, float]:
    """Median (created/s, polled/s) of `args.runs` runs through `replicas` servers on store `url`
    (None: memory, no --store: each replica alone)."""
    from tests.store.replicas import Replicas

    with Replicas(SERVER, replicas, store_url=url) as running:
        drive(running.ports, args.clients, min(args.tasks, 50), 1, url is not None)  # warm-up: imports, pools
        results = [drive(running.ports, args.clients, args.tasks * replicas, args.polls, url is not None)
                   for _ in range(args.runs)]
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


def fresh_sqlite(directory: Path) -> str:
    return f"sqlite:///{directory / (uuid.uuid4().hex + '.db')}"


Table = dict[tuple[str, int], tuple[float, float]]


def table_of(args: argparse.Namespace, urls: dict[str, Callable[[], str]]) -> Table:
    """(created/s, polled/s) per (store, replicas): on the store API, or through servers with --servers."""
    table: Table = {}
    for name, make in urls.items():
        for replicas in (1, 3):
            if args.servers:
                table[name, replicas] = serve(None if name == "memory" else make(), replicas, args)
                continue
            results = [run(make(), replicas, args.tasks, args.polls) for _ in range(args.runs)]
            table[name, replicas] = (statistics.median(r[0] for r in results),
                                     statistics.median(r[1] for r in results))
    return table


def show(args: argparse.Namespace, table: Table) -> None:
    floor = table["memory", 1]
    what = (f"MCP tasks through examples/everything_server.py over HTTP ({args.tasks} tasks per replica, "
            f"{args.clients} keep-alive clients, " if args.servers else f"tasks created and polled per second "
            f"({args.tasks} tasks per replica, ")
    print(f"{what}{args.polls} polls each, median of {args.runs}; x = ratio to memory with 1 replica)")
    print(f"{'store':<12}{'create/s 1':>12}{'x':>8}{'create/s 3':>12}{'x':>8}"
          f"{'poll/s 1':>12}{'x':>8}{'poll/s 3':>12}{'x':>8}")
    for name in ("memory", "sqlite", "postgresql"):
        one, three = table[name, 1], table[name, 3]
        print(f"{name:<12}{one[0]:>12.0f} {one[0] / floor[0]:>7.3g}{three[0]:>12.0f} {three[0] / floor[0]:>7.3g}"
              f"{one[1]:>12.0f} {one[1] / floor[1]:>7.3g}{three[1]:>12.0f} {three[1] / floor[1]:>7.3g}")
    if args.servers:
        print("tasks are created round-robin over the replicas and polled through the next one (across replicas);"
              " memory with 3 replicas shares no tasks, so there each task is polled on the replica that created it")
    else:
        print("memory with 3 replicas: three separate stores (memory is not shared), the ceiling only")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", action="store_true",
                        help="measure MCP tasks/call + tasks/get through real server replicas over HTTP")
    parser.add_argument("--tasks", type=int, help="tasks each replica creates per run (default 2000; 300 with "
                        "--servers)")
    parser.add_argument("--polls", type=int, default=3, help="polls of each task per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per cell; the median is shown")
    parser.add_argument("--clients", type=int, default=4, help="client threads with --servers")
    parser.add_argument("--postgres", metavar="URL", help="use this PostgreSQL database instead of starting one")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url, tasks, polls, start = args.worker
        print(json.dumps(worker(url, int(tasks), int(polls), float(start), barrier)))
        return
    if args.tasks is None:
        args.tasks = 300 if args.servers else 2000
    if min(args.tasks, args.polls, args.runs, args.clients) < 1:
        parser.error("--tasks, --polls, --runs and --clients must be at least 1")
    server = None
    if args.postgres is None:
        from tests.store.pg import PostgresServer

        server = PostgresServer()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            urls = {"memory": lambda: "memory:", "sqlite": lambda: fresh_sqlite(Path(tmp)),
                    "postgresql": lambda: args.postgres or server.new_database()}  # type: ignore[union-attr]
            table = table_of(args, urls)
    except (RuntimeError, OSError) as error:  # a replica that would not start or answered wrongly: one line
        raise SystemExit(f"store_bench: {error}") from None
    finally:
        if server is not None:
            server.stop()
    show(args, table)


if __name__ == "__main__":
    main()
