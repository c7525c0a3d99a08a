"""The 2024-11-05 HTTP+SSE fallback and legacy session expiry, over real sockets: the official
SDK 1.x `FastMCP(...).run(transport="sse")` as the oracle, and small fake endpoints for a
cross-origin endpoint event and for a session that expires once."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from mcp_agent_kit.client import Client, PeerError, forget_verdicts
from mcp_agent_kit.client.http import HttpChannel
from tests.net import free_port, wait_listening

SSE_ORACLE = textwrap.dedent(
    """
    import sys
    from pydantic import BaseModel
    from mcp.server.fastmcp import Context, FastMCP

    app = FastMCP("sse-legacy", host="127.0.0.1", port=int(sys.argv[1]), log_level="WARNING")

    class Name(BaseModel):
        name: str

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("your name?", Name)
        return f"hello {answer.data.name}"

    @app.tool()
    async def slow(ctx: Context) -> str:
        for step in range(2):
            await ctx.report_progress(step + 1, 2)
        return "done"

    app.run(transport="sse")
    """
)


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    forget_verdicts()


@pytest.fixture(scope="module")
def sse_url(tmp_path_factory: pytest.TempPathFactory, legacy_python: str) -> Iterator[str]:
    script = tmp_path_factory.mktemp("sse") / "sse_oracle.py"
    script.write_text(SSE_ORACLE)
    port = free_port()
    proc = subprocess.Popen([legacy_python, str(script), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        proc.terminate()
        proc.wait(10)


def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    assert params["message"] == "your name?"
    return {"action": "accept", "content": {"name": "ada"}}


def test_official_v1_sse_server_is_legacy_2024_11_05(sse_url: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    with Client.http(sse_url, elicitation=_elicit) as client:
        assert (client.era, client.verdict and client.verdict.version) == ("legacy", "2024-11-05")
        channel = client.channel
        assert isinstance(channel, HttpChannel) and channel.sse is not None
        assert str(channel.sse.endpoint).startswith(sse_url.rsplit("/", 1)[0] + "/messages/?session_id=")
        assert {t["name"] for t in client.list_tools()} == {"add", "greet", "slow"}
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
        assert client.call_tool("greet", {})["content"][0]["text"] == "hello ada"  # a request on the stream
        assert client.call_tool("slow", {}, progress=lambda *p: progress.append(p))["content"][0]["text"] == "done"
    assert progress == [(1.0, 2.0, None), (2.0, 2.0, None)]


def test_concurrent_calls_share_the_stream(sse_url: str) -> None:
    with Client.http(sse_url) as client:
        results: dict[int, str] = {}

        def call(n: int) -> None:
            results[n] = client.call_tool("add", {"a": n, "b": n})["content"][0]["text"]

        threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert results == {n: str(2 * n) for n in range(6)}


def test_a_second_client_for_the_origin_finds_the_stream_again(sse_url: str) -> None:
    with Client.http(sse_url) as first:
        assert first.era == "legacy"
    with Client.http(sse_url) as second:  # the cached legacy verdict: initialize, then the stream
        assert (second.era, second.verdict and second.verdict.version) == ("legacy", "2024-11-05")
        assert second.call_tool("add", {"a": 1, "b": 1})["content"][0]["text"] == "2"


def test_probe_cli_with_the_sse_url(sse_url: str) -> None:
    run = subprocess.run([sys.executable, "-m", "mcp_agent_kit", "probe", sse_url], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["era"], report["version"]) == ("legacy", "2024-11-05")
    assert sorted(report["tools"]) == ["add", "greet", "slow"]


# ---- fake endpoints ---------------------------------------------------------------------------------
class _Base(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        return None

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _message(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        return message


class _CrossOrigin(_Base):
    """Refuses both POSTs like a 2024-11-05 server, then names an endpoint on another origin."""

    def do_POST(self) -> None:
        self.hits.append(self._message()["method"])
        self._send(405, b"Method Not Allowed", {"Content-Type": "text/plain"})

    def do_GET(self) -> None:
        self.hits.append("GET " + self.headers.get("Accept", ""))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"event: endpoint\r\ndata: http://attacker.invalid:9/messages/?session_id=1\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


class _Expiring(_Base):
    """A stateless-looking legacy Streamable HTTP server whose first session expires on first use."""

    sessions: ClassVar[list[str]] = []
    always_expire = False

    def do_POST(self) -> None:
        message = self._message()
        session = self.headers.get("Mcp-Session-Id")
        method = message.get("method", "reply")
        self.hits.append(f"{method} {session}")
        id_ = message.get("id")
        if method == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": id_, "error": error}).encode())
        elif method == "initialize":
            self.sessions.append(f"s{len(self.sessions) + 1}")
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "x"}}
            body = json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}).encode()
            self._send(200, body, {"Mcp-Session-Id": self.sessions[-1]})
        elif id_ is None:
            self._send(202)
        elif session != self.sessions[-1] or session == "s1" or self.always_expire:
            error = {"code": -32600, "message": "Session not found"}  # the 1.x SDK's 404 body
            self._send(404, json.dumps({"jsonrpc": "2.0", "id": "server-error", "error": error}).encode())
        else:
            result = {"content": [{"type": "text", "text": f"ok in {session}"}]}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}).encode())


def _start(handler: type[_Base], **attrs: Any) -> tuple[ThreadingHTTPServer, type[_Base]]:
    cls = type("Handler", (handler,), {"hits": [], "sessions": [], **attrs})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), cls)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return httpd, cls


def test_a_cross_origin_endpoint_is_refused() -> None:
    httpd, handler = _start(_CrossOrigin)
    try:
        client = Client.http(f"http://127.0.0.1:{httpd.server_address[1]}/sse")
        verdict = client.probe()
        client.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert verdict.era == "unavailable"
    assert "cross-origin endpoint" in str(verdict.reason) and "attacker.invalid" in str(verdict.reason)
    assert handler.hits == ["server/discover", "initialize", "GET text/event-stream"]


def test_an_expired_session_is_initialized_again_once() -> None:
    httpd, handler = _start(_Expiring)
    try:
        with Client.http(f"http://127.0.0.1:{httpd.server_address[1]}/mcp") as client:
            assert client.era == "legacy"
            result = client.call_tool("echo", {})
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert result["content"][0]["text"] == "ok in s2"
    assert handler.hits == [
        "server/discover None",
        "initialize None",
        "notifications/initialized s1",
        "tools/call s1",  # 404: the session expired
        "initialize None",
        "notifications/initialized s2",
        "tools/call s2",
    ]


def test_a_session_that_keeps_expiring_is_an_error_not_a_loop() -> None:
    httpd, handler = _start(_Expiring, always_expire=True)
    try:
        client = Client.http(f"http://127.0.0.1:{httpd.server_address[1]}/mcp")
        with client, pytest.raises(PeerError) as caught:
            client.call_tool("echo", {})
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert caught.value.kind == "expired"
    assert [hit for hit in handler.hits if hit.startswith(("initialize", "tools/call"))] == [
        "initialize None",
        "tools/call s1",
        "initialize None",
        "tools/call s2",
    ]


class _ClosingStream(_Base):
    """A 2024-11-05 server that answers initialize on the stream, then ends the stream on the first call."""

    outbox: ClassVar[queue.Queue[bytes | None]]

    def do_POST(self) -> None:
        message = self._message()
        self.hits.append(f"POST {self.path} {message.get('method')}")
        if not self.path.startswith("/old/messages"):
            self._send(405, b"Method Not Allowed", {"Content-Type": "text/plain"})
            return
        self._send(202, b"Accepted", {"Content-Type": "text/plain"})
        if message.get("method") == "initialize":
            result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}}, "serverInfo": {"name": "x"}}
            self.outbox.put(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())
        elif message.get("method") == "tools/call":
            self.outbox.put(None)

    def do_GET(self) -> None:
        self.hits.append(f"GET {self.path}")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: messages?s=1\n\n")
        self.wfile.flush()
        while (data := self.outbox.get(timeout=10)) is not None:
            self.wfile.write(b"event: message\ndata: " + data + b"\n\n")
            self.wfile.flush()
        self.close_connection = True


def test_a_closed_stream_fails_the_call_and_later_ones() -> None:
    httpd, handler = _start(_ClosingStream, outbox=queue.Queue())
    try:
        client = Client.http(f"http://127.0.0.1:{httpd.server_address[1]}/old/sse")
        with client:
            assert (client.era, client.verdict and client.verdict.version) == ("legacy", "2024-11-05")
            for _ in range(2):
                with pytest.raises(PeerError) as caught:
                    client.call_tool("echo", {})
                assert caught.value.kind == "exited"
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert handler.hits == [
        "POST /old/sse server/discover",
        "POST /old/sse initialize",
        "GET /old/sse",
        "POST /old/messages?s=1 initialize",
        "POST /old/messages?s=1 notifications/initialized",
        "POST /old/messages?s=1 tools/call",
    ]
