"""gateway.auth_cli: `mcp-agent-kit auth login URL` / `auth status [URL]` / `auth logout [URL]`.

`login` connects to the server with the OAuth client (client/oauth): the server's 401 starts
discovery, registration and the browser step (or the headless redirect with --headless), and the
token lands in the token cache; a server that asks for nothing but publishes protected-resource
metadata is logged in to anyway (discovery from its well-known URLs). `status` lists the cached
tokens (never their values); `logout` forgets the tokens of one server, or all with --all.
Rules: a front door — argument handling and output only; user mistakes are one stderr line
(cli_common).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from mcp_agent_kit.cli_common import CliError, Parser, port_number, prog
from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.client import Client
from mcp_agent_kit.client.inputs import ClientError
from mcp_agent_kit.client.oauth.discovery import protected_resource, resource_allowed
from mcp_agent_kit.client.oauth.errors import OAuthError
from mcp_agent_kit.client.oauth.factory import DEFAULT_PORT, check_settings, oauth_for
from mcp_agent_kit.client.oauth.net import fetcher_for
from mcp_agent_kit.client.oauth.store import FileStore, config_dir
from mcp_agent_kit.wire.jsonrpc import RpcError


def parser() -> Parser:
    top = Parser(prog=prog("auth"), description="log in to OAuth-protected MCP servers and manage the token cache")
    top.add_argument("--cache", type=Path, default=None, metavar="FILE",
                     help=f"the token cache (default: {config_dir().name}/oauth.json under the user's config dir)")
    commands = top.add_subparsers(dest="command", required=True, metavar="login | status | logout")
    login = commands.add_parser("login", help="log in to a server and cache its token")
    login.add_argument("url", metavar="URL", help="the MCP server's URL")
    add_login_options(login)
    status = commands.add_parser("status", help="list the cached tokens (never their values)")
    status.add_argument("url", nargs="?", metavar="URL", help="only this server's")
    logout = commands.add_parser("logout", help="forget the cached tokens of a server")
    logout.add_argument("url", nargs="?", metavar="URL", help="the server to log out of")
    logout.add_argument("--all", action="store_true", help="forget every cached token")
    return top


def add_login_options(parser: Any) -> None:
    """The options of a login, shared by `auth login` and `probe --login`."""
    parser.add_argument("--client-id", help="a client id registered with the server's authorization server")
    parser.add_argument("--client-secret-env", metavar="VAR", help="the environment variable holding its secret")
    parser.add_argument("--scopes", default="", metavar="S1,S2", help="scopes to ask for besides the server's")
    parser.add_argument("--redirect-port", type=port_number, default=DEFAULT_PORT,
                        help=f"loopback port of the login redirect (default {DEFAULT_PORT})")
    parser.add_argument("--headless", action="store_true",
                        help="follow the redirect without a browser (servers that approve on their own, CI)")
    parser.add_argument("--no-browser", action="store_true", help="print the URL only; do not open a browser")


def login_settings(args: Any, where: str) -> dict[str, Any]:
    """The client/oauth settings those options give, checked (ValueError naming the problem)."""
    settings: dict[str, Any] = {"redirectPort": args.redirect_port, "headless": args.headless,
                                "openBrowser": not args.no_browser,
                                "scopes": [s.strip() for s in args.scopes.split(",") if s.strip()]}
    if args.client_id:
        settings["clientId"] = args.client_id
    if args.client_secret_env:
        settings["clientSecretEnv"] = args.client_secret_env
    return check_settings(settings, where)


def open_store(path: Path | None) -> FileStore:
    try:
        return FileStore(path)
    except ValueError as exc:
        raise CliError(str(exc), "delete the file to start afresh") from None


def _store(args: Any) -> FileStore:
    return open_store(args.cache)


def _login(args: Any, store: FileStore) -> int:
    try:
        oauth = oauth_for(args.url, login_settings(args, "auth login"), store=store)
        for old in store.tokens():
            if resource_allowed(old.resource, args.url):
                store.drop_token(old)
        oauth.token = None
        client = Client.http(args.url, auth=oauth, timeout=30.0)
    except (ValueError, OAuthError) as exc:
        raise CliError(str(exc), "check the URL and the options of 'auth login'") from None
    try:
        client.connect()
        client.list_tools()
        if oauth.token is None and protected_resource(fetcher_for(args.url), args.url, None) is None:
            print(f"{args.url} did not ask for authorization and publishes no protected-resource metadata: "
                  "nothing to log in to")
            return 0
        if oauth.token is None:
            oauth.login()
    except (OAuthError, PeerError, RpcError, ClientError) as exc:
        raise CliError(f"login to {args.url} failed: {oauth.error or exc}", "see the message above") from None
    finally:
        client.close()
    token = oauth.token
    assert token is not None
    print(f"logged in to {args.url} (issuer {token.issuer}, client {token.client_id}, scopes "
          f"{token.scope or '-'}); token cached in {store.path}")
    return 0


def _status(args: Any, store: FileStore) -> int:
    shown = [t.public() for t in store.tokens() if args.url is None or resource_allowed(t.resource, args.url)]
    for entry in shown:
        expires = entry["expires_at"]
        entry["expires_in"] = None if expires is None else max(0, int(expires - time.time()))
    print(json.dumps(shown, indent=2))
    return 0 if shown or args.url is None else 1


def _logout(args: Any, store: FileStore) -> int:
    if args.url is None and not args.all:
        raise CliError("logout needs a URL, or --all", "e.g. 'auth logout https://example.com/mcp'")
    gone = [t for t in store.tokens() if args.all or resource_allowed(t.resource, args.url)]
    for token in gone:
        store.drop_token(token)
    print(f"forgot {len(gone)} token(s)")
    return 0


COMMANDS = {"login": _login, "status": _status, "logout": _logout}


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="auth: %(message)s")
    return COMMANDS[args.command](args, _store(args))
