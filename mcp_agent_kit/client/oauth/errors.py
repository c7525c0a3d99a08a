"""client.oauth.errors: the one exception the OAuth client raises. Rules: no imports of ours."""

from __future__ import annotations


class OAuthError(Exception):
    """Authorization could not be obtained (a refused discovery, registration, grant or check)."""
