"""JWS signatures (auth.jose): the RSA checks compare the whole recovered block (PKCS#1 v1.5) or
hash (PSS) in constant time, and only a signature of exactly the key's length reaches them. The
genuine signature verifies; an empty, a truncated, an extended (by a trailing byte, or by a
leading zero that keeps its value), a same-length other signature and the signature of another
message are each refused, for RS256, PS256 and ES256 signatures that `cryptography` makes."""

from __future__ import annotations

import json
from collections.abc import Callable

import jwt
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

from mcp_agent_kit.auth.jose import Key
from tests.forgeries import forgeries

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
MESSAGE = b"header.payload"


def _es256(data: bytes) -> bytes:
    r, s = utils.decode_dss_signature(EC_KEY.sign(data, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


SIGNERS: dict[str, Callable[[bytes], bytes]] = {
    "RS256": lambda data: RSA_KEY.sign(data, padding.PKCS1v15(), hashes.SHA256()),
    "PS256": lambda data: RSA_KEY.sign(data, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256()),
    "ES256": _es256,
}


def _key(alg: str) -> Key:
    if alg == "ES256":
        return Key.from_jwk(json.loads(jwt.algorithms.ECAlgorithm.to_jwk(EC_KEY.public_key())))
    return Key.from_jwk(json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(RSA_KEY.public_key())))


def _near_misses(genuine: bytes) -> dict[str, bytes]:
    return {**forgeries(genuine), "leading zero": b"\x00" + genuine, "of another message": b""}


@pytest.mark.parametrize("alg", sorted(SIGNERS))
def test_the_genuine_signature_verifies(alg: str) -> None:
    assert _key(alg).verify(alg, MESSAGE, SIGNERS[alg](MESSAGE))


@pytest.mark.parametrize("case", sorted(_near_misses(b"01")))
@pytest.mark.parametrize("alg", sorted(SIGNERS))
def test_a_near_miss_signature_is_refused(alg: str, case: str) -> None:
    genuine = SIGNERS[alg](MESSAGE)
    forged = SIGNERS[alg](MESSAGE + b"!") if case == "of another message" else _near_misses(genuine)[case]
    assert not _key(alg).verify(alg, MESSAGE, forged)
