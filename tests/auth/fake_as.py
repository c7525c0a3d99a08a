"""A minimal authorization server for tests: RFC 8414 metadata and a JWK Set on loopback; tokens are
signed with PyJWT (the oracle), never by our code. Counts the JWK Set fetches."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


class FakeAuthorizationServer:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwks_fetches = 0
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

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def metadata(self) -> dict[str, Any]:
        return {"issuer": self.issuer, "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token", "jwks_uri": self.issuer + "/jwks",
                "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"]}

    def token(self, audience: str, subject: str = "alice", scope: str = "mcp:tools", **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": audience, "sub": subject, "scope": scope, "iat": now, "exp": now + 300,
                   "client_id": "test-client", **claims}
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": "k1", "typ": "at+jwt"})

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
