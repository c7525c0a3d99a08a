"""auth.jwks: an authorization server's signing keys, fetched once and kept (RFC 7517 §5, OIDC Core §10.1.1).

The set is fetched on first use and kept for its `Cache-Control: max-age`, clamped to 5 min–24 h;
a failed refetch keeps the last good set. A `kid` the set does not hold triggers a refetch when
the last fetch (whatever caused it: the first use, an expiry, another unknown `kid`) is at least
`min_refresh` seconds old (MIN_REFRESH, 10 s), so a key rotated in just after start is picked up
within seconds, and a stream of tokens naming made-up keys costs at most one fetch per interval:
rotation is picked up, a flood is not amplified. Keys whose `use` is not
`sig`, and keys of unknown types, are skipped. Only https URLs are fetched (http on loopback, for
tests and local authorization servers). Rules: the fetch is injected (`Fetch`), so the cache is
testable without a network; no token logic here.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.auth.jose import JoseError, Key

log = logging.getLogger("mcp_agent_kit.auth")
Fetch = Callable[[str], tuple[bytes, dict[str, str]]]
"""fetch(url) -> (body, lower-cased response headers); raises OSError or ValueError on failure."""
MIN_TTL, MAX_TTL, DEFAULT_TTL = 300.0, 86400.0, 3600.0
MIN_REFRESH = 10.0
"""Seconds between two fetches for an unknown `kid`: the bound on what made-up key ids can cost."""
MAX_DOCUMENT = 1 << 20
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def check_fetchable(url: str) -> None:
    """ValueError unless url is https, or http on a loopback host."""
    parts = urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK):
        return
    raise ValueError(f"refusing to fetch {url!r}: use https (http only on loopback)")


def urllib_fetch(url: str, timeout: float = 10.0) -> tuple[bytes, dict[str, str]]:
    check_fetchable(url)
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = response.read(MAX_DOCUMENT + 1)
        if len(body) > MAX_DOCUMENT:
            raise ValueError(f"{url} sent more than {MAX_DOCUMENT} bytes")
        return body, {k.lower(): v for k, v in response.headers.items()}


def max_age(headers: dict[str, str]) -> float:
    found = re.search(r"(?:^|,)\s*max-age\s*=\s*(\d+)", headers.get("cache-control", ""))
    ttl = float(found.group(1)) if found else DEFAULT_TTL
    return min(max(ttl, MIN_TTL), MAX_TTL)


def parse_jwks(body: bytes) -> list[Key]:
    document = json.loads(body)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError('a JWK Set is a JSON object with a "keys" array')
    keys = []
    for jwk in document["keys"]:
        if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
            continue
        try:
            keys.append(Key.from_jwk(jwk))
        except JoseError as exc:
            log.info("skipping a key of the JWK Set: %s", exc)
    return keys


class JwksCache:
    """The keys at one `jwks_uri`, refreshed as the module docstring says."""

    def __init__(self, url: str, *, fetch: Fetch = urllib_fetch, min_refresh: float = MIN_REFRESH,
                 clock: Callable[[], float] = time.monotonic) -> None:
        check_fetchable(url)
        self.url = url
        self._fetch = fetch
        self._clock = clock
        self.min_refresh = min_refresh
        self._keys: list[Key] = []
        self._expires = 0.0
        self._last_try = -min_refresh
        self.fetches = 0
        self._lock = threading.Lock()

    def _refresh(self, now: float) -> None:
        self._last_try = now
        self.fetches += 1
        try:
            body, headers = self._fetch(self.url)
            self._keys = parse_jwks(body)
            self._expires = now + max_age(headers)
        except (OSError, ValueError) as exc:
            log.warning("cannot fetch the JWK Set at %s (keeping %d known keys): %s", self.url, len(self._keys), exc)
            self._expires = now + self.min_refresh

    def keys_for(self, kid: str | None, alg: str) -> list[Key]:
        """The keys that may verify a token with this `kid` (or none given) and `alg`."""
        with self._lock:
            now = self._clock()
            if now >= self._expires:
                self._refresh(now)
            found = self._matching(kid, alg)
            if not found and kid is not None and now - self._last_try >= self.min_refresh:
                self._refresh(now)  # a rotated key: one refetch, at most one per min_refresh
                found = self._matching(kid, alg)
            return found

    def _matching(self, kid: str | None, alg: str) -> list[Key]:
        fitting = [key for key in self._keys if key.fits(alg)]
        if kid is None:
            return fitting if len(fitting) == 1 else []  # no kid: only when exactly one key can be meant
        return [key for key in fitting if key.kid == kid]


def document(fetch: Fetch, url: str) -> dict[str, Any]:
    body, _ = fetch(url)
    value = json.loads(body)
    if not isinstance(value, dict):
        raise ValueError(f"{url} did not answer with a JSON object")
    return value
