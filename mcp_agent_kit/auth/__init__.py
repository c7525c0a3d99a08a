"""auth: OAuth 2.1 for MCP and A2A — the resource-server side (token validation, metadata documents).

Rules: standard library only; imports `wire`-level facts at most, never servers or transports.
"""

from mcp_agent_kit.auth.jwks import JwksCache
from mcp_agent_kit.auth.tokens import Grant, TokenError, TokenValidator

__all__ = ["Grant", "JwksCache", "TokenError", "TokenValidator"]
