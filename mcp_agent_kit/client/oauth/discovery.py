"""client.oauth.discovery: from a server URL and its challenge to a checked authorization server.

Protected-resource metadata (RFC 9728) is tried at the challenge's `resource_metadata` URL, then
the path-inserted and the root well-known URLs; a 4xx or a body that is not a JSON object moves on.
Its `resource` must be the server's own (same origin, a segment-wise prefix of the server path) and
is then used verbatim as the RFC 8707 `resource`. Authorization-server metadata is tried at the
RFC 8414 / OIDC URLs auth.metadata builds; the document must name exactly the issuer it was looked
up for (RFC 8414 §3.3), and must offer PKCE S256. Without any PRM the 2025-03-26 rules apply: the
server's origin is the authorization server, its metadata at the root well-known URL, else the
fixed `/authorize`, `/token`, `/register`. Rules: no token handling; the transport is injected.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mcp_agent_kit.auth.metadata import AS_SUFFIX, PRM_SUFFIX, authorization_server_urls, well_known
from mcp_agent_kit.client.oauth.errors import OAuthError
from mcp_agent_kit.client.oauth.net import Send, get_json

LEGACY_VERSION = "2025-03-26"


@dataclass
class Discovery:
    """What one round of discovery found for a server."""

    resource: str
    issuer: str
    metadata: dict[str, Any]
    scopes_supported: list[str] = field(default_factory=list)
    legacy: bool = False

    def endpoint(self, name: str) -> str | None:
        value = self.metadata.get(name)
        return value if isinstance(value, str) and value else None


def prm_urls(server_url: str, header_url: str | None) -> list[str]:
    urls = [header_url] if header_url else []
    parts = urlsplit(server_url)
    if parts.path.strip("/"):
        urls.append(well_known(server_url, PRM_SUFFIX))
    urls.append(urlunsplit((parts.scheme, parts.netloc, f"/.well-known/{PRM_SUFFIX}", "", "")))
    return urls


def resource_allowed(resource: str, server_url: str) -> bool:
    """Same scheme, host and port, and `resource`'s path a segment-wise prefix of the server's."""
    want, have = urlsplit(resource), urlsplit(server_url)
    if (want.scheme.lower(), want.netloc.lower()) != (have.scheme.lower(), have.netloc.lower()):
        return False
    prefix = [s for s in want.path.split("/") if s]
    path = [s for s in have.path.split("/") if s]
    return path[: len(prefix)] == prefix


def _document(transport: Send, url: str, headers: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The JSON object at url; None when the answer is a 4xx or not a JSON object."""
    try:
        reply = get_json(transport, url, headers)
    except OAuthError:
        return None
    if reply.status >= 500:
        raise OAuthError(f"{url}: HTTP {reply.status}")
    if reply.status != 200:
        return None
    try:
        value = json.loads(reply.body)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def protected_resource(transport: Send, server_url: str, header_url: str | None) -> dict[str, Any] | None:
    for url in prm_urls(server_url, header_url):
        found = _document(transport, url)
        if found is not None and isinstance(found.get("resource"), str):
            if not resource_allowed(found["resource"], server_url):
                raise OAuthError(f"the protected-resource metadata at {url} is for {found['resource']!r}, "
                                 f"not for {server_url} (RFC 9728 §3.3): refusing to authorize")
            return found
    return None


def authorization_server(transport: Send, issuer: str) -> dict[str, Any]:
    for url in authorization_server_urls(issuer):
        found = _document(transport, url)
        if found is None:
            continue
        if found.get("issuer") != issuer:
            raise OAuthError(f"{url} names issuer {found.get('issuer')!r}, not {issuer!r} (RFC 8414 §3.3)")
        require_pkce(found, url)
        return found
    raise OAuthError(f"no authorization server metadata for {issuer}")


def require_pkce(metadata: dict[str, Any], where: str) -> None:
    methods = metadata.get("code_challenge_methods_supported")
    if not isinstance(methods, list) or "S256" not in methods:
        raise OAuthError(f"{where} does not offer PKCE S256 (code_challenge_methods_supported): refusing")


def legacy(transport: Send, server_url: str) -> Discovery:
    """The 2025-03-26 rules: the origin is the authorization server."""
    parts = urlsplit(server_url)
    origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    found = _document(transport, well_known(origin, AS_SUFFIX), {"MCP-Protocol-Version": LEGACY_VERSION})
    if found is None:
        found = {"issuer": origin, "authorization_endpoint": f"{origin}/authorize", "token_endpoint": f"{origin}/token",
                 "registration_endpoint": f"{origin}/register", "code_challenge_methods_supported": ["S256"]}
    else:
        require_pkce(found, origin)
    resource = urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
    return Discovery(resource, str(found.get("issuer") or origin), found, legacy=True)


def discover(transport: Send, server_url: str, header_url: str | None, choose: str | None = None) -> Discovery:
    """PRM, then the authorization server it names (`choose`, when listed, else the first)."""
    prm = protected_resource(transport, server_url, header_url)
    if prm is None:
        return legacy(transport, server_url)
    servers = [s for s in prm.get("authorization_servers") or [] if isinstance(s, str)]
    if not servers:
        raise OAuthError(f"the protected-resource metadata of {server_url} names no authorization server")
    issuer = choose if choose in servers else servers[0]
    scopes = [s for s in prm.get("scopes_supported") or [] if isinstance(s, str)]
    return Discovery(prm["resource"], issuer, authorization_server(transport, issuer), scopes)
