"""httpd.routes and Server.mount: several apps on one socket, picked by path (exact paths, one-segment trees,
the rest to the server's own app), each answering with its own handler; bad or repeated routes refused."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit.httpd import Handler, Routes, Server
from mcp_agent_kit.httpd.engine import Channel, Request


def named(name: str) -> type[Handler]:
    class Named(Handler):
        """Answers `NAME METHOD PATH BODY`: which app served the request."""

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _reply(self) -> None:
            body = f"{name} {self.command} {self.path} {self.rfile.read().decode()}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _reply

    return Named


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server(("127.0.0.1", 0), lambda r, c: False)
    running._app = named("main").serve(running)  # the handler needs the server; the engine takes any app
    running.mount(named("agent").serve(running), paths=["/.well-known/agent-card.json"], trees=["/a2a"])
    running.mount(named("other").serve(running), paths=["/other"])
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()
    thread.join(10)


def exchange(server: Server, requests: list[tuple[str, str, bytes]]) -> list[str]:
    """The bodies of the replies to these requests, sent on one kept-alive connection."""
    out = []
    with socket.create_connection(server.server_address, timeout=10) as sock:
        reader = sock.makefile("rb")
        for method, target, body in requests:
            sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n"
                         .encode() + body)
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            out.append(reader.read(length).decode())
    return out


def test_each_path_goes_to_its_app_on_one_connection(server: Server) -> None:
    assert exchange(server, [
        ("GET", "/.well-known/agent-card.json?fresh=1", b""),
        ("POST", "/a2a", b"rpc"),
        ("POST", "/a2a/rest/message:send", b"rest"),
        ("GET", "/mcp", b""),
        ("GET", "/a2ab", b""),  # a longer first segment is not the tree
        ("GET", "/other/deeper", b""),  # an exact path is no tree
        ("POST", "/other", b"x"),
        ("GET", "/", b""),
    ]) == ["agent GET /.well-known/agent-card.json?fresh=1 ", "agent POST /a2a rpc",
           "agent POST /a2a/rest/message:send rest", "main GET /mcp ", "main GET /a2ab ", "main GET /other/deeper ",
           "other POST /other x", "main GET / "]


def test_a_server_with_nothing_mounted_runs_its_app_directly() -> None:
    def app(request: Request, channel: Channel) -> bool:
        return False

    server = Server(("127.0.0.1", 0), app)
    try:
        assert server._app is app  # no route lookup on a server that serves one app
        server.mount(app, paths=["/x"])
        assert isinstance(server._app, Routes) and server._app.app_for("/x?y") is app
    finally:
        server.server_close()


def test_bad_and_repeated_routes_are_refused() -> None:
    def app(request: Request, channel: Channel) -> bool:
        return False

    def default(request: Request, channel: Channel) -> bool:
        return True

    routes: Routes[Request, Channel] = Routes(default)
    routes.add(app, paths=["/card"], trees=["/a2a"])
    for paths, trees, problem in [(["/card"], [], "routed already"), ([], ["/a2a"], "routed already"),
                                  (["card"], [], "starts with /"), (["/c?x=1"], [], "no query"),
                                  ([], ["/a/b"], "one path segment"), ([], ["/"], "one path segment")]:
        with pytest.raises(ValueError, match=problem):
            routes.add(app, paths=paths, trees=trees)
    assert routes.app_for("/card") is app and routes.app_for("/a2a/x") is app
    assert routes.app_for("/elsewhere") is default and routes.app_for("/c") is default  # nothing half-added
