"""client.oauth.factory: an `OAuth` for one server from plain settings (gateway config, CLI flags).

Settings (every key optional): `clientId`, `clientSecret` or `clientSecretEnv` (the name of an
environment variable holding it), `issuer` (the authorization server pre-registered credentials
belong to), `clientMetadataUrl`, `scopes` (a list), `redirectPort` (the loopback port for the
login redirect, default DEFAULT_PORT, so a dynamic registration is reused across logins),
`headless` (follow the redirect without a browser: for servers that approve on their own, as in
CI), `openBrowser` (default true), `login` (default true; false: only a cached token and its
refresh, never a new login — `probe` without `--login`). Tokens go to the FileStore under the user's config directory.
Rules: validation raises ValueError naming the key; nothing here talks to a server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcp_agent_kit.client.oauth.redirect import BrowserRedirect, HeadlessRedirect, Redirector
from mcp_agent_kit.client.oauth.session import OAuth, OAuthConfig
from mcp_agent_kit.client.oauth.store import FileStore, TokenStore

DEFAULT_PORT = 8976
KEYS = {"clientId": str, "clientSecret": str, "clientSecretEnv": str, "issuer": str, "clientMetadataUrl": str,
        "scopes": list, "redirectPort": int, "headless": bool, "openBrowser": bool, "login": bool}

_KINDS = {str: "string", list: "list", int: "whole number", bool: "boolean (true or false)"}


def check_settings(settings: Any, where: str) -> dict[str, Any]:
    """The settings, checked: an object of the KEYS above with the right types."""
    if not isinstance(settings, dict):
        raise ValueError(f"{where} must be an object")
    for key, value in settings.items():
        kind = KEYS.get(key)
        if kind is None:
            raise ValueError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"{where}: {key} must be a {_KINDS[kind]}")
    if not all(isinstance(s, str) for s in settings.get("scopes", [])):
        raise ValueError(f"{where}: scopes must be a list of strings")
    if not 0 <= settings.get("redirectPort", DEFAULT_PORT) <= 65535:
        raise ValueError(f"{where}: redirectPort must be a port number (0 for any free port)")
    return dict(settings)


def _secret(settings: dict[str, Any]) -> str | None:
    name = settings.get("clientSecretEnv")
    if name is None:
        return settings.get("clientSecret")
    value = os.environ.get(name)
    if not value:
        raise ValueError(f"clientSecretEnv names {name}, which is not set in the environment")
    return value


def redirector_for(settings: dict[str, Any]) -> Redirector:
    port = int(settings.get("redirectPort", DEFAULT_PORT))
    if settings.get("headless"):
        return HeadlessRedirect(f"http://127.0.0.1:{port or DEFAULT_PORT}/callback")
    return BrowserRedirect(port, open_browser=bool(settings.get("openBrowser", True)))


def oauth_for(url: str, settings: dict[str, Any], store: TokenStore | None = None,
              store_path: Path | None = None) -> OAuth:
    config = OAuthConfig(client_id=settings.get("clientId"), client_secret=_secret(settings),
                         issuer=settings.get("issuer"), client_metadata_url=settings.get("clientMetadataUrl"),
                         scopes=list(settings.get("scopes", [])), login=bool(settings.get("login", True)))
    return OAuth(url, config, redirector=redirector_for(settings),
                 store=store if store is not None else FileStore(store_path))
