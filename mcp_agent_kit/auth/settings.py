"""auth.settings: what a server operator configures for OAuth, and how it becomes a ProtectedResource.

`OAuthSettings` holds the flags `serve`, `a2a` and `gateway` share (`--oauth-issuer`,
`--oauth-audience`, `--oauth-jwks-url`, `--oauth-scopes`, `--oauth-introspection-url`,
`--oauth-client-id`, `--oauth-client-secret-env`, `--public-url`). `build(url)` runs once at start,
when the server knows its own URL: the audience defaults to the public URL, the JWK Set URL to
the issuer's metadata (fetched now, so a wrong issuer fails at start rather than on the first
request), and introspection is set up when its endpoint is given. RFC 7662 introspection posts the
token with the server's own client credentials (HTTP Basic); answers are cached by
auth.tokens (good ones) and here (refusals, for a few seconds). Rules: network only in `build`
and in the introspection call; nothing here reads argv or the environment except the named
secret variable.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from mcp_agent_kit.auth.jwks import Fetch, JwksCache, check_fetchable, urllib_fetch
from mcp_agent_kit.auth.metadata import authorization_server_metadata
from mcp_agent_kit.auth.resource import ProtectedResource
from mcp_agent_kit.auth.tokens import TokenValidator

NEGATIVE_SECONDS = 5.0


class Introspector:
    """RFC 7662 §2: `introspect(token)` posts it to the endpoint, authenticated as this server."""

    def __init__(self, url: str, client_id: str, client_secret: str, *, timeout: float = 10.0) -> None:
        check_fetchable(url)
        self.url = url
        credentials = f"{urllib.parse.quote(client_id, safe='')}:{urllib.parse.quote(client_secret, safe='')}"
        self._auth = "Basic " + base64.b64encode(credentials.encode()).decode()
        self.timeout = timeout
        self._refused: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, token: str) -> dict[str, Any]:
        now = time.monotonic()
        with self._lock:
            if self._refused.get(token, 0.0) > now:
                return {"active": False}
        body = urllib.parse.urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        request = urllib.request.Request(self.url, data=body, method="POST", headers={
            "Authorization": self._auth, "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json"})
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            answer = json.loads(response.read(1 << 20))
        if not isinstance(answer, dict):
            raise ValueError("the introspection endpoint did not answer with a JSON object")
        if answer.get("active") is not True:
            with self._lock:
                if len(self._refused) > 10_000:
                    self._refused.clear()
                self._refused[token] = now + NEGATIVE_SECONDS
        return answer


@dataclass(frozen=True)
class OAuthSettings:
    issuer: str
    audience: str | None = None
    jwks_url: str | None = None
    scopes: tuple[str, ...] = ()
    introspection_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    public_url: str | None = None
    leeway: float = 60.0

    def build(self, own_url: str, *, fetch: Fetch = urllib_fetch, name: str | None = None) -> ProtectedResource:
        """The ProtectedResource for a server reachable at own_url (unless public_url/audience say otherwise).
        ValueError (one line) when the issuer or a URL cannot be used."""
        resource = self.audience or self.public_url or own_url
        jwks: JwksCache | None = None
        introspect: Introspector | None = None
        if self.introspection_url:
            if not self.client_id or self.client_secret is None:
                raise ValueError("--oauth-introspection-url needs --oauth-client-id and --oauth-client-secret-env")
            introspect = Introspector(self.introspection_url, self.client_id, self.client_secret)
        metadata: dict[str, Any] | None = None
        try:
            metadata = authorization_server_metadata(self.issuer, fetch)
        except ValueError:
            if not (self.jwks_url or introspect):
                raise  # the keys can only come from the metadata
        if self.jwks_url or not introspect:
            url = self.jwks_url or (metadata or {}).get("jwks_uri")
            if not isinstance(url, str):
                raise ValueError(f"the metadata of {self.issuer} has no jwks_uri: give --oauth-jwks-url")
            jwks = JwksCache(url, fetch=fetch)
        validator = TokenValidator(issuer=self.issuer, audience=resource, jwks=jwks, introspect=introspect,
                                   required_scopes=self.scopes, leeway=self.leeway)
        return ProtectedResource(validator, resource=resource, authorization_servers=[self.issuer],
                                 scopes=self.scopes, name=name, server_metadata=metadata)


def secret_from_env(name: str | None) -> str | None:
    """The client secret from the named environment variable (never from argv)."""
    if name is None:
        return None
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"--oauth-client-secret-env names {name}, which is not set")
    return value
