"""The OAuth client's pure parts: WWW-Authenticate parsing, discovery URLs and the resource rule,
ES256 signing (checked by `cryptography` and by our own verifier), the token cache file, and the
gateway's `oauth` settings."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from mcp_agent_kit.auth.jose import Key, b64url_decode, parse_compact, thumbprint
from mcp_agent_kit.auth.signer import EcKey
from mcp_agent_kit.client.oauth.challenge import parse, pick
from mcp_agent_kit.client.oauth.discovery import prm_urls, resource_allowed
from mcp_agent_kit.client.oauth.grants import ClientAuth, Dpop, pkce_pair
from mcp_agent_kit.client.oauth.store import FileStore, Registration, Token
from mcp_agent_kit.gateway import ConfigError, parse_config


def test_challenges_are_parsed_per_rfc_9110() -> None:
    header = ('Bearer realm="x", error="insufficient_scope", scope="a b", x_scope="no", '
              'error_description="say \\"hi\\"", DPoP algs="ES256"\nbasic realm=y')
    found = parse(header)
    assert [c.scheme for c in found] == ["bearer", "dpop", "basic"]
    assert found[0].params == {"realm": "x", "error": "insufficient_scope", "scope": "a b", "x_scope": "no",
                               "error_description": 'say "hi"'}
    assert found[1].params == {"algs": "ES256"} and found[2].params == {"realm": "y"}
    chosen = pick(header)  # DPoP before Bearer when both are offered
    assert chosen is not None and chosen.scheme == "dpop" and chosen.params == found[1].params
    assert pick("Negotiate abc==") is None
    assert parse("") == [] and parse(",,,") == []
    assert parse('Bearer RESOURCE_METADATA="u"')[0].get("resource_metadata") == "u"


def test_prm_urls_and_the_resource_rule() -> None:
    assert prm_urls("http://h:1/mcp", "http://h:1/custom.json") == [
        "http://h:1/custom.json", "http://h:1/.well-known/oauth-protected-resource/mcp",
        "http://h:1/.well-known/oauth-protected-resource"]
    assert prm_urls("http://h:1", None) == ["http://h:1/.well-known/oauth-protected-resource"]
    assert resource_allowed("http://h:1", "http://h:1/mcp")
    assert resource_allowed("http://h:1/mcp", "http://h:1/mcp/")
    assert not resource_allowed("http://h:1/mc", "http://h:1/mcp")  # segments, not characters
    assert not resource_allowed("https://evil.example.com/mcp", "http://h:1/mcp")
    assert not resource_allowed("http://h:2/mcp", "http://h:1/mcp")


def _pem() -> tuple[ec.EllipticCurvePrivateKey, str]:
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return private, pem


def test_es256_assertions_verify_with_cryptography_and_with_our_verifier() -> None:
    private, pem = _pem()
    key = EcKey.from_pem(pem)
    numbers = private.public_key().public_numbers()
    jwk = key.public_jwk()
    assert int.from_bytes(b64url_decode(jwk["x"]), "big") == numbers.x
    token = key.sign_jwt({"iss": "me", "n": 1}, {"typ": "JWT"})
    jws = parse_compact(token)
    assert jws.header == {"alg": "ES256", "typ": "JWT"} and jws.claims() == {"iss": "me", "n": 1}
    r, s = int.from_bytes(jws.signature[:32], "big"), int.from_bytes(jws.signature[32:], "big")
    private.public_key().verify(encode_dss_signature(r, s), jws.signing_input, ec.ECDSA(hashes.SHA256()))
    assert Key.from_jwk(jwk).verify("ES256", jws.signing_input, jws.signature)
    assert "d" not in jwk and str(key.thumbprint()) in repr(key) and str(private.private_numbers().private_value) \
        not in repr(key)


def test_other_keys_and_garbage_pem_are_refused() -> None:
    other = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    for bad in (other, "not a key", "-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----",
                "-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----"):
        with pytest.raises(ValueError):
            EcKey.from_pem(bad)


def test_dpop_proofs_and_client_authentication() -> None:
    dpop = Dpop()
    proof = parse_compact(dpop.proof("POST", "http://as/token?x=1#f", access_token="tok"))
    claims = proof.claims()
    assert proof.header["typ"] == "dpop+jwt" and "d" not in proof.header["jwk"]
    assert claims["htu"] == "http://as/token" and claims["htm"] == "POST" and "nonce" not in claims
    assert Key.from_jwk(proof.header["jwk"]).verify("ES256", proof.signing_input, proof.signature)
    assert dpop.remember("http://as/token", {"dpop-nonce": "n1"})
    assert not dpop.remember("http://as/x", {"dpop-nonce": "n1"})  # the same nonce again: no retry
    assert parse_compact(dpop.proof("POST", "http://as/token")).claims()["nonce"] == "n1"
    assert thumbprint(proof.header["jwk"]) == dpop.key.thumbprint()
    form: dict[str, str] = {}
    headers: dict[str, str] = {}
    ClientAuth("id:1", "client_secret_basic", "s/2").apply(form, headers)
    assert headers["Authorization"] == "Basic aWQlM0ExOnMlMkYy" and "client_secret" not in form
    form = {}
    ClientAuth("id", "client_secret_post", "s").apply(form, {})
    assert form == {"client_id": "id", "client_secret": "s"}
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128 and challenge != verifier


def test_the_token_cache_is_0600_and_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "oauth.json"
    store = FileStore(path)
    token = Token("secret-token", "Bearer", "https://r/mcp", "https://as", "c1", refresh_token="rt")
    store.put_token(token)
    store.put_token(Token("bound", "DPoP", "https://r/mcp", "https://as", "c2", dpop=True))  # kept in memory only
    store.put_registration(Registration("https://as", "c1", "sec", "client_secret_basic", "http://127.0.0.1:1/cb"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = FileStore(path)
    assert [t.access_token for t in again.tokens()] == ["secret-token"]
    assert again.registration("https://as", "http://127.0.0.1:1/cb") is not None
    assert again.registration("https://other", "http://127.0.0.1:1/cb") is None  # bound to its issuer
    assert "secret-token" not in json.dumps(token.public())
    assert again.forget("https://r/mcp") == 1 and FileStore(path).tokens() == []
    path.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read the token cache"):
        FileStore(path)


def test_gateway_oauth_settings_are_checked() -> None:
    good = parse_config({"mcpServers": {"a": {"url": "https://x/mcp", "oauth": {"clientId": "c", "scopes": ["s"]}}}})
    assert good["a"]["oauth"] == {"clientId": "c", "scopes": ["s"]}
    assert parse_config({"mcpServers": {"a": {"url": "https://x/mcp"}}})["a"]["oauth"] is None
    for bad, words in [({"clientID": "c"}, "unknown key 'clientID'"), ({"scopes": "s"}, "scopes must be a list"),
                       ({"redirectPort": True}, "redirectPort must be a whole number"), ([], "must be an object"),
                       ({"redirectPort": 70000}, "redirectPort must be a port number")]:
        with pytest.raises(ConfigError, match=words):
            parse_config({"mcpServers": {"a": {"url": "https://x/mcp", "oauth": bad}}})


def test_the_browser_step_receives_the_redirect_on_loopback() -> None:
    import threading
    import time
    import urllib.request

    from mcp_agent_kit.client.oauth import BrowserRedirect

    redirect = BrowserRedirect(0, open_browser=False, wait=20)
    answer: dict[str, dict[str, str]] = {}
    waiting = threading.Thread(target=lambda: answer.update(got=redirect.authorize("https://as.example/authorize?x=1")))
    waiting.start()
    for _ in range(200):  # the listener is up once the URL is printed; retry until it answers (bounded)
        try:
            with urllib.request.urlopen(redirect.redirect_uri + "?code=c%201&state=s&iss=https%3A%2F%2Fas", timeout=2):
                break
        except OSError:
            time.sleep(0.05)
    waiting.join(20)
    assert answer["got"] == {"code": "c 1", "state": "s", "iss": "https://as"}
    from mcp_agent_kit.client.oauth import OAuthError

    with pytest.raises(OAuthError, match="refusing the authorization URL"):
        BrowserRedirect(0, open_browser=False, wait=1).authorize("http://as.example/authorize")  # http, not loopback


def test_the_docs_gateway_config_is_valid() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "oauth.md").read_text()
    block = next(b for b in text.split("```json\n")[1:] if '"mcpServers"' in b).split("```")[0]
    parsed = parse_config(json.loads(block))
    assert parsed["crm"]["oauth"]["scopes"] == ["crm:read"]
    assert parsed["billing"]["oauth"]["clientSecretEnv"] == "BILLING_SECRET"
