"""auth.dpop: verify a DPoP proof (RFC 9449 §4.3) on a protected resource, and remember its `jti`.

A request with `Authorization: DPoP <token>` must carry exactly one `DPoP` header: a compact JWS
whose header says `typ: dpop+jwt`, an `alg` of the allowlist (ES256, RS256, PS256 by default;
never `none` or HS*), and a public `jwk` (no private members) that the signature verifies with.
Its claims: a `jti` (at most 256 characters) not seen before, `htm` the request's method, `htu`
the request's URL without query and fragment (scheme and host compared case-insensitively,
default ports ignored), `iat` within the last WINDOW seconds (and at most `leeway` ahead), and
`ath` the base64url SHA-256 of the access token. The answer is the RFC 7638 thumbprint of the
proof's key: the caller compares it with the token's `cnf.jkt`. Seen `jti`s are kept for the
window (a proof older than that is refused anyway) in a cache bounded in size; when it is full
the oldest goes first. Rules: no HTTP framing, no network; the clock is injectable.
"""

from __future__ import annotations

import collections
import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.auth.jose import JoseError, Key, b64url_encode, parse_compact, thumbprint

ALGORITHMS = ("ES256", "RS256", "PS256")
WINDOW = 300.0  # seconds a proof stays acceptable (and its jti remembered)
MAX_JTI = 256
REPLAY_ENTRIES = 100_000
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


class DpopError(Exception):
    """A proof that is missing or not acceptable; the message says why (it may reach the client)."""


@dataclass(frozen=True)
class Request:
    """What a DPoP proof is checked against: the request's method, URL and DPoP header values."""

    method: str
    url: str
    proofs: tuple[str, ...] = field(default=(), repr=False)


def proofs_in(header: str | None) -> tuple[str, ...]:
    """The DPoP header's values (repeated fields arrive joined by commas; a JWS has none)."""
    return tuple(part.strip() for part in (header or "").split(",") if part.strip())


def canonical_url(url: str) -> tuple[str, str, int | None, str]:
    """(scheme, host, port, path) with case and default ports normalized; query and fragment dropped."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme), \
        parts.path or "/"


def token_hash(access_token: str) -> str:
    return b64url_encode(hashlib.sha256(access_token.encode()).digest())


class DpopVerifier:
    """Checks proofs for one resource server (see the module docstring)."""

    def __init__(self, *, algorithms: Iterable[str] = ALGORITHMS, window: float = WINDOW, leeway: float = 5.0,
                 max_entries: int = REPLAY_ENTRIES, clock: Callable[[], float] = time.time) -> None:
        self.algorithms = tuple(algorithms)
        unknown = set(self.algorithms) - set(ALGORITHMS)
        if unknown:
            raise ValueError(f"unsupported DPoP algorithms {sorted(unknown)}: choose from {list(ALGORITHMS)}")
        self.window = window
        self.leeway = leeway
        self.max_entries = max_entries
        self.clock = clock
        self._seen: collections.OrderedDict[str, float] = collections.OrderedDict()  # jti -> when seen
        self._lock = threading.Lock()

    def verify(self, request: Request, access_token: str) -> str:
        """The thumbprint of the key that made the request's one good proof, else DpopError."""
        if len(request.proofs) != 1:
            raise DpopError("a DPoP request needs exactly one DPoP proof header"
                            + (f", not {len(request.proofs)}" if request.proofs else ""))
        try:
            jws = parse_compact(request.proofs[0].strip())
            claims = jws.claims()
        except JoseError as exc:
            raise DpopError(f"malformed DPoP proof: {exc}") from None
        header = jws.header
        if header.get("typ") != "dpop+jwt":
            raise DpopError("the DPoP proof's typ is not dpop+jwt")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise DpopError(f"the DPoP proof's algorithm {alg!r} is not accepted")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict) or _PRIVATE_MEMBERS & set(jwk):
            raise DpopError("the DPoP proof must carry a public jwk (and no private key)")
        try:
            key = Key.from_jwk({name: value for name, value in jwk.items() if name != "alg"})
            jkt = thumbprint(jwk)
        except JoseError as exc:
            raise DpopError(f"the DPoP proof's jwk is not usable: {exc}") from None
        if not key.verify(alg, jws.signing_input, jws.signature):
            raise DpopError("the DPoP proof's signature does not verify")
        self._check_claims(claims, request, access_token)
        return jkt

    def _check_claims(self, claims: dict[str, Any], request: Request, access_token: str) -> None:
        if claims.get("htm") != request.method:
            raise DpopError("the DPoP proof is for another HTTP method (htm)")
        htu = claims.get("htu")
        if not isinstance(htu, str) or canonical_url(htu) != canonical_url(request.url):
            raise DpopError("the DPoP proof is for another URL (htu)")
        if claims.get("ath") != token_hash(access_token):
            raise DpopError("the DPoP proof is for another access token (ath)")
        iat = claims.get("iat")
        now = self.clock()
        if isinstance(iat, bool) or not isinstance(iat, int | float):
            raise DpopError("the DPoP proof has no iat")
        if iat < now - self.window or iat > now + self.leeway:
            raise DpopError("the DPoP proof is too old or from the future (iat)")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > MAX_JTI:
            raise DpopError("the DPoP proof has no usable jti")
        self._once(jti, now)

    def _once(self, jti: str, now: float) -> None:
        with self._lock:
            seen = self._seen
            while seen and next(iter(seen.values())) < now - self.window:
                seen.popitem(last=False)  # older than the window: its proof would be refused anyway
            if jti in seen:
                raise DpopError("the DPoP proof was used before (jti)")
            if len(seen) >= self.max_entries:
                seen.popitem(last=False)
            seen[jti] = now
