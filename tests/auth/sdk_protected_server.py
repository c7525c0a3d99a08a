"""An official-SDK MCP server protected by the SDK's own authorization server (mcp.server.auth).

`python sdk_protected_server.py PORT [EXPIRES_IN [sse]]`: serves `/mcp` with one tool (`add`), the SDK's
AS routes (RFC 8414 metadata, /register, /authorize, /token) and its protected-resource metadata
on 127.0.0.1:PORT. The provider keeps everything in memory and approves every authorization at
once (it redirects straight back with a code), so a headless client can complete the flow; it
binds tokens to the RFC 8707 resource the client asked for and the SDK refuses any other. With
`sse` (run by the legacy oracle, mcp 1.x) it serves the 2024-11-05 HTTP+SSE transport instead: the
GET stream at `/sse` and the POST endpoint `/messages/`, both behind the same bearer check.
"""

from __future__ import annotations

import secrets
import sys
import time

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # mcp 1.x, the legacy oracle
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[assignment,no-redef]
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[1])
EXPIRES_IN = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
SSE = sys.argv[3:] == ["sse"]
BASE = f"http://127.0.0.1:{PORT}"


class Provider:
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        assert client.client_id
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            subject="alice")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=ISSUER)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(16)}", f"rt-{secrets.token_urlsafe(16)}"
        self.tokens[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + EXPIRES_IN, resource=resource, subject="alice")
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=EXPIRES_IN, scope=" ".join(scopes), refresh_token=refresh)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.tokens.get(token)
        return found if found is not None and (found.expires_at or 0) > time.time() else None

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)


AUTH = AuthSettings(
    issuer_url=BASE, resource_server_url=f"{BASE}/{'sse' if SSE else 'mcp'}", validate_token_resource=True,
    client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp:tools"],
                                                          default_scopes=["mcp:tools"]),
    required_scopes=["mcp:tools"],
)
ISSUER = str(AUTH.issuer_url)  # as the SDK publishes it (1.x adds a trailing slash)
app = MCPServer("protected", auth_server_provider=Provider(), auth=AUTH)


@app.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


uvicorn.run(app.sse_app() if SSE else app.streamable_http_app(), host="127.0.0.1", port=PORT, log_level="warning")
