"""Benchmark the stdio server against a floor and a peer, in one run, as ratios.

Contestants: a bare JSON responder (the floor), examples/metrics_server.py (ours, argument
validation on), and, when `mcp` is importable, the same tool on the official SDK's MCPServer.
Each is measured N times (median): start-to-first-reply, 1000 sequential tools/call round
trips (after 100 untimed ones), peak RSS, and the server's own CPU time over those calls (a
steadier measure than wall time on machines whose wake-up latency varies).
Two passes: one where the scheduler places the processes freely (the wall clock a user sees; on
small VMs it swings with how fast an idle CPU wakes up), and one with the driver and every server
pinned to one CPU (no idle wake-ups: the servers' own work, steady to a few percent).
Run: python bench/stdio_bench.py [--runs 9] [--calls 1000] [--pin CPU] [--only free|pinned]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
}
WARMUP = 100
ARGS = {"values": [1.5, 2.5, 3, 4, 5, 6, 7, 8], "metric_type": "mean"}


def request(id_: int, method: str, **params: object) -> bytes:
    body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": {"_meta": META, **params}}
    return json.dumps(body).encode() + b"\n"


def cpu_seconds(pid: int) -> float:
    """CPU time all threads of the process have used so far (nanosecond schedstat, summed)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that just ended
            continue
    return total / 1e9


def peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def measure(script: Path, calls: int, pin: int | None = None) -> tuple[float, float, int, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env, cwd=ROOT,
        preexec_fn=None if pin is None else lambda: os.sched_setaffinity(0, {pin}),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request(0, "server/discover"))
    proc.stdin.flush()
    first = json.loads(proc.stdout.readline())
    start_s = time.perf_counter() - started
    assert first.get("id") == 0, first
    call = [request(n, "tools/call", name="calculate_metrics", arguments=ARGS) for n in range(1, calls + WARMUP + 1)]
    t0 = time.perf_counter()
    for n, line in enumerate(call, 1):
        if n == WARMUP + 1:  # steady state: the first calls load the validator and warm caches
            t0 = time.perf_counter()
            cpu0 = cpu_seconds(proc.pid)
        proc.stdin.write(line)
        proc.stdin.flush()
        # Find the reply by its id without parsing it: the bench times the server, not this
        # driver's JSON parser (whose cost would grow with the size of a real MCP result).
        # Only the head is looked at, so a larger reply costs the driver nothing extra here.
        marker = b'"id":%d,' % n
        raw = proc.stdout.readline()
        while marker not in raw[:64].replace(b'"id": ', b'"id":'):  # skip notifications, if any
            raw = proc.stdout.readline()
    calls_s = time.perf_counter() - t0
    cpu_s = cpu_seconds(proc.pid) - cpu0
    reply = json.loads(raw)
    assert reply.get("id") == calls + WARMUP and "result" in reply, reply
    rss = peak_rss_kb(proc.pid)
    proc.stdin.close()
    proc.wait(30)
    return start_s, calls_s, rss, cpu_s


def run_pass(contestants: dict[str, Path], runs: int, calls: int, pin: int | None) -> dict[str, tuple[float, ...]]:
    """Median (start s, calls s, RSS kB, server CPU s) per contestant, runs interleaved."""
    results: dict[str, list[tuple[float, float, int, float]]] = {name: [] for name in contestants}
    for _ in range(runs):  # interleave contestants so drift hits all alike
        for name, script in contestants.items():
            results[name].append(measure(script, calls, pin))
    return {name: tuple(statistics.median(run[i] for run in rows) for i in range(4)) for name, rows in results.items()}


def report(title: str, medians: dict[str, tuple[float, ...]], calls: int) -> None:
    floor = medians["floor"]
    print(title)
    print(f"{'server':<16}{'start ms':>10}{'x floor':>9}{'calls ms':>11}{'x floor':>9}{'us/call':>9}"
          f"{'RSS MiB':>9}{'x floor':>9}{'cpu us/call':>13}{'x floor':>9}")
    for name, (start, total, rss, cpu) in medians.items():
        print(
            f"{name:<16}{start * 1e3:>10.1f}{start / floor[0]:>9.2f}{total * 1e3:>11.1f}{total / floor[1]:>9.2f}"
            f"{total / calls * 1e6:>9.1f}{rss / 1024:>9.1f}{rss / floor[2]:>9.2f}"
            f"{cpu / calls * 1e6:>13.1f}{cpu / floor[3] if floor[3] else float('nan'):>9.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--pin", type=int, metavar="CPU", default=0,
                        help="the CPU for the pinned pass (driver and every server on it: no idle wake-ups, so "
                             "the calls ratio shows the servers' own work, steady on noisy VMs)")
    parser.add_argument("--only", choices=("free", "pinned"), default=None, help="run one pass instead of both")
    args = parser.parse_args()
    # Installed packages ship bytecode; compile ours so the comparison is like for like.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mcp_agent_kit"), str(ROOT / "examples")],
                   check=True)
    contestants = {"floor": ROOT / "bench/floor_responder.py", "mcp-agent-kit": ROOT / "examples/metrics_server.py"}
    if importlib.util.find_spec("mcp") is not None:
        contestants["official SDK"] = ROOT / "bench/sdk_metrics_server.py"
    head = f"stdio bench: {args.runs} runs (median), {args.calls} sequential tools/call round trips"
    ratios: dict[str, float] = {}
    if args.only != "pinned":
        free = run_pass(contestants, args.runs, args.calls, None)
        report(head + ", scheduler places processes freely", free, args.calls)
        ours, floor = free["mcp-agent-kit"], free["floor"]
        ratios = {"start": ours[0] / floor[0], "calls": ours[1] / floor[1], "RSS": ours[2] / floor[2]}
    if args.only != "free":
        affinity = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {args.pin})  # children inherit it
        try:
            pinned = run_pass(contestants, args.runs, args.calls, args.pin)
        finally:
            os.sched_setaffinity(0, affinity)
        report(head + f", all on CPU {args.pin}", pinned, args.calls)
        ours, floor = pinned["mcp-agent-kit"], pinned["floor"]
        ratios.setdefault("start", ours[0] / floor[0])
        ratios.setdefault("RSS", ours[2] / floor[2])
        ratios["calls pinned"] = ours[1] / floor[1]
        ratios["cpu/call pinned"] = ours[3] / floor[3]
    targets = {"start": 2.2, "calls": 1.3, "calls pinned": 1.3, "RSS": 1.6}
    print("ratios: " + ", ".join(
        f"{name} {value:.2f}x" + (f" (target {targets[name]}x)" if name in targets else "")
        for name, value in ratios.items()
    ))


if __name__ == "__main__":
    main()
