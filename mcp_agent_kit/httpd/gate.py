"""gate: the one gate in front of every HTTP request of the kit — Host, Origin and bearer token.

DNS-rebinding protection checks `Host` and `Origin` against allowlists (loopback names by
default); an optional bearer token is compared in constant time and names the principal that
owns sessions and tasks; with OAuth (auth.resource) an access token is validated instead, or as
well, and its subject is the principal. `authorize` says who a request is, or raises the
Refusal whose status and WWW-Authenticate the transport sends. Rules: pure decisions over header
values; the transport turns them into 401/403 replies (`refusal` words a 403 with the
`--allow-host` / `--allow-origin` flag that would let the request in).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mcp_agent_kit.addresses import LOOPBACK_NAMES, is_wildcard
from mcp_agent_kit.auth.dpop import Request
from mcp_agent_kit.auth.resource import Refusal

if TYPE_CHECKING:
    from mcp_agent_kit.auth.resource import ProtectedResource

LOOPBACK_HOSTS = LOOPBACK_NAMES
ANY = "*"


def _split_host(value: str) -> str | None:
    """The host part of a Host header value ('example.com:8080', '[::1]:80') in lower case."""
    value = value.strip().lower()
    if not value:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[1:end], value[end + 1 :]
        return host if rest == "" or (rest.startswith(":") and rest[1:].isdigit()) else None
    host, sep, port = value.partition(":")
    if sep and not port.isdigit():
        return None
    return host


class Policy:
    """Who may talk to this server. Hosts and origins: exact host names, or "*" for any."""

    def __init__(
        self,
        *,
        bind_host: str = "127.0.0.1",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        token: str | None = None,
        tokens: Mapping[str, str] | None = None,
        oauth: ProtectedResource | None = None,
        realm: str = "mcp",
    ) -> None:
        hosts = set(LOOPBACK_HOSTS)
        if not is_wildcard(bind_host):
            hosts.add(bind_host.lower())
        hosts.update(h.lower() for h in allowed_hosts or ())
        self.allowed_hosts = frozenset(hosts)
        self.allowed_origins = frozenset(o.lower().rstrip("/") for o in allowed_origins or ())
        principals: dict[str, str] = dict(tokens or {})
        if token:
            principals[token] = "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]
        self._tokens = [(t.encode(), p) for t, p in principals.items()]
        self.oauth = oauth
        self.realm = realm

    @property
    def auth_required(self) -> bool:
        return bool(self._tokens) or self.oauth is not None

    @property
    def has_tokens(self) -> bool:
        """Whether static bearer tokens are configured (beside or instead of OAuth)."""
        return bool(self._tokens)

    def authorize(self, authorization: str | None, method: str = "", path: str = "",
                  proofs: tuple[str, ...] = ()) -> str | None:
        """Who sent the request: None when no authentication is configured, else the principal of
        a valid static token or OAuth access token; Refusal (401/403 and its challenge) otherwise.
        method, path and the DPoP header values are what a DPoP proof is checked against."""
        if not self.auth_required:
            return None
        if self._tokens:
            found = self.principal(authorization)
            if found is not None:
                return found
        if self.oauth is not None:
            request = Request(method, self.oauth.request_url(path), proofs)
            return self.oauth.authenticate(authorization, request=request).principal
        sent = bool((authorization or "").strip())
        challenge = f'Bearer realm="{self.realm}"' + (', error="invalid_token"' if sent else "")
        raise Refusal(401, challenge, "a valid bearer token is required")

    def host_ok(self, host_header: str | None) -> bool:
        if ANY in self.allowed_hosts:
            return True
        if host_header is None:
            return False
        host = _split_host(host_header)
        return host is not None and host in self.allowed_hosts

    def origin_ok(self, origin: str | None) -> bool:
        """No Origin (a non-browser client) is fine; a present one must be allowed."""
        if origin is None or ANY in self.allowed_origins:
            return True
        origin = origin.strip().lower().rstrip("/")
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.path or parts.query:
            return False
        try:
            host = parts.hostname
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            return False
        return host is not None and host in self.allowed_hosts

    def refusal(self, host_header: str | None, origin: str | None, what: str = "the server") -> str | None:
        """None when Host and Origin pass; else which one was refused and the flag that allows it."""
        if not self.host_ok(host_header):
            name = _split_host(host_header or "")
            if not name:
                return "Host header missing or malformed: send Host: NAME[:PORT]"
            return f"Host {name[:100]!r} not allowed: start {what} with --allow-host {name[:100]}"
        if not self.origin_ok(origin):
            shown = (origin or "").strip()[:100]
            return f"Origin {shown!r} not allowed: start {what} with --allow-origin {shown}"
        return None

    def accepted_hosts(self) -> str:
        """The Host names that pass, for the start-up log (`*`: any)."""
        if ANY in self.allowed_hosts:
            return "any Host (--allow-host '*')"
        return "Host " + ", ".join(sorted(self.allowed_hosts)) + " (add names with --allow-host NAME)"

    def principal(self, authorization: str | None) -> str | None:
        """The principal a valid `Authorization: Bearer` names; None when missing or wrong.

        Every configured token is compared, in constant time, so timing tells nothing.
        """
        if authorization is None:
            return None
        scheme, _, credentials = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not credentials.strip():
            return None
        given = credentials.strip().encode()
        found: str | None = None
        for token, principal in self._tokens:
            if hmac.compare_digest(given, token):
                found = principal
        return found
