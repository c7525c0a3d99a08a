"""The httpd engine on its own: framing, limits, timeouts, keep-alive, pipelining, slow clients."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit.httpd import Handler, Limits, Server


class Echo(Handler):
    """POST echoes the body; GET /slow waits for the test's release; an incomplete body is a 413."""

    release = threading.Event()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        if not self.body_complete:
            self.close_connection = True
            self._reply(413, b"too large or unframed")
            return
        self._reply(200, self.rfile.read())

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.release.wait(10)
        self._reply(200, self.path.encode())


def start(**limits: Any) -> Server:
    server = Server(("127.0.0.1", 0), lambda r, c: False, Limits(**limits))
    server._app = Echo.serve(server)  # the handler needs the server; the engine takes any app
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


@pytest.fixture
def server() -> Iterator[Server]:
    running = start(max_body=1000, header_timeout=0.5, body_timeout=0.5, idle_timeout=0.5, workers=4)
    yield running
    Echo.release.set()
    running.shutdown()
    running.server_close()
    Echo.release.clear()


def connect(server: Server) -> socket.socket:
    return socket.create_connection(server.server_address, timeout=5)


def read_reply(sock: socket.socket, buf: bytearray | None = None) -> tuple[int, bytes, bytearray]:
    """(status, body, rest): one response with a Content-Length (1xx skipped)."""
    buf = buf if buf is not None else bytearray()
    while True:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"closed before a reply: {bytes(buf)!r}")
            buf += chunk
        end = buf.index(b"\r\n\r\n") + 4
        head = bytes(buf[:end]).decode("iso-8859-1")
        del buf[:end]
        status = int(head.split()[1])
        if 100 <= status < 200:
            continue
        fields = (line.split(":", 1) for line in head.split("\r\n")[1:] if ":" in line)
        length = next(int(value) for name, value in fields if name.lower() == "content-length")
        while len(buf) < length:
            buf += sock.recv(65536)
        body = bytes(buf[:length])
        del buf[:length]
        return status, body, buf


def closed_by_server(sock: socket.socket) -> bool:
    """True when the server closes (EOF or reset) before the socket's timeout."""
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def post(body: bytes, extra: str = "") -> bytes:
    return f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def test_keep_alive_and_pipelining(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(post(b"one"))
        assert read_reply(sock)[:2] == (200, b"one")
        sock.sendall(post(b"two") + post(b"three") + b"GET /four HTTP/1.1\r\nHost: x\r\n\r\n")
        status, body, rest = read_reply(sock)
        assert (status, body) == (200, b"two")
        status, body, rest = read_reply(sock, rest)
        assert (status, body) == (200, b"three")
        assert read_reply(sock, rest)[:2] == (200, b"/four")


def test_body_over_the_limit_is_not_read_and_the_handler_answers_413(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
        assert read_reply(sock)[0] == 413
        assert closed_by_server(sock)


def test_chunked_bodies_are_not_read(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        assert read_reply(sock)[0] == 413
        assert closed_by_server(sock)


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
        (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
        (b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(150)) + b"\r\n", 431),
        (b"GET / HTTP/1.1\r\nNo colon\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GARBAGE\r\n\r\n", 400),
    ],
)
def test_bad_heads_are_refused(server: Server, raw: bytes, status: int) -> None:
    with connect(server) as sock:
        sock.sendall(raw)
        got = sock.recv(4096)
        assert got.split(b"\r\n", 1)[0].split()[1] == str(status).encode(), got[:80]
        assert closed_by_server(sock)


def test_expect_100_continue(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"hello")
        assert read_reply(sock)[:2] == (200, b"hello")


@pytest.mark.parametrize("sent", [b"", b"GET / HTTP/1.1\r\nHost", b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"])
def test_idle_header_and_body_timeouts_close_the_connection(server: Server, sent: bytes) -> None:
    with connect(server) as sock:
        sock.sendall(sent)
        started = time.monotonic()
        assert closed_by_server(sock)
        assert time.monotonic() - started < 4


def test_slow_clients_do_not_delay_others_and_hold_no_threads() -> None:
    server = start(header_timeout=30, body_timeout=30, workers=4)
    held: list[socket.socket] = []
    try:
        for n in range(200):
            sock = connect(server)
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n" if n % 2 else post(b"0123456789")[:-5])
            held.append(sock)
        deadline = time.monotonic() + 10
        while server.connections < 200 and time.monotonic() < deadline:
            with connect(server) as probe:  # each answered request lets the loop take in more
                probe.sendall(post(b"ping"))
                read_reply(probe)
        assert server.connections >= 200
        before = threading.active_count()
        for _ in range(20):
            started = time.monotonic()
            with connect(server) as sock:
                sock.sendall(post(b"still served"))
                assert read_reply(sock)[:2] == (200, b"still served")
            assert time.monotonic() - started < 1.0
        assert threading.active_count() <= before + 4  # no thread per connection
    finally:
        for sock in held:
            sock.close()
        server.shutdown()
        server.server_close()


def test_server_close_lets_the_request_in_flight_finish() -> None:
    server = start(workers=2, drain_timeout=5)
    Echo.release.clear()
    with connect(server) as sock:
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.monotonic() + 5
        while server.busy_workers == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.busy_workers == 1
        server.shutdown()
        closer = threading.Thread(target=server.server_close)
        closer.start()
        Echo.release.set()
        assert read_reply(sock)[:2] == (200, b"/slow")
        closer.join(10)
        assert not closer.is_alive()
    Echo.release.clear()
    with pytest.raises(OSError):
        socket.create_connection(server.server_address, timeout=1).close()
