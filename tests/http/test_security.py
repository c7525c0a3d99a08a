"""Secure-by-default HTTP: DNS rebinding, body limit, bearer tokens, slow and many clients."""

from __future__ import annotations

import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mcp_agent_kit import Server
from tests.http.conftest import MODERN


def make_server() -> Server:
    server = Server("sec-test", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        """Echo text."""
        return text

    return server


def test_bad_host_or_origin_is_403(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    assert running.modern("tools/list", headers={"Host": "evil.example.com"})[0] == 403
    assert running.modern("tools/list", headers={"Origin": "http://evil.example.com"})[0] == 403
    assert running.modern("tools/list", headers={"Origin": "null"})[0] == 403
    for host in ("localhost", "127.0.0.1:9", "[::1]:8080"):
        status, _ = running.modern("tools/list", headers={"Host": host, "Origin": f"http://{host}"})
        assert status == 200, host


def test_allowlists_extend_the_defaults(serve: Any) -> None:
    running = serve(make_server().dispatcher, allowed_hosts=["mcp.example.com"],
                    allowed_origins=["https://app.example.com"])
    headers = {"Host": "mcp.example.com", "Origin": "https://app.example.com"}
    assert running.modern("tools/list", headers=headers)[0] == 200
    assert running.modern("tools/list", headers={"Origin": "https://other.example.com"})[0] == 403


def test_oversize_body_is_413(serve: Any) -> None:
    running = serve(make_server().dispatcher, max_body=1024)
    status, _ = running.modern("tools/call", {"name": "echo", "arguments": {"text": "x" * 2000}})
    assert status == 413
    status, body = running.modern("tools/call", {"name": "echo", "arguments": {"text": "x" * 100}})
    assert status == 200 and body["result"]["content"][0]["text"] == "x" * 100


def test_bearer_token(serve: Any) -> None:
    running = serve(make_server().dispatcher, token="s3cret-token")
    status, headers, _ = running.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                      {"MCP-Protocol-Version": MODERN})
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    assert running.modern("tools/list", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert running.modern("tools/list", headers={"Authorization": "Basic s3cret-token"})[0] == 401
    assert running.modern("tools/list", headers={"Authorization": "Bearer s3cret-token"})[0] == 200


def test_stalled_client_is_cut_off_while_others_are_served(serve: Any) -> None:
    running = serve(make_server().dispatcher, header_timeout=0.5, max_workers=2)
    stalled = socket.create_connection((running.host, running.port))
    stalled.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
    dribbler = socket.create_connection((running.host, running.port))
    dribbler.sendall(b"POST /mcp HTTP/1.1\r\n")
    stop = threading.Event()

    def dribble() -> None:  # one header byte at a time, forever: per-read timeouts alone would not stop it
        while not stop.wait(0.1):
            try:
                dribbler.sendall(b"X")
            except OSError:
                return

    threading.Thread(target=dribble, daemon=True).start()
    status, body = running.modern("tools/call", {"name": "echo", "arguments": {"text": "still served"}})
    assert status == 200 and body["result"]["content"][0]["text"] == "still served"
    for sock in (stalled, dribbler):
        sock.settimeout(30)
        try:
            data = sock.recv(4096)  # a timeout here (the server kept the socket) fails the test
        except ConnectionResetError:
            data = b""
        assert not data.startswith(b"HTTP/1.1 200"), data  # closed (or an error reply), never served
        sock.close()
    stop.set()


def test_many_concurrent_clients_are_all_answered(serve: Any) -> None:
    running = serve(make_server().dispatcher, max_workers=8)

    def one(i: int) -> str:
        status, body = running.modern("tools/call", {"name": "echo", "arguments": {"text": f"n{i}"}}, id_=i)
        assert status == 200
        return str(body["result"]["content"][0]["text"])

    with ThreadPoolExecutor(max_workers=32) as pool:
        answers = list(pool.map(one, range(200)))
    assert answers == [f"n{i}" for i in range(200)]


def test_error_bodies_are_json(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    status, headers, payload = running.post({}, {"Host": "evil.example.com"})
    assert status == 403 and headers["content-type"] == "application/json"
    assert "id" not in json.loads(payload)


def test_malformed_and_duplicate_headers_are_400(serve: Any) -> None:
    running = serve(make_server().dispatcher)
    for raw in (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example.com\r\nContent-Length: 2\r\n\r\n{}",
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"POST /mcp HTTP/1.1\r\nHost : 127.0.0.1\r\n\r\n",
        b"GARBAGE\r\n\r\n",
    ):
        with socket.create_connection((running.host, running.port), timeout=10) as sock:
            sock.sendall(raw)
            status_line = sock.recv(4096).split(b"\r\n", 1)[0]
            assert status_line.split()[1:2] == [b"400"], (raw, status_line)
