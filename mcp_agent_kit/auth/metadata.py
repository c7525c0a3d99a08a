"""auth.metadata: well-known metadata documents — authorization servers (RFC 8414, OIDC) and
protected resources (RFC 9728).

The URLs are built by path insertion (`/.well-known/<suffix>` goes between the origin and the
path), with the OpenID Connect forms as fallbacks for authorization servers, in the order the MCP
authorization spec gives. A fetched authorization-server document must name exactly the issuer
it was fetched for (RFC 8414 §3.3). Rules: the fetch is injected; no caching (the callers keep
what they need).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mcp_agent_kit.auth.jwks import Fetch, check_fetchable, document, urllib_fetch

AS_SUFFIX = "oauth-authorization-server"
OIDC_SUFFIX = "openid-configuration"
PRM_SUFFIX = "oauth-protected-resource"


def well_known(url: str, suffix: str) -> str:
    """`scheme://host/.well-known/<suffix><path>` for `scheme://host<path>` (RFC 8414 §3.1, RFC 9728 §3.1)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, f"/.well-known/{suffix}{path}", "", ""))


def authorization_server_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order to try."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    if not path:
        return [well_known(issuer, AS_SUFFIX), well_known(issuer, OIDC_SUFFIX)]
    appended = urlunsplit((parts.scheme, parts.netloc, f"{path}/.well-known/{OIDC_SUFFIX}", "", ""))
    return [well_known(issuer, AS_SUFFIX), well_known(issuer, OIDC_SUFFIX), appended]


def authorization_server_metadata(issuer: str, fetch: Fetch = urllib_fetch) -> dict[str, Any]:
    """The first metadata document found for `issuer`; ValueError when none is, or one names another issuer."""
    check_fetchable(issuer)
    problems = []
    for url in authorization_server_urls(issuer):
        try:
            found = document(fetch, url)
        except (OSError, ValueError) as exc:
            problems.append(f"{url}: {exc}")
            continue
        if found.get("issuer") != issuer:
            raise ValueError(f"{url} names issuer {found.get('issuer')!r}, not {issuer!r} (RFC 8414 §3.3)")
        return found
    raise ValueError(f"no authorization server metadata for {issuer}: " + "; ".join(problems))


def protected_resource_document(resource: str, authorization_servers: list[str], scopes: list[str],
                                name: str | None = None) -> bytes:
    """The RFC 9728 document a resource server serves about itself."""
    body: dict[str, Any] = {"resource": resource, "authorization_servers": authorization_servers,
                            "bearer_methods_supported": ["header"]}
    if scopes:
        body["scopes_supported"] = scopes
    if name:
        body["resource_name"] = name
    return json.dumps(body, separators=(",", ":")).encode()
