"""client.oauth.net: the HTTP requests the OAuth client makes, over http.client, never following redirects.

`send` returns status, headers (names lower-cased; repeated ones joined by a newline) and the body
(capped), and refuses URLs that are not https or loopback http (auth.jwks.check_fetchable), so a
server cannot point the client at plain-http hosts elsewhere. JSON and form helpers sit on top.
Rules: no OAuth decisions; no logging of bodies (they carry tokens).
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
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


def send(method: str, url: str, headers: dict[str, str], body: bytes | None = None) -> Response:
    try:
        check_fetchable(url)
    except ValueError as exc:
        raise OAuthError(str(exc)) from None
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=TIMEOUT,
                                           context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT)
    try:
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
