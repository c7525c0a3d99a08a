"""Slow clients: can thousands of stalled connections keep a server from answering everyone else?

For each contestant — our MCP server, our A2A server and, when `mcp` and `uvicorn` are installed, the
official SDK's server (uvicorn) — started fresh as a child process on 127.0.0.1:
  1. 200 legitimate requests with nobody else around (the baseline),
  2. N idle connections that send half a request head and stop (default 10,000) plus 500 uploads that
     dribble a body one byte a second,
  3. the same 200 legitimate requests while those are held, and the server's RSS and thread count
     (read from /proc/<pid>/status) while they are held.
Prints a table and the ratios loaded/baseline. Each legitimate request is a fresh connection (a new
client must be accepted, not only served). Targets: all answered within 100 ms, RSS under 150 MB at
10,000 held connections, threads bounded by the worker pool.

Rules: loopback only; every loop and wait is bounded; it stops by itself. The soft open-files limit is
raised up to the hard one, and N is scaled down (with a note) when even that is too small.

    python bench/slow_clients.py [--idle 10000] [--slow 500] [--legit 200] [--servers mcp,a2a,sdk]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import resource
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
}
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "calculate_metrics",
}
MCP_BODY = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {"_meta": META, "name": "calculate_metrics",
               "arguments": {"values": [1.5, 2.5, 3, 4, 5, 6, 7, 8], "metric_type": "mean"}},
})
A2A_BODY = json.dumps({
    "jsonrpc": "2.0", "id": "1", "method": "SendMessage",
    "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [
        {"data": {"skill": "calculate_metrics", "arguments": {"values": [3, 1, 4, 1, 5, 9, 2, 6]}}}]}},
})
SDK_RUNNER = """
import sys, uvicorn
sys.path.insert(0, sys.argv[2])
from sdk_metrics_server import server
app = server.streamable_http_app(json_response=True)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="critical")
"""
REQUEST_TIMEOUT = 3.0
PHASE_BUDGET = 45.0
LINGER_RESET = struct.pack("ii", 1, 0)  # close with RST: 10,000 sockets leave no TIME_WAIT behind


@dataclass
class Contestant:
    name: str
    argv: Callable[[int], list[str]]
    path: str
    body: str
    headers: dict[str, str]
    expect: bytes


CONTESTANTS = {
    "mcp": Contestant(
        "ours MCP",
        lambda port: [sys.executable, "-m", "mcp_agent_kit", "serve", "examples/metrics_server.py",
                      "--http", f"127.0.0.1:{port}"],
        "/mcp", MCP_BODY, MCP_HEADERS, b"4.625"),
    "a2a": Contestant(
        "ours A2A",
        lambda port: [sys.executable, "-m", "mcp_agent_kit", "a2a", "examples/metrics_server.py:server",
                      "--port", str(port)],
        "/a2a", A2A_BODY, {"Content-Type": "application/json", "A2A-Version": "1.0"}, b"3.875"),
    "sdk": Contestant(
        "SDK uvicorn",
        lambda port: [sys.executable, "-c", SDK_RUNNER, str(port), str(ROOT / "bench")],
        "/mcp", MCP_BODY, MCP_HEADERS, b"4.625"),
}


@dataclass
class Result:
    name: str
    base: list[float] = field(default_factory=list)
    loaded: list[float] = field(default_factory=list)
    asked: int = 0
    held: int = 0
    rss_mb: float = 0.0
    threads: int = 0
    base_threads: int = 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def raise_fd_limit(wanted: int) -> int:
    """Raise the soft open-files limit towards `wanted` (up to the hard limit); the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def proc_status(pid: int) -> tuple[float, int]:
    """(RSS in MB, threads) of a process, from /proc; (0, 0) where /proc is not there."""
    rss, threads = 0.0, 0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads


def one_request(port: int, who: Contestant) -> float | None:
    """Seconds for one request on a fresh connection; None when it failed or timed out."""
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        conn.request("POST", who.path, who.body, {**who.headers, "Connection": "close"})
        response = conn.getresponse()
        payload = response.read()
        if response.status != 200 or who.expect not in payload:
            return None
        return time.perf_counter() - started
    except OSError:
        return None
    finally:
        conn.close()


def legit(port: int, who: Contestant, count: int) -> list[float]:
    """Latencies of the answered ones among `count` requests (4 at a time, within PHASE_BUDGET)."""
    deadline = time.monotonic() + PHASE_BUDGET

    def run(_: int) -> float | None:
        return one_request(port, who) if time.monotonic() < deadline else None

    with ThreadPoolExecutor(4) as pool:
        return [t for t in pool.map(run, range(count)) if t is not None]


