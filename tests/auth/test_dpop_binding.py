"""The DPoP binding (auth.resource, RFC 9449 §6): a DPoP token is taken only when its `cnf.jkt`
is exactly the thumbprint of the proof's key. An empty, a truncated, an extended, a same-length
other and a non-ASCII (or lone surrogate) `cnf.jkt` are each refused with a 401 invalid_token DPoP challenge."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mcp_agent_kit.auth.dpop import DpopVerifier, Request
from mcp_agent_kit.auth.jwks import JwksCache
from mcp_agent_kit.auth.resource import ProtectedResource, Refusal
from mcp_agent_kit.auth.tokens import TokenValidator
from tests.auth.fake_as import FakeAuthorizationServer, jwk_thumbprint
from tests.auth.test_dpop import EC_KEY, NOW, RESOURCE, _jwk, proof
from tests.forgeries import text_forgeries

JKT = jwk_thumbprint(_jwk(EC_KEY.public_key()))
NEAR = {**text_forgeries(JKT), "lone surrogate": JKT[:-1] + "\ud800"}  # JSON may carry one


@pytest.fixture(scope="module")
def authority() -> Iterator[FakeAuthorizationServer]:
    server = FakeAuthorizationServer(dpop=True)
    yield server
    server.close()


@pytest.fixture
def resource(authority: FakeAuthorizationServer) -> ProtectedResource:
    validator = TokenValidator(issuer=authority.issuer, audience=RESOURCE, jwks=JwksCache(authority.issuer + "/jwks"),
                               clock=lambda: time.time())
    return ProtectedResource(validator, resource=RESOURCE, authorization_servers=[authority.issuer],
                             scopes=["mcp:tools"], dpop=DpopVerifier(clock=lambda: NOW))


def _send(resource: ProtectedResource, token: str) -> str:
    return resource.authenticate(f"DPoP {token}", request=Request("POST", RESOURCE, (proof(token),))).subject


def test_the_genuine_thumbprint_binds(resource: ProtectedResource, authority: FakeAuthorizationServer) -> None:
    assert _send(resource, authority.token(RESOURCE, cnf={"jkt": JKT})) == "alice"


@pytest.mark.parametrize("case", sorted(NEAR))
def test_a_near_miss_thumbprint_is_refused(case: str, resource: ProtectedResource,
                                           authority: FakeAuthorizationServer) -> None:
    token = authority.token(RESOURCE, cnf={"jkt": NEAR[case]})
    with pytest.raises(Refusal, match=r"not bound to the DPoP proof's key \(cnf.jkt\)") as refused:
        _send(resource, token)
    assert refused.value.status == 401
    assert ', DPoP error="invalid_token"' in refused.value.challenge
