"""A real authorization server for tests: the official MCP SDK's `mcp.server.auth` routes (RFC 8414
metadata, RFC 7591 registration, the authorization endpoint with PKCE, the token endpoint with RFC
8707 resource indicators) served by uvicorn on loopback. The provider below only stores clients and
codes and auto-approves (as the conformance suite's fake does); its access tokens are RS256 JWTs
signed by PyJWT with `aud` = the resource the client asked for, published at `/jwks`."""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class Provider:
    def __init__(self, issuer: str, key: rsa.RSAPrivateKey) -> None:
        self.issuer = issuer
        self.key = key
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.issued: list[dict[str, Any]] = []
        self.tokens: list[str] = []
        self.audience: str | None = None  # set: every token names this audience instead of the one asked for

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["mcp:tools"], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            subject="alice")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=self.issuer)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(code.code, None)
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.audience or code.resource or "", "sub": code.subject,
                  "client_id": client.client_id,
                  "scope": " ".join(code.scopes), "iat": now, "exp": now + 300, "jti": secrets.token_hex(8)}
        self.issued.append(claims)
        token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "sdk-as", "typ": "at+jwt"})
        self.tokens.append(token)
        return OAuthToken(access_token=token, token_type="Bearer", expires_in=300, scope=" ".join(code.scopes))

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        raise NotImplementedError

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SdkAuthorizationServer:
    def __init__(self) -> None:
        port = free_port()
        self.issuer = str(AnyHttpUrl(f"http://127.0.0.1:{port}"))  # as the SDK's metadata spells it (a "/" path)
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.provider = Provider(self.issuer, self.key)
        routes = create_auth_routes(self.provider, AnyHttpUrl(self.issuer),
                                    client_registration_options=ClientRegistrationOptions(enabled=True,
                                                                                          valid_scopes=["mcp:tools"],
                                                                                          default_scopes=["mcp:tools"]))

        async def jwks(request: Request) -> JSONResponse:
            public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
            return JSONResponse({"keys": [{**public, "kid": "sdk-as", "use": "sig", "alg": "RS256"}]})

        app = Starlette(routes=[*routes, Route("/jwks", jwks)])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the authorization server did not start"
            time.sleep(0.02)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def protected_server() -> Any:
    """The MCP server the OAuth tests protect: one tool, `whoami`, that says its text back."""
    from mcp_agent_kit import Server

    server = Server("protected")

    @server.tool
    def whoami(text: str) -> str:
        "Say it back."
        return text

    return server
