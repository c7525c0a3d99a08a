"""A minimal authorization server for tests: RFC 8414 metadata and a JWK Set on loopback; tokens are
signed with PyJWT (the oracle), never by our code. Counts the JWK Set fetches. With `dpop=True` it
also has a token endpoint for the client_credentials grant that binds each token to the key of the
request's DPoP proof (verified with PyJWT; `cnf.jkt` is the RFC 7638 thumbprint, computed here)."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    members = ("crv", "kty", "x", "y") if jwk["kty"] == "EC" else ("e", "kty", "n")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()


class FakeAuthorizationServer:
    def __init__(self, dpop: bool = False) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwks_fetches = 0
        self.dpop = dpop
        self.audience = ""  # the resource tokens from the token endpoint are for (tests set it)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/oauth-authorization-server":
                    body = outer.metadata()
                elif self.path == "/jwks":
                    outer.jwks_fetches += 1
                    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(outer.key.public_key()))
                    body = {"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
                proof = self.headers.get("DPoP")
                if not outer.dpop or form.get("grant_type") != ["client_credentials"] or not proof:
                    self.send_error(400)
                    return
                jwk = jwt.get_unverified_header(proof)["jwk"]
                jwt.decode(proof, jwt.algorithms.ECAlgorithm.from_jwk(json.dumps(jwk)), algorithms=["ES256"])
                token = outer.token(outer.audience, cnf={"jkt": jwk_thumbprint(jwk)})
                data = json.dumps({"access_token": token, "token_type": "DPoP", "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def metadata(self) -> dict[str, Any]:
        found = {"issuer": self.issuer, "authorization_endpoint": self.issuer + "/authorize",
                 "token_endpoint": self.issuer + "/token", "jwks_uri": self.issuer + "/jwks",
                 "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"]}
        if self.dpop:
            found.update(grant_types_supported=["client_credentials"], dpop_signing_alg_values_supported=["ES256"],
                         token_endpoint_auth_methods_supported=["client_secret_post"])
        return found

    def token(self, audience: str, subject: str = "alice", scope: str = "mcp:tools", **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": audience, "sub": subject, "scope": scope, "iat": now, "exp": now + 300,
                   "client_id": "test-client", **claims}
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": "k1", "typ": "at+jwt"})

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
