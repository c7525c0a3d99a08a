"""The kit's blocking WebSocket client against a server we did not write (websockets.sync.server),
over ws:// and wss://, and against our own hub; every failure is one exception type."""

from __future__ import annotations

import contextlib
import datetime
import functools
import queue
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

from mcp_agent_kit.httpd import WsClientError, WsLimits, WsTimeout, ws_connect
from tests.httpd.ws_app import TOKEN, serving, url
from tests.net import free_port

Closes = queue.SimpleQueue[tuple[int | None, str | None]]
ACTIONS: dict[str | bytes, Callable[[ServerConnection], None]] = {
    "frag": lambda c: c.send(["fr", "ag", "ment"]),  # a fragmented reply
    "ping": lambda c: c.ping(b"srv") and c.send("pinged"),  # the server pings first (its Event is truthy)
    "close": lambda c: c.close(4001, "done here"),
    "headers": lambda c: c.send(str(c.request.headers.get("X-Agent")) if c.request else ""),
}


def peer(closes: Closes, connection: ServerConnection) -> None:
    """Echo, or one of ACTIONS; the close it saw goes to `closes`."""
    with contextlib.suppress(ConnectionClosed):
        for message in connection:
            action = ACTIONS.get(message)
            if action is None:
                connection.send(message)
            else:
                action(connection)
    closes.put((connection.close_code, connection.close_reason))


@contextmanager
def websockets_server(**options: Any) -> Iterator[tuple[int, Closes]]:
    closes: Closes = queue.SimpleQueue()
    with serve(functools.partial(peer, closes), "127.0.0.1", 0, ping_interval=None, compression=None,
               **options) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server.socket.getsockname()[1], closes
        finally:
            server.shutdown()
            thread.join(10)


def test_against_websockets_server() -> None:
    with websockets_server(subprotocols=["chat"]) as (port, _), \
            ws_connect(f"ws://127.0.0.1:{port}/x?y=1", subprotocols=["chat"], headers={"X-Agent": "kit"}) as client:
        assert client.subprotocol == "chat"
        client.send("hello")
        assert client.recv(10) == "hello"
        client.send(b"\x00\x01")
        assert client.recv(10) == b"\x00\x01"
        client.send("headers")
        assert client.recv(10) == "kit"
        client.send("frag")
        assert client.recv(10) == "fragment"
        client.send_fragments(["sent ", "in ", "parts"])
        assert client.recv(10) == "sent in parts"
        client.send("ping")  # the server's ping is answered inside recv
        assert client.recv(10) == "pinged"
        client.send("after the ping")
        client.ping(b"mine")  # a message arriving before the pong waits for recv
        assert client.recv(10) == "after the ping"
        with pytest.raises(WsTimeout):
            client.recv(0.01)
        client.send("close")
        with pytest.raises(WsClientError) as closed:
            client.recv(10)
        assert (closed.value.code, closed.value.reason) == (4001, "done here")
        assert (client.close_code, client.close_reason) == (4001, "done here")
        with pytest.raises(WsClientError):
            client.send("too late")


def test_our_close_reaches_the_server() -> None:
    with websockets_server() as (port, closes):
        client = ws_connect(f"ws://127.0.0.1:{port}/")
        client.send("x")
        assert client.recv(10) == "x"
        client.close(4002, "client leaves")
        assert client.close_code == 4002
    assert closes.get(timeout=10) == (4002, "client leaves")


def _certificate(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_wss(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cafile=str(cert))
    with websockets_server(ssl=server_context) as (port, _):
        with ws_connect(f"wss://localhost:{port}/", ssl_context=client_context) as client:
            client.send("over tls")
            assert client.recv(10) == "over tls"
        with pytest.raises(WsClientError, match="handshake"):  # the system's trust store knows no such CA
            ws_connect(f"wss://localhost:{port}/")


def test_against_our_hub() -> None:
    with serving(WsLimits(text_only=False)) as (server, app):
        with ws_connect(url(server), headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            client.send(b"\x07")
            assert client.recv(10) == b"\x07"
            client.send("raise")
            with pytest.raises(WsClientError) as failed:
                client.recv(10)
            assert failed.value.code == 1011
        with pytest.raises(WsClientError, match="HTTP 401"):
            ws_connect(url(server))
        assert app.handler().done.wait(10)


@pytest.mark.parametrize("target", ["http://127.0.0.1/", "ws://", "ws://127.0.0.1:notaport/"])
def test_bad_urls(target: str) -> None:
    with pytest.raises(WsClientError):
        ws_connect(target)


def test_nothing_listening() -> None:
    with pytest.raises(WsClientError, match="cannot connect"):
        ws_connect(f"ws://127.0.0.1:{free_port()}/", timeout=5)
