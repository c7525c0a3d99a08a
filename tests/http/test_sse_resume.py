"""Resumable SSE for 2025-11-25 sessions (resumability and SEP-1699 polling): priming events,
Last-Event-ID replay on the right stream only, disconnection that is not cancellation, bounds,
and the official mcp 2.3.0 client reconnecting on its own."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import pytest

from mcp_agent_kit import Context, Server
from mcp_agent_kit.transports.sse_replay import EventLog, Stream

VERSION = "2025-11-25"


def make_server(gate: threading.Event, finished: list[str]) -> Server:
    server = Server("resume-test", "1.0.0")

    @server.tool
    def poll(ctx: Context) -> str:
        """Report, close the stream, report again after the gate opens, answer."""
        ctx.progress(1, 3, "before")
        closed = ctx.close_stream()
        gate.wait(10)
        ctx.progress(2, 3, "after")
        finished.append(f"closed={closed} cancelled={ctx.cancelled}")
        return "polled"

    @server.tool
    def wait_for_gate(ctx: Context) -> str:
        """Answer once the gate opens (the client may have gone meanwhile)."""
        gate.wait(10)
        finished.append(f"cancelled={ctx.cancelled}")
        return "waited"

    @server.tool
    def quick() -> str:
        """Answer at once."""
        return "quick"

    return server


class Peer:
    """A raw HTTP client of one legacy session."""

    def __init__(self, running: Any, version: str = VERSION) -> None:
        self.running = running
        self.version = version
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        status, headers, payload = running.post(init, {"MCP-Protocol-Version": version})
        assert status == 200 and json.loads(payload)["result"]["protocolVersion"] == version
        self.session = headers["mcp-session-id"]
        assert running.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers())[0] == 202

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": self.version, **extra}

    def call(self, name: str, id_: int, progress: bool = False) -> tuple[int, dict[str, str], bytes]:
        params: dict[str, Any] = {"name": name, "arguments": {}}
        if progress:
            params["_meta"] = {"progressToken": f"p{id_}"}
        message = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}
        return self.running.post(message, self.headers())

    def resume(self, last_event_id: str) -> tuple[int, dict[str, str], bytes]:
        headers = self.headers(**{"Accept": "text/event-stream", "Last-Event-ID": last_event_id})
        return self.running.request("GET", headers)


def events(payload: bytes) -> list[dict[str, str]]:
    """SSE events as {field: value} (data joined), in order."""
    found = []
    for block in payload.decode().split("\n\n"):
        if not block.strip():
            continue
        event: dict[str, str] = {}
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            event[field] = (event.get(field, "") + value.removeprefix(" ")) if field == "data" else value.strip()
        found.append(event)
    return found


def test_tool_call_streams_open_with_a_priming_event(serve: Any) -> None:
    running = serve(make_server(threading.Event(), []).dispatcher)
    peer = Peer(running)
    status, headers, payload = peer.call("quick", 1)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    first, last = events(payload)
    assert first["id"].endswith("-0") and first["retry"] == "500" and first["data"] == ""
    stream = first["id"].rsplit("-", 1)[0]
    assert last["id"] == f"{stream}-1" and json.loads(last["data"])["result"]["content"][0]["text"] == "quick"
    # Other requests keep their JSON replies.
    status, headers, _ = running.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, peer.headers())
    assert status == 200 and headers["content-type"] == "application/json"


def test_closed_stream_resumes_with_last_event_id_and_the_call_goes_on(serve: Any) -> None:
    gate, finished = threading.Event(), []
    running = serve(make_server(gate, finished).dispatcher)
    peer = Peer(running)
    status, _, payload = peer.call("poll", 7, progress=True)  # returns when the server closes the stream
    priming, before = events(payload)
    assert json.loads(before["data"])["params"]["message"] == "before"
    gate.set()
    status, headers, payload = peer.resume(before["id"])
    assert status == 200 and headers["content-type"] == "text/event-stream"
    after, result = events(payload)
    assert json.loads(after["data"])["params"]["message"] == "after"
    assert json.loads(result["data"])["result"]["content"][0]["text"] == "polled"
    stream = priming["id"].rsplit("-", 1)[0]
    assert [priming["id"], before["id"], after["id"], result["id"]] == [f"{stream}-{n}" for n in range(4)]
    assert finished == ["closed=True cancelled=False"]
    # The whole stream can be fetched again from its start while it is kept.
    replay = [e["id"] for e in events(peer.resume(priming["id"])[2])]
    assert replay == [before["id"], after["id"], result["id"]]


def test_a_client_that_drops_the_connection_does_not_cancel_the_call(serve: Any) -> None:
    gate, finished = threading.Event(), []
    running = serve(make_server(gate, finished).dispatcher)
    peer = Peer(running)
    sock = socket.create_connection((running.host, running.port), timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "wait_for_gate"}})
    head = "".join(f"{k}: {v}\r\n" for k, v in peer.headers(**{
        "Host": f"{running.host}:{running.port}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "Content-Length": str(len(body))}).items())
    sock.sendall(f"POST /mcp HTTP/1.1\r\n{head}\r\n{body}".encode())
    received = b""
    while b"\n\n" not in received.partition(b"\r\n\r\n")[2]:
        received += sock.recv(4096)
    priming = events(received.partition(b"\r\n\r\n")[2])[0]
    sock.close()  # gone without a word (the server learns of it only when it next writes)
    gate.set()
    status, _, payload = peer.resume(priming["id"])
    assert status == 200
    (result,) = events(payload)
    assert json.loads(result["data"])["result"]["content"][0]["text"] == "waited"
    assert finished == ["cancelled=False"]


def test_replay_never_crosses_streams_or_sessions(serve: Any) -> None:
    running = serve(make_server(threading.Event(), []).dispatcher)
    peer, other = Peer(running), Peer(running)
    first = events(peer.call("quick", 1)[2])
    second = events(peer.call("quick", 2)[2])
    assert first[0]["id"] != second[0]["id"]
    (replayed,) = events(peer.resume(first[0]["id"])[2])
    assert json.loads(replayed["data"])["id"] == 1
    assert other.resume(second[0]["id"].replace("2-", "9-"))[0] == 404  # no such stream in that session
    for bad in ("nonsense", "", f"{first[0]['id'].rsplit('-', 1)[0]}-99"):
        status, _, payload = peer.resume(bad)
        assert status == 404 and json.loads(payload)["error"]["code"] == -32600


def test_older_sessions_and_the_modern_era_are_not_resumable(serve: Any) -> None:
    gate, finished = threading.Event(), []
    gate.set()
    running = serve(make_server(gate, finished).dispatcher)
    old = Peer(running, "2025-06-18")
    status, _, payload = old.call("poll", 3)
    assert status == 200 and "id:" not in payload.decode()
    assert finished == ["closed=False cancelled=False"]
    status, _ = running.modern("tools/call", {"name": "poll", "arguments": {}})
    assert status == 200 and finished[-1] == "closed=False cancelled=False"


def test_event_log_stays_within_its_bounds() -> None:
    log = EventLog(max_streams=2, max_bytes=400)
    done, running_stream = log.open(), log.open()
    done.emit(b"data: x\n\n", last=True)
    running_stream.emit(b"data: y\n\n")
    third = log.open()  # a third stream: the finished one is forgotten first
    assert log.find(f"{done.id}-0") is None and log.find(f"{running_stream.id}-1") is not None
    for _ in range(40):  # 40 events of ~20 bytes in a 400-byte log: the oldest go
        third.emit(b"data: z\n\n")
    found = log.find(f"{third.id}-1")
    assert found is not None and third.dropped > 0
    stream, number = found
    assert not stream.resume(number, _Sink())  # that event is gone: the client must start over
    assert stream.resume(stream.dropped + len(stream.frames), _Sink())
    assert log.find("no-number") is None and log.find("x") is None


class _Sink:
    def write_raw(self, frame: bytes) -> None:
        pass

    def end(self) -> None:
        pass


# ---- the official client reconnects by itself ---------------------------------------------------------
def test_official_client_reconnects_after_the_server_closes_the_stream(serve: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pinned import require

    Client = require("mcp", "mcp==2.3.0 (the interop peer)").Client

    gate, finished = threading.Event(), []
    running = serve(make_server(gate, finished).dispatcher)
    resume = Stream.resume

    def resumed(stream: Stream, after: int, sink: Any) -> bool:  # the client is back: the call goes on
        taken = resume(stream, after, sink)
        gate.set()
        return taken

    monkeypatch.setattr(Stream, "resume", resumed)

    async def scenario() -> str:
        async with Client(running.url, mode="legacy") as client:
            result = await client.call_tool("poll", {})
            return str(result.content[0].text)  # type: ignore[union-attr]

    assert asyncio.run(asyncio.wait_for(scenario(), 30)) == "polled"
    assert finished == ["closed=True cancelled=False"]


def test_finished_streams_are_forgotten_after_a_while() -> None:
    now = [1000.0]
    log = EventLog(keep_finished_s=60.0, clock=lambda: now[0])
    stream = log.open()
    stream.emit(b"data: x\n\n", last=True)
    now[0] += 60.0
    assert log.find(f"{stream.id}-0") is not None
    now[0] += 0.5
    assert log.find(f"{stream.id}-0") is None


def test_a_stream_that_ends_without_a_reply_records_no_broken_event() -> None:
    log = EventLog()
    stream = log.open()
    stream.emit(b"event: message\ndata: {}\n\n")
    stream.emit(b"", last=True)  # a cancelled request: no reply to send
    assert stream.done and stream.frames == [f"id: {stream.id}-1\n".encode() + b"event: message\ndata: {}\n\n"]
