"""One bad backend never takes the gateway down (issue 14, "Gateway"): a hung backend fails its
own calls within its timeout and beyond its in-flight limit at once while the others stay fast;
a backend down at start joins when it comes up (callers hear list_changed); a backend flooding
junk lines costs a bounded amount of log."""

from __future__ import annotations

import json
import logging
import os
import re
import select
import socket
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from mcp_agent_kit.client.loglimit import LineLimiter
from mcp_agent_kit.gateway import ConfigError, Gateway, parse_config
from mcp_agent_kit.transports.http import make_server
from tests.net import wait_until
from tests.stdio_peer import MODERN_META, modern

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(ROOT)}

FAST = textwrap.dedent(
    """
    from mcp_agent_kit import Server

    server = Server("fast")

    @server.tool
    def echo(text: str) -> str:
        "Say it back."
        return text

    server.run()
    """
)
HUNG = textwrap.dedent(
    """
    import threading
    from mcp_agent_kit import Server

    server = Server("hung")

    @server.tool
    def hang() -> str:
        "Never answer."
        threading.Event().wait()
        return "never"

    server.run()
    """
)
LATE = textwrap.dedent(
    """
    import os, sys
    if not os.path.exists(os.environ["LATE_FLAG"]):
        sys.exit("not yet")
    from mcp_agent_kit import Server

    server = Server("late")

    @server.tool
    def late() -> str:
        "Here at last."
        return "here"

    server.run()
    """
)
FLOOD = textwrap.dedent(
    """
    import os, sys
    from mcp_agent_kit import Server

    server = Server("flood")
    STDOUT = os.dup(1)  # the protocol stream itself: Server.run() points fd 1 at stderr

    def write(fd, data):
        while data:
            data = data[os.write(fd, data):]

    @server.tool
    def flood() -> str:
        "Write 100,000 junk lines on stdout and on stderr (and one of a megabyte on each)."
        junk = b"this is junk, not JSON-RPC at all\\n" * 100_000 + b"x" * 1_000_000 + b"\\n"
        write(STDOUT, junk)
        write(2, junk + b"END-OF-FLOOD\\n")
        return "flooded"

    server.run()
    """
)


def script(tmp_path: Path, name: str, source: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return str(path)


def eventually(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def call(gateway: Gateway, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    reply = gateway.server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"_meta": MODERN_META, "name": name, "arguments": arguments or {}}})
    assert reply is not None and "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


