"""Token validation against tokens we did not sign: PyJWT and `cryptography` make the keys and the
signatures (RS256, PS256, ES256), our validator must accept exactly the good ones.

The bad-token matrix of issue 18: none, malformed, wrong signature, `alg: none`, HS256 signed with
the public key, expired, not yet valid, wrong issuer, wrong audience, missing scope, unknown `kid`
with a rotated JWKS — each refused with the right error code; and validation never fetches per
request (the JWK Set is cached; an unknown kid refetches at most once per interval)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

from mcp_agent_kit.auth import p256
from mcp_agent_kit.auth.jose import Key, b64url_encode, parse_compact, thumbprint
from mcp_agent_kit.auth.jose import b64url_decode as jose_b64
from mcp_agent_kit.auth.jwks import JwksCache
from mcp_agent_kit.auth.tokens import Grant, TokenError, TokenValidator

ISSUER = "https://as.example"
RESOURCE = "https://mcp.example/mcp"
JWKS_URL = "https://as.example/jwks"


def rsa_key(bits: int = 2048) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


RSA = rsa_key()
EC = ec.generate_private_key(ec.SECP256R1())


def public_jwk(private: Any, kid: str) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if isinstance(private, rsa.RSAPrivateKey) else jwt.algorithms.ECAlgorithm
    jwk: dict[str, Any] = json.loads(algorithm.to_jwk(private.public_key()))
    return {**jwk, "kid": kid, "use": "sig"}


class Keys:
    """A fake jwks_uri: the test decides what it serves and counts the fetches."""

    def __init__(self, *jwks: dict[str, Any]) -> None:
        self.keys = list(jwks)
        self.fetches = 0

    def __call__(self, url: str) -> tuple[bytes, dict[str, str]]:
        assert url == JWKS_URL
        self.fetches += 1
        return json.dumps({"keys": self.keys}).encode(), {"cache-control": "max-age=3600"}


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "client_id": "cli", "scope": "mcp:read mcp:write",
            "exp": now + 600, "iat": now, "nbf": now - 5}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def token(alg: str = "RS256", key: Any = RSA, kid: str = "r1", typ: str | None = "at+jwt", **changes: Any) -> str:
    headers = {"kid": kid} | ({"typ": typ} if typ else {})
    return jwt.encode(claims(**changes), key, algorithm=alg, headers=headers)


def validator(keys: Keys, jwks_clock: Any = time.monotonic, **options: Any) -> TokenValidator:
    cache = JwksCache(JWKS_URL, fetch=keys, min_refresh=60.0, clock=jwks_clock)
    return TokenValidator(issuer=ISSUER, audience=RESOURCE, jwks=cache, **options)


@pytest.fixture
def keys() -> Keys:
    return Keys(public_jwk(RSA, "r1"), public_jwk(EC, "e1"))


@pytest.mark.parametrize(("alg", "key", "kid"), [("RS256", RSA, "r1"), ("PS256", RSA, "r1"), ("ES256", EC, "e1")])
def test_good_tokens_are_accepted(keys: Keys, alg: str, key: Any, kid: str) -> None:
    grant = validator(keys).validate(token(alg, key, kid))
    assert isinstance(grant, Grant)
    assert (grant.subject, grant.client_id, grant.principal) == ("alice", "cli", "oauth:alice")
    assert grant.scopes == {"mcp:read", "mcp:write"}


def test_other_rsa_hashes_when_allowed(keys: Keys) -> None:
    check = validator(keys, algorithms=["RS384", "RS512", "PS384", "PS512"])
    for alg in ("RS384", "RS512", "PS384", "PS512"):
        assert check.validate(token(alg)).subject == "alice"
    with pytest.raises(TokenError):
        validator(keys).validate(token("RS512"))  # not in the default allowlist


def _forged_none() -> str:
    header = b64url_encode(json.dumps({"alg": "none", "kid": "r1"}).encode())
    return f"{header}.{b64url_encode(json.dumps(claims()).encode())}."


def _hs256_with_the_public_key() -> str:
    pem = RSA.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    header = b64url_encode(json.dumps({"alg": "HS256", "kid": "r1", "typ": "at+jwt"}).encode())
    payload = b64url_encode(json.dumps(claims()).encode())
    mac = hmac.new(pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url_encode(mac)}"


def _wrong_signature() -> str:
    head, payload, _ = token().split(".")
    other = token(key=rsa_key()).split(".")[2]
    return f"{head}.{payload}.{other}"


def _tampered_payload() -> str:
    head, _, sig = token().split(".")
    return f"{head}.{b64url_encode(json.dumps(claims(sub='mallory')).encode())}.{sig}"


BAD = {
    "malformed": lambda: "not-a-token",
    "two parts": lambda: "abc.def",
    "garbage base64": lambda: "!!!.@@@.###",
    "alg none": _forged_none,
    "HS256 with the public key": _hs256_with_the_public_key,
    "wrong signature": _wrong_signature,
    "tampered payload": _tampered_payload,
    "expired": lambda: token(exp=int(time.time()) - 3600),
    "not yet valid": lambda: token(nbf=int(time.time()) + 3600),
    "issued in the future": lambda: token(iat=int(time.time()) + 3600),
    "no expiry": lambda: token(exp=None),
    "wrong issuer": lambda: token(iss="https://evil.example"),
    "wrong audience": lambda: token(aud="https://other.example/mcp"),
    "audience list without us": lambda: token(aud=["https://a.example", "https://b.example"]),
    "an id token": lambda: token(typ="id_token+jwt"),
    "unknown critical header": lambda: jwt.encode(claims(), RSA, algorithm="RS256",
                                                  headers={"kid": "r1", "crit": ["exp"], "exp": 1}),
    "ES256 header on the RSA key": lambda: _swap_kid(token("ES256", EC, "e1"), "r1"),
    "no subject": lambda: token(sub=None, client_id=None),
}


def _swap_kid(tok: str, kid: str) -> str:
    jws = parse_compact(tok)
    head = b64url_encode(json.dumps({**jws.header, "kid": kid}).encode())
    _, payload, sig = tok.split(".")
    return f"{head}.{payload}.{sig}"


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_tokens_are_refused_as_invalid_token(keys: Keys, case: str) -> None:
    with pytest.raises(TokenError) as caught:
        validator(keys).validate(BAD[case]())
    assert (caught.value.error, caught.value.status) == ("invalid_token", 401), caught.value.description


def test_a_missing_scope_is_403_naming_every_scope_needed(keys: Keys) -> None:
    check = validator(keys, required_scopes=["mcp:read"])
    assert check.validate(token()).subject == "alice"
    with pytest.raises(TokenError) as caught:
        check.validate(token(scope="mcp:write"))
    assert (caught.value.error, caught.value.status) == ("insufficient_scope", 403)
    with pytest.raises(TokenError) as caught:
        check.validate(token(scope="mcp:read"), required=["mcp:admin"])
    assert caught.value.scopes == ("mcp:read", "mcp:admin")


def test_scp_lists_and_trailing_slash_audiences(keys: Keys) -> None:
    grant = validator(keys).validate(token(scope=None, scp=["a", "b"], aud=[RESOURCE + "/", "x"]))
    assert grant.scopes == {"a", "b"}


def test_the_key_set_is_fetched_once_not_per_request(keys: Keys) -> None:
    check = validator(keys)
    for _ in range(20):
        check.validate(token())
    for n in range(20):
        check.validate(token(jti=str(n)))  # distinct tokens: verified each, keys still cached
    assert keys.fetches == 1


def test_a_rotated_key_is_picked_up_with_one_refetch_and_made_up_kids_cost_nothing(keys: Keys) -> None:
    now = [1000.0]
    check = validator(keys, jwks_clock=lambda: now[0])
    check.validate(token())
    new = rsa_key()
    keys.keys = [public_jwk(new, "r2")]  # the issuer rotated
    now[0] += 61  # past the refresh interval (60 s)
    assert check.validate(token(key=new, kid="r2")).subject == "alice"
    assert keys.fetches == 2
    for n in range(50):  # a flood of made-up kids within the next interval: no fetch at all
        with pytest.raises(TokenError):
            check.validate(token(key=new, kid=f"made-up-{n}"))
    assert keys.fetches == 2
    now[0] += 61
    with pytest.raises(TokenError):
        check.validate(token(key=new, kid="made-up-again"))
    assert keys.fetches == 3  # one refetch per interval, however many tokens


def test_a_key_rotated_right_after_start_is_picked_up_within_ten_seconds(keys: Keys) -> None:
    """The default interval: an unknown kid refetches once the last fetch (here the first one, at
    start) is 10 s old, not a minute; a flood of made-up kids still costs one fetch per 10 s."""
    now = [1000.0]
    cache = JwksCache(JWKS_URL, fetch=keys, clock=lambda: now[0])  # the defaults a server gets
    check = TokenValidator(issuer=ISSUER, audience=RESOURCE, jwks=cache)
    check.validate(token())  # the first fetch, at start
    new = rsa_key()
    keys.keys = [*keys.keys, public_jwk(new, "r2")]  # rotated in a moment later
    now[0] += 9.9
    with pytest.raises(TokenError):
        check.validate(token(key=new, kid="r2", jti="early"))  # too soon after the first fetch
    assert keys.fetches == 1
    now[0] += 0.1  # 10 s after the first fetch, whatever caused it
    assert check.validate(token(key=new, kid="r2")).subject == "alice"
    assert keys.fetches == 2
    for second in range(30):  # made-up kids, one every 1 s for 30 s: one fetch per 10 s
        now[0] += 1.0
        with pytest.raises(TokenError):
            check.validate(token(key=new, kid=f"made-up-{second}"))
    assert keys.fetches == 5
    assert check.validate(token(key=new, kid="r2", jti="still")).subject == "alice"  # known: no fetch
    assert keys.fetches == 5


def test_a_verified_token_is_cached_and_expires_from_the_cache(keys: Keys) -> None:
    now = [time.time()]
    check = validator(keys, clock=lambda: now[0], leeway=0)
    tok = token(exp=int(now[0]) + 100)
    check.validate(tok)
    keys.keys = []  # were the signature checked again, no key would be found
    check.validate(tok)
    now[0] += 101
    with pytest.raises(TokenError):
        check.validate(tok)


def test_opaque_tokens_are_introspected_and_checked_like_jwts() -> None:
    answers = {"good": {"active": True, "sub": "bob", "aud": RESOURCE, "scope": "mcp:read", "exp": time.time() + 60},
               "inactive": {"active": False},
               "elsewhere": {"active": True, "sub": "bob", "aud": "https://x.example", "exp": time.time() + 60}}
    check = TokenValidator(issuer=ISSUER, audience=RESOURCE, introspect=lambda t: dict(answers[t]))
    assert check.validate("good").principal == "oauth:bob"
    for bad in ("inactive", "elsewhere"):
        with pytest.raises(TokenError):
            check.validate(bad)


# ---- the primitives, against OpenSSL (through `cryptography`) ------------------------------------------
def test_our_es256_signatures_verify_in_openssl_and_theirs_in_ours() -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    numbers = private.private_numbers()
    x, y = numbers.public_numbers.x, numbers.public_numbers.y
    assert p256.public_key(numbers.private_value) == (x, y)
    for message in (b"", b"hello", bytes(range(256)) * 9):
        ours = p256.sign(numbers.private_value, message)
        der = utils.encode_dss_signature(int.from_bytes(ours[:32], "big"), int.from_bytes(ours[32:], "big"))
        private.public_key().verify(der, message, ec.ECDSA(hashes.SHA256()))  # raises when wrong
        r, s = utils.decode_dss_signature(private.sign(message, ec.ECDSA(hashes.SHA256())))
        theirs = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        assert p256.verify(x, y, message, theirs)
        assert not p256.verify(x, y, message + b"!", theirs)
        assert not p256.verify(x, (y + 1) % p256.P, message, theirs)  # off the curve
        assert not p256.verify(x, y, message, (0).to_bytes(32, "big") + theirs[32:])


@pytest.mark.parametrize("bits", [2048, 2049, 3072, 4095])
def test_pss_and_pkcs1_at_awkward_key_sizes(bits: int) -> None:
    private = rsa_key(bits)
    key = Key.from_jwk(public_jwk(private, "k"))
    message = b"a.b"
    pss = private.sign(message, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256())
    pkcs = private.sign(message, padding.PKCS1v15(), hashes.SHA256())
    assert key.verify("PS256", message, pss) and key.verify("RS256", message, pkcs)
    assert not key.verify("PS256", message, pkcs) and not key.verify("RS256", message, pss)
    assert not key.verify("PS256", b"a.c", pss)


def test_weak_and_private_keys_are_refused_and_thumbprints_match_rfc7638() -> None:
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    with pytest.raises(ValueError, match="2048"):
        Key.from_jwk(public_jwk(small, "s"))
    with pytest.raises(ValueError, match="private"):
        Key.from_jwk({**public_jwk(RSA, "r"), "d": "AQAB"})
    rfc = {"kty": "RSA", "e": "AQAB", "n": (
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMs"
        "tn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajr"
        "n1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")}
    assert thumbprint(rfc) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_an_ec_key_off_the_curve_is_refused() -> None:
    """Invalid-curve keys are refused when the JWK Set is read, before any signature math."""
    jwk = public_jwk(EC, "e1")
    y = int.from_bytes(jose_b64(jwk["y"]), "big")
    bad = {**jwk, "y": b64url_encode(((y + 1) % p256.P).to_bytes(32, "big"))}
    with pytest.raises(ValueError, match="not a point of P-256"):
        Key.from_jwk(bad)
    with pytest.raises(ValueError, match="P-256"):
        Key.from_jwk({**jwk, "crv": "P-384"})


def test_pkcs1_signatures_must_carry_the_whole_padding() -> None:
    """A 'signature' whose encoded message ends with the right DigestInfo and hash but is not
    00 01 FF..FF 00 padded (the Bleichenbacher'06 shape) is refused: the whole block is compared."""
    private = RSA.private_numbers()
    n, d = private.public_numbers.n, private.d
    message = b"header.payload"
    digest_info = bytes.fromhex("3031300d060960864801650304020105000420") + hashlib.sha256(message).digest()
    k = (n.bit_length() + 7) // 8
    loose = b"\x00\x01" + b"\xff" * 8 + b"\x00" + b"\x42" * (k - 11 - len(digest_info)) + digest_info
    signature = pow(int.from_bytes(loose, "big"), d, n).to_bytes(k, "big")
    key = Key.from_jwk(public_jwk(RSA, "r1"))
    assert not key.verify("RS256", message, signature)
