"""A minimal authorization server for tests: RFC 8414 metadata and a JWK Set on loopback; tokens are
signed with PyJWT (the oracle), never by our code. Counts the JWK Set fetches. With `dpop=True` it
also has a token endpoint for the client_credentials grant that binds each token to the key of the
request's DPoP proof (verified with PyJWT; `cnf.jkt` is the RFC 7638 thumbprint, computed here). With
`code=True` it runs the authorization-code grant for a browser that needs no person: /authorize approves at
once (or answers `deny`, an error code) by redirecting to the registered redirect URI, /token checks the code,
redirect URI, client and PKCE S256 verifier (each code once) and signs a token for `subject` whose audience is
the request's `resource` (or `audience` when set), and /register (RFC 7591) registers public clients."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


def jwk_thumbprint(jwk: dict[str, Any]) -> str:
    members = ("crv", "kty", "x", "y") if jwk["kty"] == "EC" else ("e", "kty", "n")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()


class FakeAuthorizationServer:
    def __init__(self, dpop: bool = False, code: bool = False) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwks_fetches = 0
        self.dpop = dpop
        self.audience = ""  # the resource tokens from the token endpoint are for (tests set it)
        self.code, self.deny, self.subject = code, "", "alice"
        self.codes: dict[str, dict[str, str]] = {}  # code -> the authorization request it answers
        self.clients: dict[str, list[str]] = {}  # client id -> its redirect URIs
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if outer.code and self.path.startswith("/authorize?"):
                    self.send_response(302)
                    self.send_header("Location", outer.authorize(self.path))
                    self.end_headers()
                    return
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
                data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if outer.code and self.path == "/register":
                    self.reply(201, outer.register(json.loads(data)))
                    return
                form = parse_qs(data.decode())
                if outer.code and form.get("grant_type") == ["authorization_code"]:
                    self.reply(*outer.exchange({k: v[0] for k, v in form.items()}))
                    return
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
        if self.code:
            found.update(registration_endpoint=self.issuer + "/register", grant_types_supported=["authorization_code"],
                         token_endpoint_auth_methods_supported=["none"])
        if self.dpop:
            found.update(grant_types_supported=["client_credentials"], dpop_signing_alg_values_supported=["ES256"],
                         token_endpoint_auth_methods_supported=["client_secret_post"])
        return found

    def authorize(self, target: str) -> str:
        """Where /authorize sends the browser: the redirect URI with a code (or `deny`) and the state."""
        asked = {k: v[0] for k, v in parse_qs(urlsplit(target).query).items()}
        if asked.get("redirect_uri") not in self.clients.get(asked.get("client_id", ""), []):
            return self.issuer + "/unknown-client"
        if self.deny:
            answer = {"error": self.deny, "state": asked.get("state", "")}
        else:
            code = secrets.token_urlsafe(16)
            self.codes[code] = asked
            answer = {"code": code, "state": asked.get("state", ""), "iss": self.issuer}
        return f"{asked['redirect_uri']}?{urlencode(answer)}"

    def register(self, body: dict[str, Any]) -> dict[str, Any]:
        client_id = f"client-{len(self.clients) + 1}"
        self.clients[client_id] = list(body.get("redirect_uris") or [])
        return {**body, "client_id": client_id, "token_endpoint_auth_method": "none"}

    def exchange(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        asked = self.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "").encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
        if asked is None or asked["code_challenge"] != challenge or asked["redirect_uri"] != form.get("redirect_uri") \
                or asked["client_id"] != form.get("client_id"):
            return 400, {"error": "invalid_grant"}
        token = self.token(self.audience or form.get("resource", ""), self.subject)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": 300}

    def token(self, audience: str, subject: str = "alice", scope: str = "mcp:tools", **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": audience, "sub": subject, "scope": scope, "iat": now, "exp": now + 300,
                   "client_id": "test-client", **claims}
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": "k1", "typ": "at+jwt"})

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
