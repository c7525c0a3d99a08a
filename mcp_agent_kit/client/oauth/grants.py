"""client.oauth.grants: requests to an authorization server's token endpoint, and DPoP proofs.

Client authentication (`client_secret_basic`, `client_secret_post`, `none`, `private_key_jwt`
with an ES256 assertion whose `aud` is the issuer, RFC 7523 §2.2); the grants `authorization_code`
(with the PKCE verifier), `refresh_token`, `client_credentials`, `jwt-bearer` (RFC 7523 §2.1) and
`token-exchange` (RFC 8693), each carrying the RFC 8707 `resource`. With DPoP (RFC 9449) every
token request carries a fresh proof, and an authorization server's `use_dpop_nonce` answer is
retried once with its nonce. Rules: no discovery or registration here; secrets never logged.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from mcp_agent_kit.auth.jose import b64url_encode
from mcp_agent_kit.auth.signer import EcKey
from mcp_agent_kit.client.oauth.errors import OAuthError
from mcp_agent_kit.client.oauth.net import Response, Send, origin, post_form

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


@dataclass
class ClientAuth:
    """How this client proves itself at one token endpoint."""

    client_id: str
    method: str = "none"
    secret: str | None = None
    key: EcKey | None = None
    issuer: str = ""

    def apply(self, form: dict[str, str], headers: dict[str, str]) -> None:
        if self.method == "client_secret_basic":
            pair = f"{quote(self.client_id, safe='')}:{quote(self.secret or '', safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
            form["client_id"] = self.client_id  # not a second credential; some servers (the Python SDK) need it
        elif self.method == "client_secret_post":
            form.update(client_id=self.client_id, client_secret=self.secret or "")
        elif self.method == "private_key_jwt":
            if self.key is None:
                raise OAuthError("private_key_jwt needs a private key")
            now = int(time.time())
            claims = {"iss": self.client_id, "sub": self.client_id, "aud": self.issuer, "iat": now,
                      "exp": now + 300, "jti": secrets.token_urlsafe(16)}
            assertion = self.key.sign_jwt(claims, {"typ": "JWT"})
            form.update(client_assertion_type=ASSERTION_TYPE, client_assertion=assertion)
        else:
            form["client_id"] = self.client_id


@dataclass
class Dpop:
    """A DPoP key and the nonces servers handed out (RFC 9449)."""

    key: EcKey = field(default_factory=EcKey.generate)
    nonces: dict[str, str] = field(default_factory=dict)  # origin -> latest nonce

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        parts = urlsplit(url)
        htu = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        claims: dict[str, Any] = {"jti": secrets.token_urlsafe(16), "htm": method, "htu": htu, "iat": int(time.time())}
        if access_token is not None:
            claims["ath"] = b64url_encode(hashlib.sha256(access_token.encode()).digest())
        nonce = self.nonces.get(origin(url))
        if nonce:
            claims["nonce"] = nonce
        return self.key.sign_jwt(claims, {"typ": "dpop+jwt", "jwk": self.key.public_jwk()})

    def remember(self, url: str, headers: dict[str, str]) -> bool:
        """Keep a `DPoP-Nonce` answer; whether it is a new one."""
        nonce = headers.get("dpop-nonce")
        if not nonce or self.nonces.get(origin(url)) == nonce:
            return False
        self.nonces[origin(url)] = nonce
        return True


def pkce_pair() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge), RFC 7636 §4.1-4.2."""
    verifier = b64url_encode(secrets.token_bytes(32))
    return verifier, b64url_encode(hashlib.sha256(verifier.encode("ascii")).digest())


def request_token(transport: Send, endpoint: str, form: dict[str, str], auth: ClientAuth | None,
                  dpop: Dpop | None) -> dict[str, Any]:
    """POST one token request; the token response, or OAuthError naming the server's error."""
    reply: Response | None = None
    for _ in range(2):
        sent, headers = dict(form), dict[str, str]()
        if auth is not None:
            auth.apply(sent, headers)
        if dpop is not None:
            headers["DPoP"] = dpop.proof("POST", endpoint)
        reply = post_form(transport, endpoint, sent, headers)
        if dpop is None or reply.status != 400 or not dpop.remember(endpoint, reply.headers):
            break
    assert reply is not None
    if reply.status != 200:
        detail = ""
        try:
            body = reply.json()
            described = f" ({body['error_description']})" if body.get("error_description") else ""
            detail = f": {body.get('error')}{described}"
        except OAuthError:
            pass
        raise OAuthError(f"the token endpoint {endpoint} answered HTTP {reply.status}{detail}")
    answer = reply.json()
    if not isinstance(answer.get("access_token"), str) or not answer["access_token"]:
        raise OAuthError(f"the token endpoint {endpoint} sent no access_token")
    return answer
