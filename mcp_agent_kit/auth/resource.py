"""auth.resource: an OAuth-protected resource (an MCP endpoint or an A2A agent) — its metadata and challenges.

`ProtectedResource` knows the canonical URI clients use (the token audience), the authorization
servers, the scopes; it answers the RFC 9728 metadata document at its well-known URLs (the
path-inserted one and the root one) and turns a request's `Authorization` header into a Grant
or a Refusal that carries the exact `WWW-Authenticate` value: 401 with `resource_metadata` and
`scope` and no error code when no token was sent (RFC 6750 §3.1), 401 `invalid_token` for a bad
one, 403 `insufficient_scope` naming every scope the request needs. DPoP (RFC 9449, auth.dpop):
`Authorization: DPoP <token>` is let in only with a good proof whose key is the token's
`cnf.jkt`; a token with `cnf.jkt` sent as `Bearer` is refused; every 401 offers `DPoP
algs="..."` beside `Bearer` (with the same `resource_metadata` and `scope`), the error on the
challenge of the scheme the request used (`invalid_dpop_proof` for a bad proof). Tokens in the
query string are never looked at. Rules: no HTTP framing (the transports send what this returns), no clock or
network of its own (auth.tokens holds those).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.auth.dpop import DpopError, DpopVerifier, Request
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


def bound_key(claims: dict[str, Any]) -> str | None:
    """The `cnf.jkt` a DPoP-bound token names (RFC 9449 §6), else None."""
    cnf = claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
    return jkt if isinstance(jkt, str) else None


class ProtectedResource:
    """One protected endpoint (see the module docstring)."""

    def __init__(self, validator: TokenValidator, *, resource: str, authorization_servers: Iterable[str],
                 scopes: Iterable[str] = (), name: str | None = None,
                 server_metadata: dict[str, Any] | None = None, dpop: DpopVerifier | None = None) -> None:
        """server_metadata: the authorization server's RFC 8414 document, when it was fetched;
        dpop: how DPoP proofs are checked (a default DpopVerifier when not given)."""
        self.validator = validator
        self.dpop = dpop if dpop is not None else DpopVerifier()
        self.server_metadata = server_metadata
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        self.scopes = list(scopes)
        self.metadata_url = well_known(resource, PRM_SUFFIX)
        self.document = protected_resource_document(resource, self.authorization_servers, self.scopes, name)
        self.metadata_paths = frozenset({urlsplit(self.metadata_url).path, f"/.well-known/{PRM_SUFFIX}"})

    def challenge(self, error: str | None = None, description: str | None = None,
                  scopes: Iterable[str] | None = None, scheme: str = "bearer") -> str:
        """The WWW-Authenticate value: Bearer, then DPoP; the error on the challenge of `scheme`.
        A 403 (`insufficient_scope`) challenges only in the scheme the request used."""
        parts = [f"resource_metadata={_quoted(self.metadata_url)}"]
        wanted = list(scopes) if scopes is not None else self.scopes
        if wanted:
            parts.append(f"scope={_quoted(' '.join(wanted))}")
        failed = []
        if error:
            failed.append(f"error={_quoted(error)}")
            if description:
                failed.append(f"error_description={_quoted(description)}")
        algs = [f"algs={_quoted(' '.join(self.dpop.algorithms))}"]
        bearer = "Bearer " + ", ".join([*(failed if scheme == "bearer" else []), *parts])
        dpop = "DPoP " + ", ".join([*(failed if scheme == "dpop" else []), *algs, *parts])
        if error == "insufficient_scope":
            return dpop if scheme == "dpop" else bearer
        return f"{bearer}, {dpop}"

    def authenticate(self, authorization: str | None, required: Iterable[str] = (),
                     request: Request | None = None) -> Grant:
        """The Grant of a good Bearer token (or DPoP token and proof, checked against `request`),
        else a Refusal (401 or 403) with its challenge."""
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        scheme, token = scheme.lower(), credentials.strip()
        if scheme not in ("bearer", "dpop") or not token:  # no token sent: no error code
            raise Refusal(401, self.challenge(), "an access token is required")
        jkt = self._proven_key(token, request) if scheme == "dpop" else None
        try:
            grant = self.validator.validate(token, required)
        except TokenError as exc:
            scopes = exc.scopes if exc.error == "insufficient_scope" else None
            raise Refusal(exc.status, self.challenge(exc.error, exc.description, scopes, scheme),
                          exc.description) from None
        bound = bound_key(grant.claims)
        if jkt is None and bound is not None:
            why = "the token is DPoP-bound: send it as 'Authorization: DPoP' with a DPoP proof"
            raise Refusal(401, self.challenge("invalid_token", why), why)
        if jkt is not None and (bound is None or not hmac.compare_digest(  # as bytes: any claim text compares
                bound.encode("utf-8", "surrogatepass"), jkt.encode("utf-8", "surrogatepass"))):
            why = "the token is not bound to the DPoP proof's key (cnf.jkt)"
            raise Refusal(401, self.challenge("invalid_token", why, scheme="dpop"), why)
        return grant

    def _proven_key(self, token: str, request: Request | None) -> str:
        try:
            return self.dpop.verify(request or Request("", ""), token)
        except DpopError as exc:
            raise Refusal(401, self.challenge("invalid_dpop_proof", str(exc), scheme="dpop"), str(exc)) from None

    def request_url(self, path: str) -> str:
        """The URL a request for `path` was sent to, as clients see it (the resource's origin)."""
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{path.split('?', 1)[0].split('#', 1)[0]}"
