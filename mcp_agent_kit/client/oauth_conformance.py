"""client.oauth_conformance: the OAuth client the conformance client uses against the suite's fakes.

The suite's fake authorization server approves at once and redirects to the client's
`redirect_uri`, so the redirect is followed headlessly (nothing listens on it); the client ID
metadata document URL is the constant both reference clients use. Pre-registered credentials,
keys and assertions come from MCP_CONFORMANCE_CONTEXT; the grant comes from the table below (the
extension scenarios are the only ones not on the authorization-code flow). Rules: configuration
only — every decision is the OAuth client's ordinary behaviour; tokens stay in memory.
"""

from __future__ import annotations

from typing import Any

from mcp_agent_kit.client.oauth import HeadlessRedirect, MemoryTokenStore, OAuth, OAuthConfig

CIMD_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"
GRANTS = {
    "auth/client-credentials-basic": "client_credentials",
    "auth/client-credentials-jwt": "client_credentials",
    "auth/wif-jwt-bearer": "jwt_bearer",
    "auth/enterprise-managed-authorization": "token_exchange",
}
_EXCHANGE_KEYS = ("idp_client_id", "idp_client_secret", "idp_id_token", "idp_issuer", "idp_token_endpoint")


def conformance_oauth(url: str, scenario: str, context: dict[str, Any]) -> OAuth:
    def text(name: str) -> str | None:
        value = context.get(name)
        return value if isinstance(value, str) and value else None

    config = OAuthConfig(
        client_id=text("client_id"), client_secret=text("client_secret"), private_key_pem=text("private_key_pem"),
        client_metadata_url=CIMD_URL, client_name="mcp-agent-kit-conformance",
        grant=GRANTS.get(scenario, "authorization_code"), assertion=text("valid_jwt"),
        exchange={k: v for k in _EXCHANGE_KEYS if (v := text(k)) is not None},
    )
    return OAuth(url, config, redirector=HeadlessRedirect(REDIRECT_URI), store=MemoryTokenStore())
