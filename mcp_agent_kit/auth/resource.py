"""auth.resource: an OAuth-protected resource (an MCP endpoint or an A2A agent) — its metadata and challenges.

`ProtectedResource` knows the canonical URI clients use (the token audience), the authorization
servers, the scopes; it answers the RFC 9728 metadata document at its well-known URLs (the
path-inserted one and the root one) and turns a request's `Authorization` header into a Grant
or a Refusal that carries the exact `WWW-Authenticate` value: 401 with `resource_metadata` and
`scope` and no error code when no token was sent (RFC 6750 §3.1), 401 `invalid_token` for a bad
one, 403 `insufficient_scope` naming every scope the request needs. Tokens in the query string
are never looked at. Rules: no HTTP framing (the transports send what this returns), no clock or
network of its own (auth.tokens holds those).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.auth.metadata import PRM_SUFFIX, protected_resource_document, well_known
from mcp_agent_kit.auth.tokens import Grant, TokenError, TokenValidator


class Refusal(Exception):
    """Why a request is not let in: its HTTP status and the WWW-Authenticate value to send."""

    def __init__(self, status: int, challenge: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.challenge = challenge
        self.description = description


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ProtectedResource:
    """One protected endpoint (see the module docstring)."""

    def __init__(self, validator: TokenValidator, *, resource: str, authorization_servers: Iterable[str],
                 scopes: Iterable[str] = (), name: str | None = None,
                 server_metadata: dict[str, Any] | None = None) -> None:
        """server_metadata: the authorization server's RFC 8414 document, when it was fetched."""
        self.validator = validator
        self.server_metadata = server_metadata
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        self.scopes = list(scopes)
        self.metadata_url = well_known(resource, PRM_SUFFIX)
        self.document = protected_resource_document(resource, self.authorization_servers, self.scopes, name)
        self.metadata_paths = frozenset({urlsplit(self.metadata_url).path, f"/.well-known/{PRM_SUFFIX}"})

    def challenge(self, error: str | None = None, description: str | None = None,
                  scopes: Iterable[str] | None = None) -> str:
        parts = [f"resource_metadata={_quoted(self.metadata_url)}"]
        wanted = list(scopes) if scopes is not None else self.scopes
        if wanted:
            parts.append(f"scope={_quoted(' '.join(wanted))}")
        if error:
            parts.insert(0, f"error={_quoted(error)}")
            if description:
                parts.insert(1, f"error_description={_quoted(description)}")
        return "Bearer " + ", ".join(parts)

    def authenticate(self, authorization: str | None, required: Iterable[str] = ()) -> Grant:
        """The Grant of a good bearer token, else a Refusal (401 or 403) with its challenge."""
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not credentials.strip():  # no bearer token sent: no error code
            raise Refusal(401, self.challenge(), "a bearer token is required")
        try:
            return self.validator.validate(credentials.strip(), required)
        except TokenError as exc:
            scopes = exc.scopes if exc.error == "insufficient_scope" else None
            raise Refusal(exc.status, self.challenge(exc.error, exc.description, scopes), exc.description) from None
