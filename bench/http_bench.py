"""Benchmark Streamable HTTP: tools/call round trips per second over keep-alive, ours vs the SDK.

Contestants, started fresh as child processes in the same run:
  ours  `python -m mcp_agent_kit serve examples/metrics_server.py --http 127.0.0.1:PORT`
  sdk   bench/sdk_metrics_server.py's MCPServer (mcp 2.3.0) on uvicorn (json_response=True,
        its cheapest mode)
Each is driven with modern 2026-07-28 tools/call requests (full headers) by 1 and by 8
concurrent keep-alive clients (separate processes), N runs each, median. The output is
requests/second and the ratio ours/sdk. Run: python bench/http_bench.py [--calls 2000] [--runs 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import socket
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
ARGS = {"values": [1.5, 2.5, 3, 4, 5, 6, 7, 8], "metric_type": "mean"}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "calculate_metrics",
}
SDK_RUNNER = """
import sys, uvicorn
sys.path.insert(0, sys.argv[2])
from sdk_metrics_server import server
app = server.streamable_http_app(json_response=True)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start(kind: str, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if kind == "ours":
        example = "examples/metrics_server.py"
        argv = [sys.executable, "-m", "mcp_agent_kit", "serve", example, "--http", f"127.0.0.1:{port}"]
    else:
        argv = [sys.executable, "-c", SDK_RUNNER, str(port), str(ROOT / "bench")]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            one_call(http.client.HTTPConnection("127.0.0.1", port, timeout=5), 0)
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{kind} server did not start")


def one_call(conn: http.client.HTTPConnection, id_: int) -> None:
    body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
            "params": {"_meta": META, "name": "calculate_metrics", "arguments": ARGS}}
    conn.request("POST", "/mcp", json.dumps(body), HEADERS)
    response = conn.getresponse()
    payload = response.read()
    if response.status != 200 or b"4.625" not in payload:
        raise RuntimeError(f"unexpected reply {response.status}: {payload[:200]!r}")


def client(port: int, calls: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for n in range(calls):
        one_call(conn, n)
    conn.close()


def throughput(port: int, clients: int, calls: int) -> float:
    """Round trips per second with `clients` keep-alive connections sharing `calls` requests."""
    share = max(1, calls // clients)
    workers = [multiprocessing.Process(target=client, args=(port, share)) for _ in range(clients)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            raise RuntimeError("a bench client failed")
    return share * clients / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    try:
        import mcp  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        print("mcp and uvicorn are needed for the SDK contestant (pip install mcp==2.3.0 uvicorn)")
        return 1
    results: dict[tuple[str, int], float] = {}
    for kind in ("ours", "sdk"):
        port = free_port()
        proc = start(kind, port)
        try:
            client(port, 200)  # warm up
            for clients in (1, 8):
                samples = [throughput(port, clients, args.calls) for _ in range(args.runs)]
                results[(kind, clients)] = statistics.median(samples)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(f"tools/call over Streamable HTTP keep-alive, {args.calls} calls, median of {args.runs} runs")
    print(f"{'clients':>8} {'ours req/s':>12} {'sdk req/s':>12} {'ours/sdk':>9}")
    for clients in (1, 8):
        ours, sdk = results[("ours", clients)], results[("sdk", clients)]
        print(f"{clients:>8} {ours:>12.0f} {sdk:>12.0f} {ours / sdk:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