class GatewayProcess:
    """`mcp-agent-kit gateway CONFIG --stdio` as a child, its replies collected by id."""

    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_agent_kit", "gateway", str(config), "--stdio"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, **ENV}, cwd=str(ROOT),
        )
        self.replies: dict[Any, tuple[float, dict[str, Any]]] = {}
        self.arrived = threading.Condition()
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            message = json.loads(line)
            with self.arrived:
                self.replies[message.get("id")] = (time.monotonic(), message)
                self.arrived.notify_all()

    def send(self, id_: Any, method: str, **params: Any) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(modern(id_, method, **params)).encode() + b"\n")
        self.proc.stdin.flush()
        return time.monotonic()

    def wait(self, ids: list[Any], timeout: float) -> dict[Any, tuple[float, dict[str, Any]]]:
        """The replies to ids that arrive within timeout (maybe not all)."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while not all(i in self.replies for i in ids) and time.monotonic() < deadline:
                self.arrived.wait(deadline - time.monotonic())
            return {i: self.replies[i] for i in ids if i in self.replies}

    def timed_call(self, id_: Any, name: str, arguments: dict[str, Any], timeout: float = 30.0) -> float:
        sent = self.send(id_, "tools/call", name=name, arguments=arguments)
        got = self.wait([id_], timeout)
        assert id_ in got, f"no reply to {name} within {timeout}s"
        assert got[id_][1]["result"]["content"][0]["text"] == arguments.get("text"), got[id_]
        return got[id_][0] - sent

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def hung_gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {
        "fast": {"command": sys.executable, "args": [script(tmp_path, "fast", FAST)], "env": ENV},
        "slow": {"command": sys.executable, "args": [script(tmp_path, "hung", HUNG)], "env": ENV,
                 "timeout": 3, "maxInFlight": 4},
    }}))
    gateway = GatewayProcess(config)
    try:
        yield gateway
    finally:
        gateway.close()


def test_a_hung_backend_fails_its_own_calls_and_the_others_stay_fast(hung_gateway: GatewayProcess) -> None:
    gw = hung_gateway
    gw.send("list", "tools/list")
    listed = gw.wait(["list"], 60)["list"][1]["result"]["tools"]
    assert {tool["name"] for tool in listed} == {"echo", "hang"}
    usual = statistics.median(gw.timed_call(f"warm{i}", "echo", {"text": f"hi {i}"}) for i in range(7))

    hung = [f"hang{i}" for i in range(64)]
    started = min(gw.send(i, "tools/call", name="hang", arguments={}) for i in hung)
    during = gw.timed_call("during", "echo", {"text": "still here"}, timeout=10.0)
    assert during <= max(2 * usual, 0.2), (during, usual)

    replies = gw.wait(hung, 3 + 10)
    assert len(replies) == 64, f"{64 - len(replies)} calls to the hung backend never ended"
    texts = {i: reply["result"]["content"][0]["text"] for i, (_, reply) in replies.items()}
    assert all(reply["result"]["isError"] for _, reply in replies.values())
    over = [i for i, text in texts.items() if "maxInFlight" in text]
    timed_out = [i for i, text in texts.items() if "did not answer within 3s" in text]
    assert len(over) == 60 and len(timed_out) == 4, texts
    assert all("'slow'" in text for text in texts.values())
    assert max(replies[i][0] for i in over) - started < 1.0  # refused at once, not queued
    assert max(replies[i][0] for i in timed_out) - started < 3 + 2.0  # within the backend's timeout
    assert gw.timed_call("after", "echo", {"text": "fine"}) < 5.0


def test_a_backend_down_at_start_joins_when_it_comes_up(tmp_path: Path) -> None:
    flag = tmp_path / "ready"
    config = {"mcpServers": {
        "fast": {"command": sys.executable, "args": [script(tmp_path, "fast", FAST)], "env": ENV},
        "late": {"command": sys.executable, "args": [script(tmp_path, "late", LATE)],
                 "env": {**ENV, "LATE_FLAG": str(flag)}},
    }}
    gateway = Gateway(parse_config(config), timeout=10.0)
    gateway.start()
    try:
        assert gateway.backends["late"].broken
        assert gateway.server.get_tool("late") is None and gateway.server.get_tool("echo") is not None
        changes: list[str] = []
        gateway.server.on_change(lambda kind, uri: changes.append(kind))
        flag.write_text("go")
        eventually(lambda: gateway.server.get_tool("late") is not None, 30, "the late backend never joined")
        assert "tools" in changes  # the gateway's own clients hear tools/list_changed
        assert call(gateway, "late")["content"][0]["text"] == "here"
        assert call(gateway, "echo", {"text": "x"})["content"][0]["text"] == "x"
    finally:
        gateway.close()


class Bytes(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_flooding_backend_costs_a_bounded_amount_of_log(tmp_path: Path) -> None:
    config = {"mcpServers": {"flood": {"command": sys.executable, "args": [script(tmp_path, "flood", FLOOD)],
                                       "env": ENV}}}
    handler = Bytes()
    logger = logging.getLogger("mcp_agent_kit")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # what `mcp-agent-kit gateway` logs
    gateway = Gateway(parse_config(config), timeout=10.0)
    try:
        gateway.start(follow=False)
        assert call(gateway, "flood")["content"][0]["text"] == "flooded"
        channel = gateway.backends["flood"].client.channel
        eventually(lambda: "END-OF-FLOOD" in channel.stderr_tail(), 60, "stderr was not read to its end")  # type: ignore[attr-defined]
    finally:
        gateway.close()
        logger.removeHandler(handler)
        logger.setLevel(level)
    total = sum(len(message) + 1 for message in handler.messages)
    assert total < 100_000, (total, len(handler.messages))
    assert any("junk" in message and "backend 'flood'" in message for message in handler.messages)
    assert any("suppressed" in message for message in handler.messages)
    assert max(len(message) for message in handler.messages) < 1_200  # each line cut to 1,000 characters


def test_the_limiter_lets_a_burst_through_then_a_rate_then_one_summary() -> None:
    now = [0.0]
    handler = Bytes()
    logger = logging.getLogger("tests.loglimit")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        limiter = LineLimiter(logger, "peer", rate=10, burst=5, max_chars=10, clock=lambda: now[0])
        passed = sum(limiter.line(logging.INFO, "said", "y" * 50) for _ in range(1000))
        assert passed == 5 and limiter.suppressed == 995
        now[0] = 1.0
        assert limiter.line(logging.INFO, "said", "z")
        assert handler.messages[5] == "peer: suppressed 995 lines (more than 10 a second)"
        assert handler.messages[0] == "peer said: " + "y" * 10 + "... (cut, 50 chars)"
        assert handler.messages[-1] == "peer said: z"
    finally:
        logger.removeHandler(handler)


def test_limits_in_the_config() -> None:
    entry = {"command": "x"}
    parsed = parse_config({"mcpServers": {"a": entry, "b": {**entry, "timeout": 2.5, "maxInFlight": 3}}})
    assert (parsed["a"]["timeout"], parsed["a"]["maxInFlight"]) == (60.0, 16)
    assert (parsed["b"]["timeout"], parsed["b"]["maxInFlight"]) == (2.5, 3)
    for bad in ({"timeout": 0}, {"timeout": "5"}, {"maxInFlight": 0}, {"maxInFlight": 2.5}, {"maxInFlight": True}):
        with pytest.raises(ConfigError):
            parse_config({"mcpServers": {"a": {**entry, **bad}}})


def _post(port: int, body: dict[str, Any]) -> socket.socket:
    """Send one modern-era POST on a fresh connection; the reply is read later (or never)."""
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                 b"Mcp-Method: %s\r\nMcp-Name: %s\r\nContent-Length: %d\r\n\r\n%s"
                 % (body["method"].encode(), body["params"]["name"].encode(), len(data), data))
    return sock


def _reply(sock: socket.socket) -> dict[str, Any]:
    raw = b""
    while b"\r\n\r\n" not in raw or len(raw.split(b"\r\n\r\n", 1)[1]) < int(
            re.search(rb"(?i)content-length: *(\d+)", raw.split(b"\r\n\r\n", 1)[0]).group(1)):  # type: ignore[union-attr]
        chunk = sock.recv(65536)
        assert chunk, f"connection closed early: {raw!r}"
        raw += chunk
    reply: dict[str, Any] = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    return reply


def test_calls_waiting_on_a_hung_backend_hold_no_http_request_worker(tmp_path: Path) -> None:
    """Over HTTP, 64 calls waiting on a backend that never answers (its maxInFlight lets them all
    wait) leave the request workers free: a call to another backend answers while they all still
    wait. Before, each waiting call held one of the (here 8) workers, and the other call queued."""
    config = {"mcpServers": {
        "fast": {"command": sys.executable, "args": [script(tmp_path, "fast", FAST)], "env": ENV},
        "slow": {"command": sys.executable, "args": [script(tmp_path, "hung", HUNG)], "env": ENV,
                 "timeout": 20, "maxInFlight": 64},
    }}
    gateway = Gateway(parse_config(config), timeout=10.0)
    gateway.start(follow=False)
    server = make_server(gateway.server.dispatcher, "127.0.0.1", 0, max_workers=8)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    hung: list[socket.socket] = []
    try:
        meta = {"_meta": MODERN_META}
        hung = [_post(port, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {**meta, "name": "hang", "arguments": {}}}) for i in range(64)]
        wait_until(lambda: server.streams == 64, 10)  # all read and running (old code: 8 run, 56 queue)
        fast = _post(port, {"jsonrpc": "2.0", "id": "fast", "method": "tools/call",
                            "params": {**meta, "name": "echo", "arguments": {"text": "still here"}}})
        fast.settimeout(10)  # well inside the hung backend's 20 s timeout
        with fast:
            reply = _reply(fast)
        assert reply["result"]["content"][0]["text"] == "still here", reply
        # none of the hung calls is on a request worker (the fast call's worker may still be finishing up after
        # its reply was written: wait for it), and every hung call still waits (no reply on any of their sockets)
        assert wait_until(lambda: server.busy_workers == 0, 10), server.busy_workers
        assert not any(select.select(hung, [], [], 0)[0])
    finally:
        for sock in hung:
            sock.close()
        server.shutdown()
        server.server_close()
        gateway.close()
