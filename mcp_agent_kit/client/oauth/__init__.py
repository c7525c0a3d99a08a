"""client.oauth: the OAuth 2.1 client that lets the kit's client and gateway reach protected MCP servers.

`OAuth` (session.py) is what an HttpChannel consults: it adds the access token (Bearer or DPoP) to
each request to its one server, and on a 401/403 challenge runs discovery (discovery.py),
registration, the grant (grants.py) and returns whether to retry. Tokens and registrations live in
a `TokenStore` (store.py), the browser step in a redirector (redirect.py). Rules: standard library
only; imports client-level code, `auth` (JOSE, metadata URLs) and `wire` at most; never the server
side or the CLI; a token is never logged and never sent to another origin than the server's.
"""

from mcp_agent_kit.client.oauth.errors import OAuthError
from mcp_agent_kit.client.oauth.redirect import BrowserRedirect, HeadlessRedirect
from mcp_agent_kit.client.oauth.session import OAuth, OAuthConfig
from mcp_agent_kit.client.oauth.store import FileStore, MemoryStore, MemoryTokenStore, TokenStore

__all__ = ["BrowserRedirect", "FileStore", "HeadlessRedirect", "MemoryStore", "MemoryTokenStore", "OAuth",
           "OAuthConfig", "OAuthError", "TokenStore"]