def wait_ready(port: int, who: Contestant, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if one_request(port, who) is not None:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{who.name} did not start")


def open_slow(port: int, idle: int, slow: int, host_line: bytes) -> tuple[list[socket.socket], list[socket.socket]]:
    """Connect idle + slow sockets without blocking; the established ones have sent their part."""
    pending: list[tuple[socket.socket, bool]] = []
    for n in range(idle + slow):
        sock = socket.socket()
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
        sock.connect_ex(("127.0.0.1", port))
        pending.append((sock, n >= idle))
    sel = selectors.DefaultSelector()
    for sock, is_slow in pending:
        sel.register(sock, selectors.EVENT_WRITE, is_slow)
    idle_socks: list[socket.socket] = []
    slow_socks: list[socket.socket] = []
    deadline = time.monotonic() + 20
    while len(sel.get_map()) and time.monotonic() < deadline:
        for key, _ in sel.select(0.5):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            sel.unregister(sock)
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                sock.close()
                continue
            with contextlib.suppress(OSError):
                if key.data:
                    sock.send(b"POST /mcp HTTP/1.1\r\n" + host_line + b"Content-Type: application/json\r\n"
                              b"Content-Length: 100000\r\n\r\n{")
                    slow_socks.append(sock)
                else:
                    sock.send(b"POST /mcp HTTP/1.1\r\n" + host_line + b"Content-Type: appl")
                    idle_socks.append(sock)
    for key in list(sel.get_map().values()):  # never established in time
        sel.unregister(key.fileobj)
        key.fileobj.close()  # type: ignore[union-attr]
    sel.close()
    return idle_socks, slow_socks


def dribble(socks: list[socket.socket], stop: threading.Event) -> None:
    """One body byte per slow upload per second, until stopped (bounded by the caller)."""
    while not stop.wait(1.0):
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.send(b" ")


def still_open(socks: list[socket.socket]) -> int:
    """How many of these the server has not closed (a peek that would block means: still open)."""
    alive = 0
    for sock in socks:
        try:
            alive += sock.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


def run_one(key: str, idle: int, slow: int, count: int) -> Result:
    who = CONTESTANTS[key]
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(who.argv(port), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result = Result(who.name, asked=count)
    stop = threading.Event()
    idle_socks: list[socket.socket] = []
    slow_socks: list[socket.socket] = []
    try:
        wait_ready(port, who, proc)
        legit(port, who, 20)  # warm up
        result.base = legit(port, who, count)
        result.base_threads = proc_status(proc.pid)[1]
        idle_socks, slow_socks = open_slow(port, idle, slow, f"Host: 127.0.0.1:{port}\r\n".encode())
        feeder = threading.Thread(target=dribble, args=(slow_socks, stop), daemon=True)
        feeder.start()
        time.sleep(1.0)  # let the server take in what it can
        result.loaded = legit(port, who, count)
        result.rss_mb, result.threads = proc_status(proc.pid)
        result.held = still_open(idle_socks) + still_open(slow_socks)
    finally:
        stop.set()
        for sock in idle_socks + slow_socks:
            sock.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    return result


def ms(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=10_000, help="connections that send half a head")
    parser.add_argument("--slow", type=int, default=500, help="uploads that dribble a body")
    parser.add_argument("--legit", type=int, default=200, help="legitimate requests to time")
    parser.add_argument("--servers", default="mcp,a2a,sdk", help="comma-separated: mcp, a2a, sdk")
    args = parser.parse_args()
    wanted = args.idle + args.slow + 512
    limit = raise_fd_limit(wanted)
    idle = args.idle
    if limit < wanted:
        idle = max(0, limit - args.slow - 512)
        print(f"note: the open-files limit is {limit}; holding {idle} idle connections instead of {args.idle}")
    keys = [k.strip() for k in args.servers.split(",") if k.strip()]
    if "sdk" in keys:
        try:
            import mcp  # noqa: F401
            import uvicorn  # noqa: F401
        except ImportError:
            print("note: mcp/uvicorn are not installed; the SDK contestant is skipped")
            keys.remove("sdk")
    results = [run_one(key, idle, args.slow, args.legit) for key in keys]
    print(f"\n{idle} idle connections (half a head) + {args.slow} slow uploads; {args.legit} legitimate requests "
          "each on a fresh connection")
    print(f"{'server':<12} {'base p50':>9} {'base p99':>9} {'answered':>9} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'max ms':>8} {'p50 x':>6} {'p99 x':>6} {'held':>6} {'RSS MB':>7} {'threads':>8}")
    for r in results:
        p50, p99 = ms(r.loaded, 0.5), ms(r.loaded, 0.99)
        b50, b99 = ms(r.base, 0.5), ms(r.base, 0.99)
        worst = 1000 * max(r.loaded) if r.loaded else float("nan")
        print(f"{r.name:<12} {b50:>9.2f} {b99:>9.2f} {len(r.loaded):>4}/{r.asked:<4} {p50:>8.2f} {p99:>8.2f} "
              f"{worst:>8.1f} {p50 / b50:>6.2f} {p99 / b99:>6.2f} {r.held:>6} {r.rss_mb:>7.1f} "
              f"{r.base_threads:>3}->{r.threads:<4}")
    met = all(len(r.loaded) == r.asked and r.loaded and max(r.loaded) < 0.1 for r in results)
    print("target (all answered within 100 ms):", "met" if met else "NOT met")
    if results and all(r.base for r in results):
        print("median of base p50:", f"{statistics.median(ms(r.base, 0.5) for r in results):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
