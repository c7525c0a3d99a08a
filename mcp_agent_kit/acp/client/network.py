"""acp.client.network: reach a remote ACP agent by URL — the one entry point to ACP's network transport.

`open_link(url, headers=..., jar=...)` picks the profile by the URL's scheme (ws, wss: the WebSocket profile of
acp.client.remote; http, https: the Streamable HTTP profile of acp.client.remote_http) and connects; the link it
returns is what AcpAgent reads and writes instead of a child's pipes. `auth_headers` turns the CLI's
`--header NAME:VALUE` and `--token` into headers (its errors never echo a value). Rules: imports the two
profiles' modules only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from mcp_agent_kit.acp.client.remote import CookieJar, Link, RemoteError, WebSocketLink
from mcp_agent_kit.acp.client.remote_http import HttpLink


def open_link(url: str, *, headers: Mapping[str, str] | None = None, jar: CookieJar | None = None,
              timeout: float = 30.0, max_in: int = 16 << 20, log: Callable[[str], None] | None = None) -> Link:
    """Connect to the ACP endpoint at `url` (ws, wss: WebSocket; http, https: Streamable HTTP); RemoteError."""
    scheme = urlsplit(url).scheme.lower()
    jar = jar or CookieJar()
    if scheme in ("ws", "wss"):
        return WebSocketLink(url, dict(headers or {}), jar, timeout, max_in)
    if scheme in ("http", "https"):
        return HttpLink(url, dict(headers or {}), jar, timeout, log or (lambda text: None))
    raise RemoteError(f"not an ACP endpoint URL: {url!r} (use ws://, wss://, http:// or https://HOST[:PORT]/acp)")


def auth_headers(pairs: list[str], token: str | None) -> dict[str, str]:
    """`NAME:VALUE` pairs (and a bearer token) as headers; ValueError naming the bad pair."""
    headers: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition(":")
        if not sep or not name.strip() or any(c in name for c in " \t\r\n") or any(c in value for c in "\r\n"):
            raise ValueError("a --header is not NAME:VALUE")  # never echoed: it may hold a secret
        headers[name.strip()] = value.strip()
    if token:
        if any(c in token for c in "\r\n"):
            raise ValueError("--token holds a line break")
        headers["Authorization"] = f"Bearer {token}"
    return headers
