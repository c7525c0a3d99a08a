"""state: tamper-evident opaque tokens handed to clients (MRTR requestState, task handles).

A token is base64url(JSON payload) "." base64url(HMAC-SHA256). Rules: the payload is bound
to a purpose, the originating request and an expiry; verification is constant-time; knows
nothing of JSON-RPC or transports.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any


class StateError(ValueError):
    """A token that was tampered with, expired, or minted for another request."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """Strict base64url: only the alphabet, no padding, and the one spelling `_b64` writes (a
    token with extra characters or other spare bits is refused, not read as the same token)."""
    data = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    if _b64(data) != text:
        raise ValueError("not canonical base64url")
    return data


def fingerprint(value: Any) -> str:
    """A short stable digest of a JSON value (for binding a token to request arguments)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def seal(secret: bytes, payload: dict[str, Any], ttl_s: float, now: float | None = None) -> str:
    body = dict(payload)
    body["exp"] = int((now if now is not None else time.time()) + ttl_s)
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    tag = hmac.new(secret, raw, hashlib.sha256).digest()
    return f"{_b64(raw)}.{_b64(tag)}"


def unseal(secret: bytes, token: Any, expect: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """The payload of a valid token whose bound fields equal `expect`; else StateError."""
    if not isinstance(token, str) or token.count(".") != 1 or len(token) > 1_000_000:
        raise StateError("requestState is malformed")
    body_text, tag_text = token.split(".")
    try:
        raw, tag = _unb64(body_text), _unb64(tag_text)
    except (ValueError, TypeError) as exc:
        raise StateError("requestState is malformed") from exc
    if not hmac.compare_digest(tag, hmac.new(secret, raw, hashlib.sha256).digest()):
        raise StateError("requestState failed its integrity check")
    payload = json.loads(raw)
    if not isinstance(payload, dict):
        raise StateError("requestState is malformed")
    for key, value in expect.items():
        if payload.get(key) != value:
            raise StateError("requestState was issued for a different request")
    if payload.get("exp", 0) < (now if now is not None else time.time()):
        raise StateError("requestState has expired")
    return payload
