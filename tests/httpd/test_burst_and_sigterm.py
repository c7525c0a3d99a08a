"""Acceptance edges of the shared engine: 320 clients at once on each server, SIGTERM mid-call.

320 threads connect at the same moment (a barrier) and each makes one request with bounded
timeouts: no resets, no timeouts, on the MCP and on the A2A server. A SIGTERM while a tool call
runs lets it finish (the client gets its result) and the process exits 0. Readiness is a line
the child writes, never a sleep.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.loader import load_target
from tests.a2a.conftest import METRICS, call, user_message
from tests.a2a.conftest import start as start_a2a
from tests.http.conftest import META, MODERN
from tests.http.conftest import start as start_mcp
from tests.net import until

CLIENTS = 320
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"}


def burst(port: int, path: str, body: bytes, headers: dict[str, str]) -> Counter[str]:
    barrier = threading.Barrier(CLIENTS)
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            barrier.wait(30)
            conn.request("POST", path, body, headers)
            response = conn.getresponse()
            response.read()
            outcome = f"status {response.status}"
        except (ConnectionResetError, BrokenPipeError, ConnectionRefusedError) as exc:
            outcome = f"reset {type(exc).__name__}"
        except TimeoutError:
            outcome = "timeout"
        except Exception as exc:  # every failure is counted, none is hidden
            outcome = f"error {type(exc).__name__}"
        finally:
            conn.close()
        with lock:
            outcomes[outcome] += 1

    threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return outcomes


def test_320_clients_at_once_on_the_mcp_server() -> None:
    running = start_mcp(load_target(METRICS).dispatcher)
    try:
        outcomes = burst(running.port, "/mcp", json.dumps(DISCOVER).encode(), MCP_HEADERS)
    finally:
        running.server.shutdown()
        running.server.server_close()
    assert outcomes == Counter({"status 200": CLIENTS}), outcomes


def test_320_clients_at_once_on_the_a2a_server() -> None:
    server = start_a2a(load_target(METRICS))
    try:
        message = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                   "params": {"message": user_message(call([1.0, 2.0]))}}
        headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        outcomes = burst(server.server_address[1], "/a2a", json.dumps(message).encode(), headers)
    finally:
        server.shutdown()
        server.server_close()
    assert outcomes == Counter({"status 200": CLIENTS}), outcomes


SLOW_SERVER = '''
import sys
from mcp_agent_kit import Server

server = Server("sigterm", "1.0.0")


@server.tool
def slow() -> str:
    """Runs until a line comes on stdin: the work in flight when SIGTERM arrives."""
    print("call started", file=sys.stderr, flush=True)
    sys.stdin.readline()
    return "finished"
'''


def lines_of(stream: Any) -> queue.Queue[str]:
    """The stream's lines, read on a daemon thread ("" at its end): a test waits for one with a bound."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    return lines


def wait_line(lines: queue.Queue[str], wanted: str, why: object, seconds: float = 60.0) -> str:
    """The first line containing `wanted` (a bounded wait: a server that never gets there fails the test, saying
    what the request got instead of hanging)."""
    seen: list[str] = []
    deadline = time.monotonic() + seconds
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no {wanted!r} within {seconds}s; stderr {seen}; request {why}") from None
        if wanted in line:
            return line
        assert line, f"the server exited before {wanted!r}; stderr {seen}; request {why}"
        seen.append(line)


