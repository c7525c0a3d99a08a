"""auth.signer: a client's ES256 signing key and the compact JWS it signs (RFC 7515 §3.1, RFC 7518 §3.4).

An `EcKey` is a P-256 private scalar, generated fresh (`EcKey.generate()`, for DPoP proofs) or read
from a PKCS#8 PEM (`EcKey.from_pem`, for `private_key_jwt` client assertions): PrivateKeyInfo
(RFC 5958 §2) -> OCTET STRING -> ECPrivateKey (RFC 5915 §3), walked with a small DER reader that
refuses any other curve. Rules: standard library only; signing only (verification is auth.jose);
the private scalar never appears in a repr, a JWK or a log line.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from typing import Any

from mcp_agent_kit.auth import p256
from mcp_agent_kit.auth.jose import b64url_encode

_EC_PUBLIC_KEY = bytes.fromhex("2a8648ce3d0201")  # 1.2.840.10045.2.1
_PRIME256V1 = bytes.fromhex("2a8648ce3d030107")  # 1.2.840.10045.3.1.7
_PEM = re.compile(r"-----BEGIN PRIVATE KEY-----(.*?)-----END PRIVATE KEY-----", re.DOTALL)


def _tlv(data: bytes, at: int) -> tuple[int, bytes, int]:
    """(tag, content, offset after) of the DER element at `at`."""
    if at + 2 > len(data):
        raise ValueError("truncated DER")
    tag, length, at = data[at], data[at + 1], at + 2
    if length & 0x80:
        count = length & 0x7F
        if not 1 <= count <= 3 or at + count > len(data):
            raise ValueError("bad DER length")
        length, at = int.from_bytes(data[at : at + count], "big"), at + count
    if at + length > len(data):
        raise ValueError("truncated DER")
    return tag, data[at : at + length], at + length


def _children(data: bytes) -> list[tuple[int, bytes]]:
    out, at = [], 0
    while at < len(data):
        tag, content, at = _tlv(data, at)
        out.append((tag, content))
    return out


def _pkcs8_scalar(der: bytes) -> int:
    tag, info, _ = _tlv(der, 0)
    parts = _children(info) if tag == 0x30 else []
    if len(parts) < 3 or parts[1][0] != 0x30 or parts[2][0] != 0x04:
        raise ValueError("not a PKCS#8 PrivateKeyInfo")
    algorithm = [content for _, content in _children(parts[1][1])]
    if algorithm[:2] != [_EC_PUBLIC_KEY, _PRIME256V1]:
        raise ValueError("the key is not an EC P-256 key (only ES256 is supported)")
    tag, ec_key, _ = _tlv(parts[2][1], 0)
    fields = _children(ec_key) if tag == 0x30 else []
    if len(fields) < 2 or fields[1][0] != 0x04 or len(fields[1][1]) != 32:
        raise ValueError("not an ECPrivateKey")
    return int.from_bytes(fields[1][1], "big")


class EcKey:
    """A P-256 private key for ES256."""

    def __init__(self, d: int) -> None:
        self._d = d
        self._x, self._y = p256.public_key(d)

    def __repr__(self) -> str:
        return f"EcKey(kid={self.thumbprint()!r})"

    @classmethod
    def generate(cls) -> EcKey:
        return cls(secrets.randbelow(p256.N - 1) + 1)

    @classmethod
    def from_pem(cls, pem: str) -> EcKey:
        found = _PEM.search(pem)
        if found is None:
            raise ValueError("expected a PEM 'BEGIN PRIVATE KEY' block (PKCS#8)")
        try:
            der = base64.b64decode("".join(found.group(1).split()), validate=True)
        except ValueError:
            raise ValueError("the PEM block is not base64") from None
        return cls(_pkcs8_scalar(der))

    def public_jwk(self) -> dict[str, str]:
        return {"kty": "EC", "crv": "P-256", "x": b64url_encode(self._x.to_bytes(32, "big")),
                "y": b64url_encode(self._y.to_bytes(32, "big"))}

    def thumbprint(self) -> str:
        from mcp_agent_kit.auth.jose import thumbprint

        return thumbprint(self.public_jwk())

    def sign_jwt(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        """A compact JWS over `claims` with alg ES256 and the extra header members given."""
        head = {"alg": "ES256", **(header or {})}
        signing_input = ".".join(b64url_encode(json.dumps(part, separators=(",", ":")).encode())
                                 for part in (head, claims))
        signature = p256.sign(self._d, signing_input.encode("ascii"))
        return f"{signing_input}.{b64url_encode(signature)}"
