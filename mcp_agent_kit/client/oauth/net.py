"""client.oauth.net: the HTTP requests the OAuth client makes, over http.client, never following redirects.

A `Fetcher` (the `Send` the OAuth client uses) returns status, headers (names lower-cased;
repeated ones joined by a newline) and the body (capped). Every URL it is given came from a
server (metadata, endpoints, redirects), so it checks each one before connecting (SSRF rules,
docs/oauth.md "Which addresses the client will fetch"):
- https, or http only to a loopback host (auth.jwks.check_fetchable);
- the host is resolved and EVERY address it resolves to is checked: never an unspecified
  (0.0.0.0/8, ::), link-local (169.254.0.0/16 — cloud metadata — and fe80::/10), multicast,
  broadcast or reserved address; loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7),
  shared (100.64/10) and other non-global addresses only when the MCP server itself resolves
  to such an address (`fetcher_for(server_url)`; a server on the internet cannot point the
  client into the user's network), public addresses always; IPv4-mapped and NAT64 IPv6 forms
  are judged by the IPv4 address inside;
- the connection goes to an address that was checked (never a second lookup, so DNS rebinding
  between check and connect does not help), with TLS still verifying the host name.
`send` is a Fetcher that allows internal addresses (the never-list still applies). JSON and form
helpers sit on top. Rules: no OAuth decisions; no logging of bodies (they carry tokens).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

from mcp_agent_kit.auth.jwks import check_fetchable
from mcp_agent_kit.client.oauth.errors import OAuthError

MAX_BODY = 1 << 20
TIMEOUT = 15.0


@dataclass
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> dict[str, Any]:
        try:
            value = json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            raise OAuthError(f"HTTP {self.status}: the body is not JSON") from None
        if not isinstance(value, dict):
            raise OAuthError(f"HTTP {self.status}: the body is not a JSON object")
        return value


Send = Callable[[str, str, dict[str, str], bytes | None], Response]
"""send(method, url, headers, body) -> Response; raises OAuthError when no answer came."""


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


Kind = Literal["never", "internal", "public"]
_NEVER = tuple(ipaddress.ip_network(n) for n in ("0.0.0.0/8", "169.254.0.0/16", "255.255.255.255/32"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
Address = tuple[int, Any]  # (address family, socket address) as getaddrinfo gives them


def classify(address: str) -> Kind:
    """What kind of address this is, for the rules above."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in _NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.is_loopback:
        return "internal"  # before the never-list: Python counts ::1 as reserved (::/8)
    if ip.is_unspecified or ip.is_link_local or ip.is_multicast or ip.is_reserved or any(ip in n for n in _NEVER):
        return "never"
    if ip.is_private or not ip.is_global:
        return "internal"
    return "public"


def resolve(host: str, port: int) -> list[Address]:
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OAuthError(f"cannot resolve {host}: {exc}") from None
    return [(family, sockaddr) for family, _, _, _, sockaddr in found]


def is_internal(url: str) -> bool:
    """Whether a URL's host resolves to a loopback, private or other non-public address."""
    parts = urlsplit(url)
    try:
        return any(classify(str(sockaddr[0])) != "public"
                   for _, sockaddr in resolve(parts.hostname or "", parts.port or 443))
    except OAuthError:
        return False


class Fetcher:
    """A Send that checks where it connects (the rules above). `allow_internal` may be a callable,
    asked on first use (so building an OAuth client does no DNS lookup)."""

    def __init__(self, allow_internal: bool | Callable[[], bool]) -> None:
        self._allow = allow_internal

    def allows_internal(self) -> bool:
        if callable(self._allow):
            self._allow = bool(self._allow())
        return self._allow

    def check(self, url: str) -> list[Address]:
        """The checked addresses url's host resolves to; OAuthError naming the rule it breaks."""
        try:
            check_fetchable(url)
        except ValueError as exc:
            raise OAuthError(str(exc)) from None
        parts = urlsplit(url)
        host = parts.hostname or ""
        addresses = resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        for _, sockaddr in addresses:
            kind = classify(str(sockaddr[0]))
            if kind == "never":
                raise OAuthError(f"refusing to fetch {url}: {host} resolves to {sockaddr[0]}, an unspecified, "
                                 "link-local, multicast or reserved address")
            if kind == "internal" and not self.allows_internal():
                raise OAuthError(f"refusing to fetch {url}: {host} resolves to {sockaddr[0]}, a private or loopback "
                                 "address, and the MCP server is not on one")
        if not addresses:
            raise OAuthError(f"cannot resolve {host}")
        return addresses

    def __call__(self, method: str, url: str, headers: dict[str, str], body: bytes | None = None) -> Response:
        return _send(method, url, headers, body, self.check(url))


def fetcher_for(server_url: str) -> Fetcher:
    """The Fetcher for the OAuth flows of one MCP server: internal addresses only if it is on one."""
    return Fetcher(lambda: is_internal(server_url))


send: Send = Fetcher(True)


def _connect(addresses: list[Address]) -> socket.socket:
    last: OSError | None = None
    for family, sockaddr in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(TIMEOUT)
        try:
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    raise last or OSError("no address to connect to")


def _send(method: str, url: str, headers: dict[str, str], body: bytes | None, addresses: list[Address]) -> Response:
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname or ""
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl.create_default_context()
        conn = http.client.HTTPSConnection(host, parts.port, timeout=TIMEOUT, context=context)
    else:
        conn = http.client.HTTPConnection(host, parts.port, timeout=TIMEOUT)
    try:
        sock = _connect(addresses)  # to a checked address: no second lookup
        try:
            conn.sock = context.wrap_socket(sock, server_hostname=host) if parts.scheme == "https" else sock
        except OSError:
            sock.close()
            raise
        conn.request(method, target, body=body, headers=headers)
        reply = conn.getresponse()
        data = reply.read(MAX_BODY + 1)
        if len(data) > MAX_BODY:
            raise OAuthError(f"{url} sent more than {MAX_BODY} bytes")
        found: dict[str, str] = {}
        for name, value in reply.getheaders():
            key = name.lower()
            found[key] = f"{found[key]}\n{value}" if key in found else value
        return Response(reply.status, found, data)
    except (OSError, http.client.HTTPException) as exc:
        raise OAuthError(f"{method} {url}: {exc}") from None
    finally:
        conn.close()


def get_json(transport: Send, url: str, headers: dict[str, str] | None = None) -> Response:
    return transport("GET", url, {"Accept": "application/json", **(headers or {})}, None)


def post_form(transport: Send, url: str, form: dict[str, str], headers: dict[str, str] | None = None) -> Response:
    sent = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json", **(headers or {})}
    return transport("POST", url, sent, urlencode(form).encode())


def post_json(transport: Send, url: str, body: dict[str, Any]) -> Response:
    sent = {"Content-Type": "application/json", "Accept": "application/json"}
    return transport("POST", url, sent, json.dumps(body).encode())
