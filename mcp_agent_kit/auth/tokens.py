"""auth.tokens: decide whether a bearer access token is good for this resource server, and whose it is.

The pipeline (MCP authorization "Token Handling"; RFC 9068 §4, RFC 7519 §4.1, RFC 8725):
a JWT's `alg` must be one this validator allows (never `none` or HS*), an unknown `crit` refuses
it, its `typ` may only say it is an access token (`at+jwt`) or a plain `JWT`; the key is chosen by
`kid` from the issuer's JWK Set (auth.jwks: cached; an unknown `kid` refetches, rate-limited) and
must fit the algorithm; the signature must verify; then `iss` must be the issuer exactly, `aud`
(string or list) must contain this server's resource URI (one trailing slash ignored), `exp`,
`nbf` and `iat` are checked with a small leeway, and every required scope must be granted
(`scope`, space-separated, or a `scp` list). Tokens that are not JWTs go to introspection when it
is configured (RFC 7662), and their answer is checked the same way. A verified token is cached by
its SHA-256 until it expires (at most 5 minutes), so a repeated token costs no signature check and
no request. Every refusal is a TokenError whose `error` is the RFC 6750 code the challenge
carries. Rules: knows no HTTP framing (the transports build the challenge) and no MCP.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp_agent_kit.auth.jose import ALGORITHMS, JoseError, looks_like_jwt, parse_compact
from mcp_agent_kit.auth.jwks import JwksCache

ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt", "jwt"})
CACHE_SECONDS = 300.0
CACHE_ENTRIES = 10_000


class TokenError(Exception):
    """A refused token: `error` is "invalid_token" (401) or "insufficient_scope" (403)."""

    def __init__(self, error: str, description: str, scopes: tuple[str, ...] = ()) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.scopes = scopes

    @property
    def status(self) -> int:
        return 403 if self.error == "insufficient_scope" else 401


@dataclass(frozen=True)
class Grant:
    """What a good token says: who (`sub`, else `client_id`) and which scopes."""

    subject: str
    client_id: str | None
    scopes: frozenset[str]
    expires: float
    claims: dict[str, Any] = field(repr=False, compare=False)

    @property
    def principal(self) -> str:
        return "oauth:" + self.subject


Introspect = Callable[[str], dict[str, Any]]
"""introspect(token) -> the RFC 7662 response object (raises OSError/ValueError when unreachable)."""


def _same_resource(value: str, resource: str) -> bool:
    return value == resource or value.rstrip("/") == resource.rstrip("/")


def _scopes(claims: dict[str, Any]) -> frozenset[str]:
    scope, scp = claims.get("scope"), claims.get("scp")
    if isinstance(scope, str):
        return frozenset(scope.split())
    if isinstance(scp, list):
        return frozenset(s for s in scp if isinstance(s, str))
    return frozenset(scp.split()) if isinstance(scp, str) else frozenset()


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenError("invalid_token", f"the {name!r} claim is not a number")
    return float(value)


class TokenValidator:
    """Validates access tokens for one resource (see the module docstring)."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks: JwksCache | None = None,
        introspect: Introspect | None = None,
        required_scopes: Iterable[str] = (),
        algorithms: Iterable[str] = ("RS256", "PS256", "ES256"),
        leeway: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        unknown = set(algorithms) - ALGORITHMS
        if unknown:
            raise ValueError(f"unsupported algorithms {sorted(unknown)}: choose from {sorted(ALGORITHMS)}")
        if jwks is None and introspect is None:
            raise ValueError("give a JWK Set (for JWTs) or an introspection endpoint (for opaque tokens)")
        self.issuer = issuer
        self.audience = audience
        self.jwks = jwks
        self.introspect = introspect
        self.required_scopes = tuple(required_scopes)
        self.algorithms = frozenset(algorithms)
        self.leeway = leeway
        self.clock = clock
        self._cache: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def validate(self, token: str, required: Iterable[str] = ()) -> Grant:
        """The token's Grant, or TokenError. `required`: scopes this request needs beyond the server's."""
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self.clock()
        grant = self._cache.get(key)
        if grant is None or grant.expires <= now:
            grant = self._verify(token, now)
            with self._lock:
                self._cache.pop(key, None)
                if len(self._cache) >= CACHE_ENTRIES:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[key] = grant
        needed = tuple(dict.fromkeys([*self.required_scopes, *required]))
        missing = [scope for scope in needed if scope not in grant.scopes]
        if missing:
            raise TokenError("insufficient_scope", f"the token lacks scope {' '.join(missing)}", needed)
        return grant

    def _verify(self, token: str, now: float) -> Grant:
        if looks_like_jwt(token) and self.jwks is not None:
            claims = self._verify_jwt(token)
        elif self.introspect is not None:
            claims = self._introspected(token)
        else:
            raise TokenError("invalid_token", "the token is not a JWT")
        return self._check_claims(claims, now)

    def _verify_jwt(self, token: str) -> dict[str, Any]:
        assert self.jwks is not None
        try:
            jws = parse_compact(token)
            header = jws.header
            alg = header.get("alg")
            if not isinstance(alg, str) or alg not in self.algorithms:
                raise TokenError("invalid_token", f"the token's algorithm {alg!r} is not accepted")
            if "crit" in header:
                raise TokenError("invalid_token", "the token has critical header parameters this server does not know")
            typ = header.get("typ")
            if typ is not None and (not isinstance(typ, str) or typ.lower() not in ACCESS_TOKEN_TYPES):
                raise TokenError("invalid_token", f"the token's type {typ!r} is not an access token")
            kid = header.get("kid")
            keys = self.jwks.keys_for(kid if isinstance(kid, str) else None, alg)
            if not keys:
                raise TokenError("invalid_token", "no key of the issuer matches the token's key id")
            if not any(key.verify(alg, jws.signing_input, jws.signature) for key in keys):
                raise TokenError("invalid_token", "the token's signature does not verify")
            return jws.claims()
        except JoseError as exc:
            raise TokenError("invalid_token", f"malformed token: {exc}") from None

    def _introspected(self, token: str) -> dict[str, Any]:
        assert self.introspect is not None
        try:
            answer = self.introspect(token)
        except (OSError, ValueError) as exc:
            raise TokenError("invalid_token", f"the token could not be introspected: {exc}") from None
        if answer.get("active") is not True:
            raise TokenError("invalid_token", "the token is not active")
        answer.setdefault("iss", self.issuer)  # RFC 7662 makes iss optional; the endpoint is the issuer's
        return answer

    def _check_claims(self, claims: dict[str, Any], now: float) -> Grant:
        if claims.get("iss") != self.issuer:
            raise TokenError("invalid_token", "the token was issued by another authorization server")
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if not any(isinstance(a, str) and _same_resource(a, self.audience) for a in audiences):
            raise TokenError("invalid_token", "the token is meant for another resource (aud)")
        exp, nbf, iat = (_number(claims, name) for name in ("exp", "nbf", "iat"))
        if exp is None:
            raise TokenError("invalid_token", "the token has no expiry")
        if exp <= now - self.leeway:
            raise TokenError("invalid_token", "the token has expired")
        if nbf is not None and nbf > now + self.leeway:
            raise TokenError("invalid_token", "the token is not valid yet")
        if iat is not None and iat > now + self.leeway:
            raise TokenError("invalid_token", "the token was issued in the future")
        subject = claims.get("sub") if isinstance(claims.get("sub"), str) else None
        client_id = claims.get("client_id") if isinstance(claims.get("client_id"), str) else None
        if not (subject or client_id):
            raise TokenError("invalid_token", "the token names no subject")
        return Grant(subject or f"client:{client_id}", client_id, _scopes(claims),
                     min(exp + self.leeway, now + CACHE_SECONDS), claims)
