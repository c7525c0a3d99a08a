"""authorizer: how the HTTP transports (http.py, and the 2024-11-05 HTTP+SSE stream in sse.py) use
an Authorizer (client/oauth: OAuth) — the same path for every request they make.

Credentials go only to the origin of the server's URL (`credentials`: nothing for any other
origin, whatever the authorizer would give); a 401/403 goes to the authorizer's `challenge`,
which says whether to send the request again (`challenged`); a request is sent at most
AUTH_ATTEMPTS times (`retrying`). Rules: no OAuth decisions (the authorizer makes them); no
protocol decisions; outcomes are probe Failures, never exceptions.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

from mcp_agent_kit.client.probe import Failure

AUTH_ATTEMPTS = 4  # sends of one request while its authorizer keeps asking for a retry
MAX_CHALLENGE_BODY = 64 * 1024
T = TypeVar("T")


class Authorizer(Protocol):
    """What a channel asks for credentials (client/oauth: OAuth)."""

    error: str | None

    def headers(self, method: str, url: str) -> dict[str, str]: ...

    def challenge(self, status: int, response: dict[str, str], sent: dict[str, str], url: str) -> bool: ...

    def accepted(self, sent: dict[str, str]) -> None: ...


class Retry:
    """The authorizer handled a challenge: send the request again."""


RETRY = Retry()


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def header_map(response: http.client.HTTPResponse) -> dict[str, str]:
    """Response headers by lower-cased name; repeated ones joined by a newline."""
    found: dict[str, str] = {}
    for name, value in response.getheaders():
        key = name.lower()
        found[key] = f"{found[key]}\n{value}" if key in found else value
    return found


def credentials(auth: Authorizer | None, server_url: str, method: str, url: str) -> dict[str, str]:
    """The authorizer's headers for a request to url — none unless url is on the server's origin."""
    if auth is None or origin_of(url) != origin_of(server_url):
        return {}
    return auth.headers(method, url)


def challenged(auth: Authorizer, response: http.client.HTTPResponse, sent: dict[str, str], url: str) -> Failure | Retry:
    """A 401/403 answer: RETRY when the authorizer now has better credentials, else the auth Failure."""
    response.read(MAX_CHALLENGE_BODY)
    if auth.challenge(response.status, header_map(response), sent, url):
        return RETRY
    problem = auth.error or response.getheader("WWW-Authenticate") or "no challenge"
    return Failure("auth", f"HTTP {response.status} ({problem})", response.status)


def retrying(attempt: Callable[[], T | Retry], url: str) -> T | Failure:
    """Run attempt until it stops asking for a retry, at most AUTH_ATTEMPTS times."""
    for _ in range(AUTH_ATTEMPTS):
        result = attempt()
        if not isinstance(result, Retry):
            return result
    return Failure("auth", f"{url} kept refusing the credentials after {AUTH_ATTEMPTS} attempts")
