"""client.oauth.errors: the exceptions the OAuth client raises. Rules: no imports of ours."""

from __future__ import annotations


class OAuthError(Exception):
    """Authorization could not be obtained (a refused discovery, registration, grant or check)."""


class LoginNeeded(OAuthError):
    """No usable token, and this client may not start a login (OAuthConfig.login is False)."""
