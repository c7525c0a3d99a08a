"""board.web_auth: the web board's signed session cookie and its CSRF token.

A person signs in once (board.web_app's `POST /login` with the board's token); the page then carries
`mak_session`, a stateless value any replica can check: `v1.<principal, base64url>.<expiry, unix
seconds>.<nonce, hex>.<HMAC-SHA256 over the rest, base64url>`. The key is a secret record the board's
store keeps (kind KIND, key KEY), made once by whichever replica comes first (as gateway.agent_store
keeps its sealing secret), so every replica signs and checks with the same one. The CSRF token of a
session is HMAC(key, "csrf" + nonce): bound to that session, never stored, sent back by the page on
every state-changing request (a form field or X-CSRF-Token header on HTTP, the envelope's top-level
`"csrf"` on the WebSocket: the /ws gate reads the cookie with `from_headers` and hands board.live
`csrf_check(session)`). An OAuth sign-in in progress (board.web_oauth) is `mak_oauth`, signed with the
same key under another purpose: `v1.<[state, PKCE verifier, return path], JSON, base64url>.<expiry>.<HMAC>`,
FLOW_TTL seconds, `Path=/login; HttpOnly; SameSite=Lax` (Lax: the authorization server's redirect back
is a cross-site top-level GET, which Strict would strip it from). Every comparison is constant-time.
Rules: pure checks over strings and a store record; no HTTP (board.web_app writes the headers).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_agent_kit.store.base import Store

__all__ = ["COOKIE", "DEFAULT_TTL", "FLOW_COOKIE", "FLOW_TTL", "KEY", "KIND", "Flow", "WebAuth", "WebSession",
           "cookie_value"]

COOKIE = "mak_session"
FLOW_COOKIE = "mak_oauth"
FLOW_TTL = 600  # seconds an OAuth sign-in may take, from /login/oauth to /login/callback
KIND, KEY = "board_web", "session_key"  # the store record holding the signing key (hex)
DEFAULT_TTL = 12 * 3600  # seconds a sign-in lasts
VERSION = "v1"
_MAX_COOKIE = 4096  # a longer value is refused unread


@dataclass(frozen=True)
class WebSession:
    """A checked session: who, until when (unix seconds), and the nonce its CSRF token is bound to."""

    principal: str
    expires: int
    nonce: str


@dataclass(frozen=True)
class Flow:
    """An OAuth sign-in in progress: the `state` sent, the PKCE verifier, where to go after."""

    state: str
    verifier: str = field(repr=False)
    back: str = "/"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def cookie_value(cookie_header: str | None, name: str = COOKIE) -> str | None:
    """The value of cookie `name` in a Cookie header ("a=1; mak_session=..."), None when absent."""
    for part in (cookie_header or "").split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value.strip().strip('"')
    return None


def _kept_key(store: Store) -> bytes:
    """The signing key the store keeps, made once (insert-if-absent: the first replica's wins)."""
    from mcp_agent_kit.store.base import Record, StoreError

    store.insert(Record(KIND, KEY, {"secret": secrets.token_hex(32)}))
    found = store.get(KIND, KEY)
    if found is None:
        raise StoreError(f"{store.url}: the web board's session key vanished")
    return bytes.fromhex(str(found.body["secret"]))


class WebAuth:
    """Issues and checks `mak_session` values and their CSRF tokens with one key."""

    def __init__(self, key: bytes, *, ttl: int = DEFAULT_TTL, clock: Callable[[], float] = time.time) -> None:
        if len(key) < 16:
            raise ValueError("the session key must be at least 16 bytes")
        self._key, self.ttl, self.clock = key, ttl, clock

    @classmethod
    def for_store(cls, store: Store, *, ttl: int = DEFAULT_TTL, clock: Callable[[], float] = time.time) -> WebAuth:
        """The one every replica on `store` shares (its key a record of the store)."""
        return cls(_kept_key(store), ttl=ttl, clock=clock)

    def _sign(self, body: str, purpose: str = COOKIE) -> str:
        return _b64(hmac.new(self._key, f"{purpose}|{body}".encode(), hashlib.sha256).digest())

    def _checked(self, value: str | None, purpose: str, fields: int, expiry: int = 2) -> list[str] | None:
        """The dot-separated fields of a signed value (the version first, the expiry at `expiry`): None
        when absent, malformed, forged (constant-time) or expired."""
        if not value or len(value) > _MAX_COOKIE:
            return None
        body, _, signature = value.rpartition(".")
        if not hmac.compare_digest(self._sign(body, purpose).encode(), signature.encode("ascii", "replace")):
            return None
        parts = body.split(".")
        if len(parts) != fields or parts[0] != VERSION or not parts[expiry].isdigit() \
                or int(parts[expiry]) <= self.clock():
            return None
        return parts

    def issue(self, principal: str) -> str:
        """A new cookie value naming `principal`, valid for `ttl` seconds."""
        expires = int(self.clock()) + self.ttl
        body = f"{VERSION}.{_b64(principal.encode())}.{expires}.{secrets.token_hex(16)}"
        return f"{body}.{self._sign(body)}"

    def session(self, value: str | None) -> WebSession | None:
        """The session a cookie value carries: None when absent, malformed, forged or expired."""
        parts = self._checked(value, COOKIE, 4)
        if parts is None:
            return None
        try:
            principal = _unb64(parts[1]).decode()
        except ValueError:
            return None
        return WebSession(principal, int(parts[2]), parts[3])

    def from_headers(self, headers: Mapping[str, str] | object) -> WebSession | None:
        """The session a request's Cookie header carries (any object with `.get`), None without one."""
        get = getattr(headers, "get", None)
        return self.session(cookie_value(get("Cookie") if get is not None else None))

    def csrf(self, session: WebSession) -> str:
        """The session's CSRF token: HMAC(key, "csrf" + nonce)."""
        return _b64(hmac.new(self._key, f"csrf|{session.nonce}".encode(), hashlib.sha256).digest())

    def csrf_ok(self, session: WebSession | None, token: object) -> bool:
        """Does `token` (a request's, as sent: any JSON value) belong to `session`? Constant-time."""
        if session is None or not isinstance(token, str) or not token:
            return False
        return hmac.compare_digest(self.csrf(session).encode(), token.encode("utf-8", "replace"))

    def csrf_check(self, session: WebSession) -> Callable[[str], bool]:
        """`csrf_ok` bound to one session: what board.live calls with the token each request carries."""
        return lambda token: self.csrf_ok(session, token)

    def cookie(self, value: str, *, secure: bool) -> str:
        """The Set-Cookie header value that stores `value`."""
        flags = "; Secure" if secure else ""
        return f"{COOKIE}={value}; Max-Age={self.ttl}; Path=/; HttpOnly; SameSite=Strict{flags}"

    @staticmethod
    def cleared(*, secure: bool) -> str:
        """The Set-Cookie header value that removes the cookie (sign-out)."""
        flags = "; Secure" if secure else ""
        return f"{COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict{flags}"

    # ---- an OAuth sign-in in progress (board.web_oauth) ---------------------------------------------
    def flow(self, flow: Flow) -> str:
        """The signed `mak_oauth` value carrying `flow`, valid for FLOW_TTL seconds."""
        data = _b64(json.dumps([flow.state, flow.verifier, flow.back], separators=(",", ":")).encode())
        body = f"{VERSION}.{data}.{int(self.clock()) + FLOW_TTL}"
        return f"{body}.{self._sign(body, FLOW_COOKIE)}"

    def flow_of(self, headers: Mapping[str, str] | object) -> Flow | None:
        """The sign-in in progress a request's Cookie header carries: None when absent, forged or expired."""
        get = getattr(headers, "get", None)
        parts = self._checked(cookie_value(get("Cookie") if get is not None else None, FLOW_COOKIE), FLOW_COOKIE, 3)
        if parts is None:
            return None
        try:
            state, verifier, back = json.loads(_unb64(parts[1]))
        except (ValueError, TypeError):
            return None
        fields = (state, verifier, back)
        return Flow(state, verifier, back) if all(isinstance(f, str) and f for f in fields) else None

    @staticmethod
    def flow_cookie(value: str, *, secure: bool) -> str:
        """The Set-Cookie header value that stores a sign-in in progress (Max-Age=0 with value "": removes it)."""
        flags = "; Secure" if secure else ""
        return f"{FLOW_COOKIE}={value}; Max-Age={FLOW_TTL if value else 0}; Path=/login; HttpOnly; SameSite=Lax{flags}"
