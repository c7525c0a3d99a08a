"""The probe and Client over Streamable HTTP: the official SDK's HTTP servers on uvicorn (2.x →
modern, 1.x → legacy, in SSE and JSON response modes), our own transport, and small fake
endpoints for the ambiguous and auth cases."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mcp_agent_kit.client import Client, forget_verdicts
from mcp_agent_kit.client.http import HttpChannel
from tests.net import free_port, wait_listening

PY = sys.executable

HTTP_ORACLE = textwrap.dedent(
    """
    import sys
    import uvicorn
    from typing import Annotated
    from pydantic import BaseModel

    port, mode = int(sys.argv[1]), sys.argv[2]

    class Name(BaseModel):
        name: str

    try:
        from mcp.server.mcpserver import MCPServer, Context, Elicit, Resolve
    except ImportError:
        from mcp.server.fastmcp import FastMCP, Context
        app = FastMCP("http-legacy", json_response=mode == "json")

        @app.tool()
        async def greet(ctx: Context) -> str:
            answer = await ctx.elicit("your name?", Name)
            return f"hello {answer.data.name}"
    else:
        app = MCPServer("http-modern")

        def ask_name() -> Elicit[Name]:
            return Elicit("your name?", Name)

        @app.tool()
        def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
            return f"hello {who.name}"

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool()
    async def slow(ctx: Context) -> str:
        for step in range(3):
            await ctx.report_progress(step + 1, 3, f"step {step + 1}")
        return "done"

    try:
        asgi = app.streamable_http_app(json_response=mode == "json")
    except TypeError:
        asgi = app.streamable_http_app()
    uvicorn.run(asgi, host="127.0.0.1", port=port, log_level="warning")
    """
)


@pytest.fixture(scope="module")
def oracle_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("http") / "http_oracle.py"
    path.write_text(HTTP_ORACLE)
    return path


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    forget_verdicts()


def _serve(python: str, script: Path, mode: str) -> Iterator[str]:
    """Run an oracle on a free port; the URL carries the mode as a query (ignored by servers)."""
    port = free_port()
    proc = subprocess.Popen([python, str(script), str(port), mode], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp?mode={mode}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module", params=["sse", "json"])
def modern_url(request: pytest.FixtureRequest, oracle_script: Path) -> Iterator[str]:
    yield from _serve(PY, oracle_script, request.param)


@pytest.fixture(scope="module", params=["sse", "json"])
def legacy_url(request: pytest.FixtureRequest, oracle_script: Path, legacy_python: str) -> Iterator[str]:
    yield from _serve(legacy_python, oracle_script, request.param)


def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    assert params["message"] == "your name?"
    return {"action": "accept", "content": {"name": "ada"}}


def test_official_v2_http_server_is_modern(modern_url: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    with Client.http(modern_url, elicitation=_elicit) as client:
        assert client.era == "modern"
        assert {t["name"] for t in client.list_tools()} == {"add", "greet", "slow"}
        assert client.call_tool("add", {"a": 2, "b": 3})["structuredContent"] == {"result": 5}
        assert client.call_tool("greet", {})["content"][0]["text"] == "hello ada"  # an MRTR round
        assert client.call_tool("slow", {}, progress=lambda *p: progress.append(p))["content"][0]["text"] == "done"
    if modern_url.endswith("mode=sse"):  # a JSON response cannot carry progress notifications
        assert progress == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]
    else:
        assert progress == []


def test_official_v1_http_server_is_legacy_with_a_session(legacy_url: str) -> None:
    with Client.http(legacy_url, elicitation=_elicit) as client:
        assert client.era == "legacy"
        channel = client.channel
        assert isinstance(channel, HttpChannel)
        assert channel.session_id
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"


def test_legacy_server_requests_over_sse_use_the_same_callbacks(oracle_script: Path, legacy_python: str) -> None:
    for url in _serve(legacy_python, oracle_script, "sse"):
        with Client.http(url, elicitation=_elicit) as client:
            assert client.era == "legacy"
            assert client.call_tool("greet", {})["content"][0]["text"] == "hello ada"


def test_our_http_transport_is_modern_and_legacy_capable(peer_scripts: dict[str, str]) -> None:
    sys.path.insert(0, str(Path(peer_scripts["metrics"]).parent))
    try:
        from metrics_server import server  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    from mcp_agent_kit.transports.http import make_server

    httpd = make_server(server.dispatcher, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    try:
        with Client.http(url) as client:
            assert client.era == "modern"
            result = client.call_tool("calculate_metrics", {"values": [1, 2, 3], "metric_type": "max"})
            assert result["structuredContent"]["value"] == 3
            assert [r["uri"] for r in client.list_resources()] == ["metrics://catalog"]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_probe_cli_with_a_url(modern_url: str) -> None:
    run = subprocess.run([PY, "-m", "mcp_agent_kit", "probe", modern_url], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["era"] == "modern" and sorted(report["tools"]) == ["add", "greet", "slow"]


# ---- fake endpoints -----------------------------------------------------------------------------
class _Fake(BaseHTTPRequestHandler):
    status = 500
    body = b"oops"
    content_type = "text/plain"
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:  # the 2024-11-05 HTTP+SSE fallback after 400/404/405 on both POSTs
        type(self).hits.append("GET")
        self._answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length))
        type(self).hits.append(message["method"])
        self._answer()

    def _answer(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        if self.status == 401:
            self.send_header("WWW-Authenticate", 'Bearer resource_metadata="x"')
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        return None


def _fake(status: int, body: bytes = b"", content_type: str = "text/plain") -> tuple[ThreadingHTTPServer, type[_Fake]]:
    handler = type("Handler", (_Fake,), {"status": status, "body": body, "content_type": content_type, "hits": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return httpd, handler


@pytest.mark.parametrize(
    ("status", "allow", "expect_reason", "methods"),
    [
        (500, False, "http-5xx", ["server/discover"]),
        (500, True, "initialize: http-5xx", ["server/discover", "initialize"]),
        (401, True, "authorization required", ["server/discover"]),
        (403, False, "authorization required", ["server/discover"]),
        (404, False, "GET (2024-11-05 HTTP+SSE): http-4xx", ["server/discover", "initialize", "GET"]),
        (415, False, "initialize: http-4xx", ["server/discover", "initialize"]),
    ],
)
def test_fake_http_peers(status: int, allow: bool, expect_reason: str, methods: list[str]) -> None:
    httpd, handler = _fake(status, b"nope")
    try:
        client = Client.http(f"http://127.0.0.1:{httpd.server_address[1]}/mcp", allow_legacy=allow)
        verdict = client.probe()
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert verdict.era == "unavailable"
    assert expect_reason in str(verdict.reason)
    assert verdict.auth == (status in (401, 403))
    assert handler.hits == methods


def test_unreachable_url_is_unavailable_even_when_allowlisted() -> None:
    client = Client.http(f"http://127.0.0.1:{free_port()}/mcp", allow_legacy=True)
    verdict = client.probe()
    assert verdict.era == "unavailable" and "unreachable" in str(verdict.reason)


def test_verdict_is_cached_per_origin(modern_url: str) -> None:
    with Client.http(modern_url) as first:
        assert first.era == "modern"
    other_path = modern_url.split("?")[0]
    second = Client.http(other_path)
    channel = second.channel
    calls: list[str] = []
    original = channel.exchange

    def spy(message: dict[str, Any], timeout: float, headers: dict[str, str] | None = None) -> Any:
        calls.append(message["method"])
        return original(message, timeout, headers)

    channel.exchange = spy  # type: ignore[method-assign]
    second.connect()
    assert calls == []  # no second server/discover for the same origin
    second.list_tools()
    assert calls == ["tools/list"]


def test_concurrent_legacy_calls_each_get_their_own_answerer(oracle_script: Path, legacy_python: str) -> None:
    """Over Streamable HTTP a server request arrives on its call's own stream: two calls in flight
    at once, each with its own answerer (a gateway relaying two callers), never get crossed."""
    from concurrent.futures import ThreadPoolExecutor

    from mcp_agent_kit.client.inputs import InputAnswerer

    names = [f"caller{i}" for i in range(4)]
    together = threading.Barrier(len(names))

    def answerer(name: str) -> InputAnswerer:
        def answer(params: dict[str, Any]) -> dict[str, Any]:
            together.wait(20)  # every call has its question in flight before any is answered
            return {"action": "accept", "content": {"name": name}}

        return InputAnswerer(elicitation=answer)

    for url in _serve(legacy_python, oracle_script, "sse"):
        with Client.http(url, elicitation=_elicit) as client:
            assert client.era == "legacy"
            with ThreadPoolExecutor(4) as pool:
                texts = list(pool.map(lambda n: client.call_tool("greet", {}, inputs=answerer(n)), names))
            assert [t["content"][0]["text"] for t in texts] == [f"hello {n}" for n in names]


POLLING_ORACLE = textwrap.dedent(
    """
    import itertools
    import sys
    import uvicorn
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.server.streamable_http import EventStore

    class Memory(EventStore):
        def __init__(self):
            self.events, self.ids = [], itertools.count(1)

        async def store_event(self, stream_id, message):
            event_id = str(next(self.ids))
            self.events.append((event_id, stream_id, message))
            return event_id

        async def replay_events_after(self, last_event_id, send_callback):
            stream = next((s for e, s, _ in self.events if e == last_event_id), None)
            if stream is None:
                return None
            after = False
            for event_id, stream_id, message in list(self.events):
                if after and stream_id == stream and message is not None:
                    await send_callback(type("Event", (), {"message": message, "event_id": event_id})())
                after = after or event_id == last_event_id
            return stream

    app = FastMCP("polling", event_store=Memory(), retry_interval=100)

    @app.tool()
    async def slow_report(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "before")
        await ctx.close_sse_stream()  # what follows is kept in the event store for the client's resume
        await ctx.report_progress(2, 2, "after")
        return "finished after the stream was closed"

    uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)


def test_client_resumes_a_stream_the_legacy_server_closed(tmp_path: Path, legacy_python: str) -> None:
    """The official 1.x server with an event store closes the call's stream (SSE polling); our
    client reconnects with Last-Event-ID and gets the later progress and the result."""
    script = tmp_path / "polling_oracle.py"
    script.write_text(POLLING_ORACLE)
    progress: list[str | None] = []
    for url in _serve(legacy_python, script, "sse"):
        with Client.http(url) as client:
            assert client.era == "legacy"
            result = client.call_tool("slow_report", {}, progress=lambda p, t, m: progress.append(m))
    assert result["content"][0]["text"] == "finished after the stream was closed"
    assert progress == ["before", "after"]
