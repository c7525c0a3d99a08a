"""The protected resource's side of the conversation: RFC 9728 metadata and RFC 6750 challenges."""

from __future__ import annotations

import json

import pytest

from mcp_agent_kit.auth.resource import ProtectedResource, Refusal
from tests.auth.test_tokens import ISSUER, JWKS_URL, RESOURCE, RSA, Keys, public_jwk, token, validator


@pytest.fixture
def resource() -> ProtectedResource:
    return ProtectedResource(validator(Keys(public_jwk(RSA, "r1")), required_scopes=["mcp:read"]),
                             resource=RESOURCE, authorization_servers=[ISSUER], scopes=["mcp:read"], name="demo")


def refusal(resource: ProtectedResource, authorization: str | None, required: tuple[str, ...] = ()) -> Refusal:
    with pytest.raises(Refusal) as caught:
        resource.authenticate(authorization, required)
    return caught.value


def test_the_metadata_document_and_where_it_lives(resource: ProtectedResource) -> None:
    assert json.loads(resource.document) == {
        "resource": RESOURCE, "authorization_servers": [ISSUER], "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp:read"], "resource_name": "demo"}
    assert resource.metadata_url == "https://mcp.example/.well-known/oauth-protected-resource/mcp"
    assert resource.metadata_paths == {"/.well-known/oauth-protected-resource/mcp",
                                       "/.well-known/oauth-protected-resource"}
    assert JWKS_URL.startswith(ISSUER)


@pytest.mark.parametrize("sent", [None, "", "Basic dXNlcjpwYXNz", "Bearer "])
def test_no_token_is_401_without_an_error_code(resource: ProtectedResource, sent: str | None) -> None:
    got = refusal(resource, sent)
    assert got.status == 401
    prm = 'resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="mcp:read"'
    assert got.challenge == f'Bearer {prm}, DPoP algs="ES256 RS256 PS256", {prm}'


def test_a_bad_token_is_401_invalid_token(resource: ProtectedResource) -> None:
    got = refusal(resource, "Bearer " + token(aud="https://other.example/mcp"))
    assert got.status == 401
    assert got.challenge.startswith('Bearer error="invalid_token", error_description="the token is meant for another')
    assert 'resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"' in got.challenge


def test_a_missing_scope_is_403_naming_all_it_needs(resource: ProtectedResource) -> None:
    got = refusal(resource, "bearer " + token(scope="mcp:read"), ("tools:admin",))
    assert got.status == 403
    assert got.challenge.startswith('Bearer error="insufficient_scope"')
    assert 'scope="mcp:read tools:admin"' in got.challenge


def test_a_good_token_gives_its_grant(resource: ProtectedResource) -> None:
    assert resource.authenticate("Bearer " + token()).principal == "oauth:alice"
