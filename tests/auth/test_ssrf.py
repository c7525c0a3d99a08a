"""Which addresses the OAuth client fetches (client/oauth/net.py): never unspecified, link-local
(cloud metadata), multicast or reserved ones; private and loopback ones only for an MCP server on
such an address; every resolved address checked, and the connection made to a checked one."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcp_agent_kit.client.oauth import OAuth, OAuthError
from mcp_agent_kit.client.oauth.net import Fetcher, classify, fetcher_for

KINDS = {
    "never": ["0.0.0.0", "0.1.2.3", "169.254.169.254", "169.254.0.1", "224.0.0.1", "240.0.0.1", "255.255.255.255",
              "::", "fe80::1", "ff02::1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"],
    "internal": ["127.0.0.1", "127.8.9.10", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "::1", "fc00::1",
                 "fd12:3456::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1"],
    "public": ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"],
}


@pytest.mark.parametrize(("kind", "address"), [(k, a) for k, found in KINDS.items() for a in found])
def test_addresses_are_classified(kind: str, address: str) -> None:
    assert classify(address) == kind


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Names the tests make up, resolved to the addresses they say; lookups counted under '#'."""
    table: dict[str, list[str]] = {"#": []}
    real = socket.getaddrinfo

    def lookup(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        table["#"].append(str(host))
        if host in table:
            return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                     (a, port) if ":" not in a else (a, port, 0, 0)) for a in table[host]]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return table


def test_metadata_and_unspecified_addresses_are_never_fetched(dns: dict[str, list[str]]) -> None:
    dns["metadata.example"] = ["169.254.169.254"]
    dns["zero.example"] = ["0.0.0.0"]
    for fetcher in (Fetcher(True), Fetcher(False)):
        for url in ("https://metadata.example/latest/meta-data/", "https://zero.example/token",
                    "https://169.254.169.254/", "https://[fe80::1]/"):
            with pytest.raises(OAuthError, match="link-local, multicast or reserved"):
                fetcher.check(url)


def test_private_addresses_only_for_a_server_on_one(dns: dict[str, list[str]]) -> None:
    dns["public-mcp.example"] = ["93.184.216.34"]
    dns["intranet.example"] = ["10.1.2.3"]
    dns["mixed.example"] = ["93.184.216.35", "192.168.0.10"]  # every address counts, not the first
    public = fetcher_for("https://public-mcp.example/mcp")
    for url in ("https://intranet.example/token", "https://mixed.example/.well-known/x", "http://localhost:9/x",
                "https://[::1]/"):
        with pytest.raises(OAuthError, match="private or loopback address, and the MCP server is not on one"):
            public.check(url)
    assert public.check("https://public-mcp.example/.well-known/oauth-protected-resource")
    local = fetcher_for("http://127.0.0.1:8000/mcp")
    assert local.check("https://intranet.example/token") and local.check("http://localhost:9/x")
    with pytest.raises(OAuthError, match="use https"):
        local.check("http://intranet.example/token")  # plain http only to loopback, as before


def test_building_an_oauth_client_looks_nothing_up(dns: dict[str, list[str]]) -> None:
    OAuth("https://unresolvable.invalid/mcp")
    assert dns["#"] == []


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def hello() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    yield int(httpd.server_address[1])
    httpd.shutdown()
    httpd.server_close()


def test_the_connection_goes_to_the_checked_address(dns: dict[str, list[str]], hello: int) -> None:
    dns["localhost"] = ["127.0.0.1"]
    reply = Fetcher(True)("GET", f"http://localhost:{hello}/x", {}, None)
    assert reply.status == 200
    assert dns["#"] == ["localhost"]  # one lookup, the checked one: a rebinding second answer is never asked for
