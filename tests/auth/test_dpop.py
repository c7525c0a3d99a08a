"""DPoP on our resource server (RFC 9449): our own client end to end (client credentials from a
loopback authorization server that binds tokens to the proof's key), and a matrix of proofs built
independently with PyJWT/cryptography, each refused for its own reason with a DPoP challenge."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mcp_agent_kit.auth.dpop import DpopError, DpopVerifier, Request, token_hash
from mcp_agent_kit.auth.jwks import JwksCache
from mcp_agent_kit.auth.resource import ProtectedResource, Refusal
from mcp_agent_kit.auth.settings import OAuthSettings
from mcp_agent_kit.auth.tokens import TokenValidator
from mcp_agent_kit.client import Client
from mcp_agent_kit.client.oauth import MemoryTokenStore, OAuth, OAuthConfig
from tests.auth.fake_as import FakeAuthorizationServer, jwk_thumbprint
from tests.auth.sdk_as import protected_server
from tests.http.conftest import start

RESOURCE = "https://mcp.example/mcp"


@pytest.fixture(scope="module")
def authority() -> Iterator[FakeAuthorizationServer]:
    server = FakeAuthorizationServer(dpop=True)
    yield server
    server.close()


def test_our_client_gets_a_bound_token_and_calls_tools_over_dpop(authority: FakeAuthorizationServer) -> None:
    running = start(protected_server().dispatcher, oauth=OAuthSettings(issuer=authority.issuer, scopes=("mcp:tools",)))
    authority.audience = running.url
    try:
        config = OAuthConfig(client_id="c1", client_secret="s1", grant="client_credentials")
        oauth = OAuth(running.url, config, store=MemoryTokenStore())
        with Client.http(running.url, auth=oauth) as client:
            assert client.call_tool("whoami", {"text": "hi"})["content"][0]["text"] == "hi"
        assert oauth.token is not None and oauth.token.dpop and oauth.dpop is not None
        claims = jwt.decode(oauth.token.access_token, options={"verify_signature": False})
        assert claims["cnf"]["jkt"] == jwk_thumbprint(oauth.dpop.key.public_jwk())
        # the same bound token as a plain bearer token is refused
        status, headers, _ = running.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                                          {"Authorization": f"Bearer {oauth.token.access_token}"})
        assert status == 401 and 'error="invalid_token"' in headers["www-authenticate"]
        assert "DPoP-bound" in headers["www-authenticate"]
    finally:
        running.server.shutdown()
        running.server.server_close()


# ---- the bad-proof matrix, with proofs PyJWT signs -------------------------------------------------
EC_KEY = ec.generate_private_key(ec.SECP256R1())
OTHER_EC_KEY = ec.generate_private_key(ec.SECP256R1())
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
NOW = 1_800_000_000.0


def _jwk(key: Any) -> dict[str, Any]:
    algorithms = jwt.algorithms
    algorithm = algorithms.ECAlgorithm if isinstance(key, ec.EllipticCurvePublicKey) else algorithms.RSAAlgorithm
    return json.loads(algorithm.to_jwk(key))  # type: ignore[no-any-return]


def proof(token: str, *, key: Any = EC_KEY, alg: str = "ES256", header: dict[str, Any] | None = None,
          jwk: dict[str, Any] | None = None, **claims: Any) -> str:
    body = {"jti": secrets.token_urlsafe(12), "htm": "POST", "htu": RESOURCE, "iat": int(NOW),
            "ath": token_hash(token), **claims}
    body = {k: v for k, v in body.items() if v is not None}
    head = {"typ": "dpop+jwt", "jwk": jwk if jwk is not None else _jwk(key.public_key()), **(header or {})}
    head = {k: v for k, v in head.items() if v is not None}
    return jwt.encode(body, key, algorithm=alg, headers=head)


@pytest.fixture
def resource(authority: FakeAuthorizationServer) -> ProtectedResource:
    validator = TokenValidator(issuer=authority.issuer, audience=RESOURCE, jwks=JwksCache(authority.issuer + "/jwks"),
                               clock=lambda: time.time())
    return ProtectedResource(validator, resource=RESOURCE, authorization_servers=[authority.issuer],
                             scopes=["mcp:tools"], dpop=DpopVerifier(clock=lambda: NOW))


def bound(authority: FakeAuthorizationServer, key: Any = EC_KEY) -> str:
    return authority.token(RESOURCE, cnf={"jkt": jwk_thumbprint(_jwk(key.public_key()))})


def _private_jwk() -> dict[str, Any]:
    return json.loads(jwt.algorithms.ECAlgorithm.to_jwk(EC_KEY))  # type: ignore[no-any-return]


BAD: dict[str, tuple[Callable[[str], tuple[str, ...]], str]] = {
    "no proof": (lambda t: (), "exactly one DPoP proof"),
    "two proofs": (lambda t: (proof(t), proof(t)), "exactly one DPoP proof"),
    "not a JWS": (lambda t: ("not-a-proof",), "malformed"),
    "typ JWT": (lambda t: (proof(t, header={"typ": "JWT"}),), "typ"),
    "no typ": (lambda t: (proof(t, header={"typ": None}),), "typ"),
    "alg none": (lambda t: (jwt.encode({"jti": "x", "htm": "POST", "htu": RESOURCE, "iat": int(NOW),
                                        "ath": token_hash(t)}, None, algorithm="none",
                                       headers={"typ": "dpop+jwt", "jwk": _jwk(EC_KEY.public_key())}),), "algorithm"),
    "HS256": (lambda t: (jwt.encode({"jti": "x", "htm": "POST", "htu": RESOURCE, "iat": int(NOW),
                                     "ath": token_hash(t)}, "k" * 32, algorithm="HS256",
                                    headers={"typ": "dpop+jwt", "jwk": {"kty": "oct", "k": "a2s"}}),), "algorithm"),
    "ES384 not allowed": (lambda t: (proof(t, key=ec.generate_private_key(ec.SECP384R1()), alg="ES384"),),
                          "algorithm"),
    "private jwk": (lambda t: (proof(t, jwk=_private_jwk()),), "public jwk"),
    "no jwk": (lambda t: (proof(t, header={"jwk": None}),), "public jwk"),
    "signed by another key": (lambda t: (proof(t, key=OTHER_EC_KEY, jwk=_jwk(EC_KEY.public_key())),), "signature"),
    "htm GET": (lambda t: (proof(t, htm="GET"),), "htm"),
    "htu elsewhere": (lambda t: (proof(t, htu="https://mcp.example/other"),), "htu"),
    "htu other host": (lambda t: (proof(t, htu="https://evil.example/mcp"),), "htu"),
    "iat old": (lambda t: (proof(t, iat=int(NOW) - 3600),), "iat"),
    "iat future": (lambda t: (proof(t, iat=int(NOW) + 3600),), "iat"),
    "no iat": (lambda t: (proof(t, iat=None),), "iat"),
    "no jti": (lambda t: (proof(t, jti=None),), "jti"),
    "no ath": (lambda t: (proof(t, ath=None),), "ath"),
    "ath of another token": (lambda t: (proof(t, ath=token_hash("other")),), "ath"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_proofs_are_refused_with_a_dpop_challenge(case: str, resource: ProtectedResource,
                                                      authority: FakeAuthorizationServer) -> None:
    make, why = BAD[case]
    token = bound(authority)
    with pytest.raises(Refusal) as refused:
        resource.authenticate(f"DPoP {token}", request=Request("POST", RESOURCE, make(token)))
    got = refused.value
    assert got.status == 401 and why in got.description, got.description
    assert got.challenge.startswith("Bearer resource_metadata=")
    assert ', DPoP error="invalid_dpop_proof", error_description=' in got.challenge
    assert 'algs="ES256 RS256 PS256"' in got.challenge


def test_good_proofs_pass_and_a_replayed_one_does_not(resource: ProtectedResource,
                                                      authority: FakeAuthorizationServer) -> None:
    token = bound(authority)
    good = proof(token, htu=RESOURCE + "?ignored=1#and-this")  # query and fragment are not compared
    assert resource.authenticate(f"DPoP {token}", request=Request("POST", RESOURCE, (good,))).subject == "alice"
    with pytest.raises(Refusal, match="used before"):
        resource.authenticate(f"DPoP {token}", request=Request("POST", RESOURCE, (good,)))
    rsa_token = bound(authority, RSA_KEY)
    for alg in ("RS256", "PS256"):
        signed = proof(rsa_token, key=RSA_KEY, alg=alg, htu="HTTPS://MCP.EXAMPLE:443/mcp")
        assert resource.authenticate(f"DPoP {rsa_token}", request=Request("POST", RESOURCE, (signed,)))


def test_binding_is_checked_both_ways(resource: ProtectedResource, authority: FakeAuthorizationServer) -> None:
    token = bound(authority)
    with pytest.raises(Refusal, match="DPoP-bound") as as_bearer:
        resource.authenticate(f"Bearer {token}")
    assert as_bearer.value.challenge.startswith('Bearer error="invalid_token"')
    other = proof(token, key=OTHER_EC_KEY)  # a good proof, by a key the token is not bound to
    with pytest.raises(Refusal, match="not bound to the DPoP proof's key") as wrong_key:
        resource.authenticate(f"DPoP {token}", request=Request("POST", RESOURCE, (other,)))
    assert ', DPoP error="invalid_token"' in wrong_key.value.challenge
    plain = authority.token(RESOURCE)  # no cnf: a bearer token, not usable as DPoP
    with pytest.raises(Refusal, match="not bound"):
        resource.authenticate(f"DPoP {plain}", request=Request("POST", RESOURCE, (proof(plain),)))
    assert resource.authenticate(f"Bearer {plain}").subject == "alice"


def test_the_replay_cache_is_bounded_in_size_and_time() -> None:
    now = [NOW]
    verifier = DpopVerifier(max_entries=3, window=60.0, clock=lambda: now[0])
    token = "tok"
    proofs = [proof(token, jti=f"j{i}") for i in range(4)]
    for signed in proofs:
        verifier.verify(Request("POST", RESOURCE, (signed,)), token)
    assert len(verifier._seen) == 3  # the oldest went first
    verifier.verify(Request("POST", RESOURCE, (proofs[0],)), token)  # j0 was evicted, so it is not known
    with pytest.raises(DpopError, match="used before"):
        verifier.verify(Request("POST", RESOURCE, (proofs[3],)), token)
    now[0] += 61  # past the window: every entry expires, and the old proofs are too old anyway
    late = proof(token, jti="late", iat=int(now[0]))
    verifier.verify(Request("POST", RESOURCE, (late,)), token)
    assert list(verifier._seen) == ["late"]


def test_the_documented_challenges_are_the_ones_sent(authority: FakeAuthorizationServer) -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "oauth.md").read_text(encoding="utf-8")
    section = text[text.index("### DPoP-bound tokens"):]
    documented = [line.split(": ", 1)[1] for line in section.splitlines() if line.startswith("WWW-Authenticate: ")]
    url = "https://mcp.example.com/mcp"
    validator = TokenValidator(issuer=authority.issuer, audience=url, jwks=JwksCache(authority.issuer + "/jwks"))
    resource = ProtectedResource(validator, resource=url, authorization_servers=[authority.issuer],
                                 scopes=["mcp:tools"], dpop=DpopVerifier(clock=lambda: NOW))
    assert resource.challenge() == documented[0]
    token = authority.token(url, cnf={"jkt": jwk_thumbprint(_jwk(EC_KEY.public_key()))})
    once = proof(token, htu=url)
    resource.authenticate(f"DPoP {token}", request=Request("POST", url, (once,)))
    with pytest.raises(Refusal) as replayed:
        resource.authenticate(f"DPoP {token}", request=Request("POST", url, (once,)))
    assert replayed.value.challenge == documented[1]