def finish_after_sigterm(proc: subprocess.Popen[str], port: int) -> None:
    """SIGTERM the server while its tool runs; once it stopped accepting (the SIGTERM took effect),
    let the tool finish."""
    proc.send_signal(signal.SIGTERM)
    until(lambda: not accepts(port), "the server to stop accepting after SIGTERM", seconds=15)
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_finishes_the_call_in_flight(tmp_path: Path) -> None:
    (tmp_path / "slow_server.py").write_text(SLOW_SERVER)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_agent_kit", "serve", f"{tmp_path / 'slow_server.py'}:server",
         "--http", "127.0.0.1:0"],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
    )
    try:
        assert proc.stderr is not None
        lines = lines_of(proc.stderr)
        match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", wait_line(lines, "http://", "none yet"))
        assert match
        port = int(match.group(1))
        result: dict[str, Any] = {}

        def call_slow() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "slow", "arguments": {}, "_meta": META}}
            conn.request("POST", "/mcp", json.dumps(body),
                         {**MCP_HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": "slow"})
            response = conn.getresponse()
            result["status"], result["body"] = response.status, response.read()
            conn.close()

        caller = threading.Thread(target=call_slow, daemon=True)
        caller.start()
        wait_line(lines, "call started", result)  # readiness: the tool is running
        finish_after_sigterm(proc, port)
        caller.join(20)
        assert result.get("status") == 200, result
        assert json.loads(result["body"])["result"]["content"][0]["text"] == "finished"
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a2a_sigterm_finishes_the_task_in_flight(tmp_path: Path) -> None:
    (tmp_path / "slow_server.py").write_text(SLOW_SERVER)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(  # port 0, read back: a port picked beforehand could be taken meanwhile
        [sys.executable, "-m", "mcp_agent_kit", "a2a", f"{tmp_path / 'slow_server.py'}:server",
         "--http", "127.0.0.1:0"],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
    )
    try:
        assert proc.stderr is not None
        lines = lines_of(proc.stderr)
        match = re.search(r"http://127\.0\.0\.1:(\d+)", wait_line(lines, "http://", "none yet"))
        assert match
        port = int(match.group(1))
        result: dict[str, Any] = {}

        def send_slow() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            message = user_message({"data": {"skill": "slow", "arguments": {}}})
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
            conn.request("POST", "/a2a", json.dumps(body), {"Content-Type": "application/json", "A2A-Version": "1.0"})
            response = conn.getresponse()
            result["status"], result["body"] = response.status, response.read()
            conn.close()

        sender = threading.Thread(target=send_slow, daemon=True)
        sender.start()
        wait_line(lines, "call started", result)  # readiness: the tool is running
        finish_after_sigterm(proc, port)
        sender.join(20)
        assert result.get("status") == 200, result
        task = json.loads(result["body"])["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc for the server's CPU time")
@pytest.mark.parametrize("command", ["serve", "a2a"])
def test_out_of_descriptors_the_server_neither_spins_nor_stops_serving(command: str) -> None:
    import resource

    from tests.net import free_port, wait_listening

    port = free_port()
    root = Path(__file__).resolve().parents[2]

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_agent_kit", command, "examples/metrics_server.py:server",
         "--http", f"127.0.0.1:{port}"],
        stderr=subprocess.DEVNULL, cwd=root, preexec_fn=few_descriptors,
    )
    idle: list[socket.socket] = []
    try:
        wait_listening(port, proc)
        for _ in range(300):  # far more than the server may hold: the rest wait in the backlog
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half a head, then nothing
            idle.append(sock)
        before = _cpu_seconds(proc.pid)
        started = time.monotonic()
        deadline = started + 1.0
        while time.monotonic() < deadline:  # a full second with every descriptor taken
            assert proc.poll() is None
            time.sleep(0.1)
        spent = _cpu_seconds(proc.pid) - before
        assert spent < 0.5, f"the server burned {spent:.2f} s of CPU in 1 s while out of descriptors"
        # Clients leave: the server must take the waiting ones and serve again. 50 stay, fewer than the
        # 64 connections 128 descriptors leave it room for, so this request needs no head to time out.
        for sock in idle[:250]:
            sock.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        if command == "serve":
            body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
            conn.request("POST", "/mcp", json.dumps(body), {**MCP_HEADERS, "Mcp-Method": "server/discover"})
        else:
            conn.request("GET", "/.well-known/agent-card.json")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        for sock in idle:
            sock.close()
        proc.terminate()
        proc.wait(15)
