"""OAuth over the 2024-11-05 HTTP+SSE transport: the official SDK 1.x (the legacy oracle) serving
`/sse` and `/messages/` behind its own authorization server. The GET stream and every POST carry
the token, a 401 on either runs the same challenge/refresh path as Streamable HTTP, and no token
goes to an endpoint on another origin."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mcp_agent_kit.client import Client, forget_verdicts
from mcp_agent_kit.client.authorizer import credentials
from mcp_agent_kit.client.http import HttpChannel
from mcp_agent_kit.client.oauth import HeadlessRedirect, MemoryTokenStore, OAuth
from mcp_agent_kit.client.oauth.store import Token
from mcp_agent_kit.client.probe import Endpoint
from mcp_agent_kit.client.sse import SseStream
from tests.auth.conftest import serve_protected
from tests.net import free_port


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    forget_verdicts()


@pytest.fixture(scope="module")
def sse_protected(legacy_python: str) -> Iterator[str]:
    yield from serve_protected(3600, legacy_python, sse=True)


class _Spy(OAuth):
    """The real OAuth client, recording the challenges it is handed."""

    def __init__(self, url: str) -> None:
        super().__init__(url, redirector=HeadlessRedirect(f"http://127.0.0.1:{free_port()}/callback"),
                         store=MemoryTokenStore())
        self.challenged: list[int] = []

    def challenge(self, status: int, response: dict[str, str], sent: dict[str, str], url: str) -> bool:
        self.challenged.append(status)
        return super().challenge(status, response, sent, url)


def test_the_stream_and_the_posts_carry_the_token_and_a_401_refreshes(sse_protected: str) -> None:
    oauth = _Spy(sse_protected)
    with Client.http(sse_protected, auth=oauth) as client:
        assert (client.era, client.verdict and client.verdict.version) == ("legacy", "2024-11-05")
        channel = client.channel
        assert isinstance(channel, HttpChannel) and channel.sse is not None
        assert oauth.challenged == [401]  # the GET stream's challenge logged in; every POST then got through
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
        assert oauth.token is not None and oauth.token.refresh_token
        first = oauth.token.access_token
        oauth.token = dataclasses.replace(oauth.token, access_token="revoked")  # the server no longer knows it
        oauth.store.put_token(oauth.token)  # (in the cache too: there is no newer token to adopt)
        assert client.call_tool("add", {"a": 4, "b": 5})["content"][0]["text"] == "9"
        assert oauth.challenged == [401, 401]  # the POST's 401 ...
        assert oauth.token.access_token not in (first, "revoked")  # ... was answered with a refresh


def test_probe_logs_in_over_the_old_transport(sse_protected: str, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    kit = [sys.executable, "-m", "mcp_agent_kit", "probe"]
    refused = subprocess.run([*kit, sse_protected], capture_output=True, text=True, env=env, timeout=60)
    assert refused.returncode == 3 and "auth login" in refused.stderr, refused.stderr
    run = subprocess.run([*kit, "--login", "--headless", "--redirect-port", str(free_port()), sse_protected],
                         capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["era"], report["version"], report["tools"]) == ("legacy", "2024-11-05", ["add"])


class _Recorder(BaseHTTPRequestHandler):
    """Another origin: records what reaches it."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.seen.append(dict(self.headers))
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


class _Stream(BaseHTTPRequestHandler):
    """A 2024-11-05 server that wants a token on its stream and names an endpoint on another origin."""

    elsewhere: ClassVar[str] = ""
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.seen.append(dict(self.headers))
        if self.headers.get("Authorization") != "Bearer good":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer error="invalid_token"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(f"event: endpoint\r\ndata: {self.elsewhere}/messages/?session_id=1\r\n\r\n".encode())
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        return None


def _serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return httpd


def test_no_token_goes_to_an_endpoint_on_another_origin() -> None:
    recorder = type("Recorder", (_Recorder,), {"seen": []})
    other = _serve(recorder)
    elsewhere = f"http://localhost:{other.server_address[1]}"  # another host name: another origin
    stream = type("Stream", (_Stream,), {"seen": [], "elsewhere": elsewhere})
    server = _serve(stream)
    url = f"http://127.0.0.1:{server.server_address[1]}/sse"
    store = MemoryTokenStore()
    store.put_token(Token("good", "Bearer", url, "https://as.example", "client"))
    oauth = OAuth(url, store=store)
    try:
        with pytest.raises(Exception, match="cross-origin endpoint"), Client.http(url, auth=oauth) as client:
            client.list_tools()  # the probe refuses the endpoint
        assert stream.seen and stream.seen[-1]["Authorization"] == "Bearer good"  # the stream had the token
        assert recorder.seen == []
        channel = HttpChannel(url, auth=oauth)  # the transport on its own, handed that endpoint anyway:
        sse = SseStream(url, channel, channel._connect, {}, oauth)
        assert isinstance(sse.open(5.0), Endpoint)
        sse.use(f"{elsewhere}/messages/?session_id=1")
        sse.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        sse.close()
        assert recorder.seen == []  # it only ever connects to the stream's own host and port
        assert credentials(oauth, url, "POST", f"{elsewhere}/messages/") == {}  # and has no token for elsewhere
        assert credentials(oauth, url, "POST", url.replace("/sse", "/messages/")) == {"Authorization": "Bearer good"}
    finally:
        for httpd in (server, other):
            httpd.shutdown()
            httpd.server_close()
