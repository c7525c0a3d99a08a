"""auth.jose: the JOSE pieces an OAuth resource server needs — JWKs, JWS verification, JWT parsing.

A compact JWS is split and its header and payload decoded strictly (base64url without padding,
JSON objects). Signatures verify with the key types their `alg` requires: RS256/384/512
(RSASSA-PKCS1-v1_5, the encoded message *built* and compared, never parsed), PS256/384/512
(RSASSA-PSS, MGF1 with the same hash, salt as long as the hash) and ES256 (auth.p256). RSA keys
under 2048 bits are refused. `none` and the HS* algorithms are never accepted here: a resource
server validating with published keys must not let a token choose a shared-secret algorithm
(RFC 8725 §2.1). Rules: pure functions over bytes and dicts; no clock, no network, no policy
(auth.tokens decides what a valid token is).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from mcp_agent_kit.auth import p256

MIN_RSA_BITS = 2048
_HASHES = {"256": "sha256", "384": "sha384", "512": "sha512"}
_DIGEST_INFO = {  # RFC 8017 §9.2 note 1: DER of DigestInfo before the hash value
    "sha256": bytes.fromhex("3031300d060960864801650304020105000420"),
    "sha384": bytes.fromhex("3041300d060960864801650304020205000430"),
    "sha512": bytes.fromhex("3051300d060960864801650304020305000440"),
}
ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256"})


class JoseError(ValueError):
    """A token or key that cannot be used; the message says why (it may reach a client)."""


def b64url_decode(text: str) -> bytes:
    if not isinstance(text, str) or "=" in text or not text.isascii():
        raise JoseError("not base64url")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise JoseError("not base64url") from None


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _uint(jwk: dict[str, Any], member: str) -> int:
    value = jwk.get(member)
    if not isinstance(value, str) or not value:
        raise JoseError(f"the key has no {member!r}")
    return int.from_bytes(b64url_decode(value), "big")


@dataclass(frozen=True)
class Key:
    """One public key of a JWK Set: `kty` "RSA" (n, e) or "EC" P-256 (x, y)."""

    kty: str
    kid: str | None
    alg: str | None
    numbers: tuple[int, int]

    @classmethod
    def from_jwk(cls, jwk: dict[str, Any]) -> Key:
        kty = jwk.get("kty")
        kid = jwk.get("kid") if isinstance(jwk.get("kid"), str) else None
        alg = jwk.get("alg") if isinstance(jwk.get("alg"), str) else None
        if "d" in jwk:
            raise JoseError("a private key was published as a verification key")
        if kty == "RSA":
            n, e = _uint(jwk, "n"), _uint(jwk, "e")
            if n.bit_length() < MIN_RSA_BITS:
                raise JoseError(f"RSA keys must have at least {MIN_RSA_BITS} bits")
            if e < 3 or e % 2 == 0:
                raise JoseError("the RSA exponent is not usable")
            return cls("RSA", kid, alg, (n, e))
        if kty == "EC":
            if jwk.get("crv") != "P-256":
                raise JoseError("only EC keys on P-256 are supported")
            x, y = _uint(jwk, "x"), _uint(jwk, "y")
            if not p256.on_curve(x, y):
                raise JoseError("the EC key is not a point of P-256")
            return cls("EC", kid, alg, (x, y))
        raise JoseError(f"unsupported key type {kty!r}")

    def fits(self, alg: str) -> bool:
        """Whether this key may verify `alg` (its type, and its own `alg` when it names one)."""
        if self.alg is not None and self.alg != alg:
            return False
        return self.kty == ("EC" if alg == "ES256" else "RSA")

    def verify(self, alg: str, signing_input: bytes, signature: bytes) -> bool:
        if alg not in ALGORITHMS or not self.fits(alg):
            return False
        if alg == "ES256":
            return p256.verify(self.numbers[0], self.numbers[1], signing_input, signature)
        n, e = self.numbers
        hash_name = _HASHES[alg[2:]]
        if alg.startswith("RS"):
            return _pkcs1_v15_verify(n, e, hash_name, signing_input, signature)
        return _pss_verify(n, e, hash_name, signing_input, signature)


def _rsa_public(n: int, e: int, signature: bytes, length: int) -> int | None:
    if len(signature) != length:
        return None
    s = int.from_bytes(signature, "big")
    return pow(s, e, n) if s < n else None


def _pkcs1_v15_verify(n: int, e: int, hash_name: str, message: bytes, signature: bytes) -> bool:
    k = (n.bit_length() + 7) // 8
    m = _rsa_public(n, e, signature, k)
    if m is None:
        return False
    t = _DIGEST_INFO[hash_name] + hashlib.new(hash_name, message).digest()
    expected = b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t
    return hmac.compare_digest(m.to_bytes(k, "big"), expected)


def _mgf1(seed: bytes, length: int, hash_name: str) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < length:
        out += hashlib.new(hash_name, seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return bytes(out[:length])


def _pss_verify(n: int, e: int, hash_name: str, message: bytes, signature: bytes) -> bool:
    """RFC 8017 §8.1.2 and §9.1.2 with MGF1(hash) and a salt as long as the hash (RFC 7518 §3.5)."""
    mod_bits = n.bit_length()
    m = _rsa_public(n, e, signature, (mod_bits + 7) // 8)
    if m is None:
        return False
    em_bits = mod_bits - 1
    em_len = (em_bits + 7) // 8
    h_len = hashlib.new(hash_name).digest_size
    s_len = h_len
    if m.bit_length() > em_bits or em_len < h_len + s_len + 2:
        return False
    em = m.to_bytes(em_len, "big")
    if em[-1] != 0xBC:
        return False
    masked, digest = em[: em_len - h_len - 1], em[em_len - h_len - 1 : -1]
    spare = 8 * em_len - em_bits
    if spare and masked[0] >> (8 - spare):
        return False
    db = bytearray(a ^ b for a, b in zip(masked, _mgf1(digest, len(masked), hash_name), strict=True))
    db[0] &= 0xFF >> spare
    pad = em_len - h_len - s_len - 2
    if any(db[:pad]) or db[pad] != 0x01:
        return False
    salt = bytes(db[pad + 1 :])
    check = hashlib.new(hash_name, b"\x00" * 8 + hashlib.new(hash_name, message).digest() + salt).digest()
    return hmac.compare_digest(check, digest)


@dataclass(frozen=True)
class Jws:
    """A compact JWS split apart: decoded header and payload, the signing input and signature."""

    header: dict[str, Any]
    payload: bytes
    signing_input: bytes
    signature: bytes

    def claims(self) -> dict[str, Any]:
        try:
            claims = json.loads(self.payload)
        except (ValueError, UnicodeDecodeError):
            raise JoseError("the payload is not JSON") from None
        if not isinstance(claims, dict):
            raise JoseError("the claims are not a JSON object")
        return claims


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


def parse_compact(token: str) -> Jws:
    parts = token.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        raise JoseError("not a compact JWS")
    try:
        header = json.loads(b64url_decode(parts[0]))
    except (ValueError, UnicodeDecodeError):
        raise JoseError("the header is not JSON") from None
    if not isinstance(header, dict):
        raise JoseError("the header is not a JSON object")
    return Jws(header, b64url_decode(parts[1]), f"{parts[0]}.{parts[1]}".encode("ascii"),
               b64url_decode(parts[2]) if parts[2] else b"")


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 JWK thumbprint (SHA-256, base64url) of an RSA or EC public key."""
    members = {"RSA": ("e", "kty", "n"), "EC": ("crv", "kty", "x", "y")}.get(str(jwk.get("kty")))
    if members is None or not all(isinstance(jwk.get(m), str) for m in members):
        raise JoseError("cannot take the thumbprint of this key")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return b64url_encode(hashlib.sha256(canonical.encode()).digest())
