"""gateway.cli: the `probe` and `gateway` subcommands (called by `mcp-agent-kit`).

`probe [--timeout S] [--allow-legacy] -- CMD ARGS...` or `probe URL` prints one JSON object
with the era, version, capabilities and tool names (or the reason when unavailable) and exits
0 when the server is reachable, 1 when it is not, 2 on bad usage, 3 when it needs authorization
that could not be had (one stderr line: run `auth login URL`, or pass --login). A URL is probed
with the OAuth token `auth login` cached for it (refreshed when due); `--login` may log in too. `gateway CONFIG.json
[--stdio | --http HOST:PORT]` serves many servers as one (a non-loopback bind needs --token or
--oauth-issuer, or --insecure: cli_common.check_public_bind); a missing config file exits 2, a
malformed one 1, each with one stderr line. Rules: argument parsing and output only; the logic
lives in client/ and the gateway package. Both front doors live here, above client/, because
client/ imports wire/ only (not cli_common); the gateway's modules are imported only when the
`gateway` command runs, so `probe` never loads the server.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mcp_agent_kit.cli_common import (
    PROG,
    USAGE,
    CliError,
    Parser,
    StoreOptions,
    add_insecure_option,
    add_oauth_options,
    add_origin_options,
    add_store_options,
    add_token_options,
    check_bindable,
    check_public_bind,
    fail,
    host_port,
    oauth_settings,
    prog,
    serving,
    store_from_args,
    tokens_from,
)
from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.client import Client
from mcp_agent_kit.client.oauth.factory import oauth_for
from mcp_agent_kit.client.oauth.session import OAuth
from mcp_agent_kit.gateway.auth_cli import add_login_options, login_settings, open_store
from mcp_agent_kit.wire.jsonrpc import RpcError

NEEDS_AUTH = 3  # probe's exit code when the server wants credentials it did not get


def probe_parser() -> Parser:
    parser = Parser(prog=prog("probe"), description="find out which MCP era a server speaks")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each probe reply (default 5)")
    parser.add_argument(
        "--allow-legacy",
        action="store_true",
        help="on silence, exit or garbage, still try the initialize handshake (on a fresh process)",
    )
    parser.add_argument("--header", action="append", default=[], metavar="NAME:VALUE", help="extra HTTP header")
    oauth = parser.add_argument_group("OAuth (a URL is probed with the token 'auth login' cached for it)")
    oauth.add_argument("--login", action="store_true",
                       help="without a usable cached token, log in (as 'auth login' does) and cache the token")
    oauth.add_argument("--cache", type=Path, default=None, metavar="FILE", help="the token cache (as 'auth --cache')")
    add_login_options(oauth)
    parser.add_argument("target", nargs="+", metavar="URL | -- COMMAND ARGS",
                        help="an http(s) URL, or -- COMMAND ARGS... (a stdio server to start)")
    return parser


def _oauth(url: str, headers: dict[str, str], args: argparse.Namespace) -> OAuth | None:
    """The OAuth client for a probed URL: the cached token, and a login only with --login."""
    if any(name.lower() == "authorization" for name in headers):
        return None  # the caller brought their own credentials
    settings = {**login_settings(args, "probe"), "login": args.login}
    return oauth_for(url, settings, store=open_store(args.cache))


def _make_client(target: list[str], args: argparse.Namespace) -> Client:
    options: dict[str, Any] = {"timeout": args.timeout, "allow_legacy": args.allow_legacy}
    if len(target) == 1 and target[0].startswith(("http://", "https://")):
        pairs = dict(item.split(":", 1) for item in args.header if ":" in item)
        headers = {k.strip(): v.strip() for k, v in pairs.items()}
        return Client.http(target[0], headers, auth=_oauth(target[0], headers, args), **options)
    return Client.stdio(target[0], target[1:], env=dict(os.environ), **options)  # the user's command, their env


def _needs_auth(url: str, auth: Any) -> int:
    error = getattr(auth, "error", None)
    if isinstance(auth, OAuth) and not auth.config.login:
        return fail(f"{url} needs OAuth authorization and no usable token is cached for it",
                    f"run '{PROG} auth login {url}' (or probe with --login)", NEEDS_AUTH)
    if error:
        return fail(f"authorization at {url} failed: {error}", "check the login options", NEEDS_AUTH)
    return fail(f"{url} refused the request as unauthorized", "pass credentials with --header, or try --login",
                NEEDS_AUTH)


def main_probe(argv: list[str]) -> int:
    parser = probe_parser()
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="probe: %(message)s")
    try:
        client = _make_client(list(args.target), args)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        verdict = client.probe()
        report = verdict.to_json()
        if verdict.era != "unavailable" and (verdict.era == "legacy" or "tools" in verdict.capabilities):
            try:
                report["tools"] = [tool["name"] for tool in client.list_tools()]
            except (RpcError, PeerError, ValueError) as exc:
                report["toolsError"] = str(exc)
        elif verdict.era != "unavailable":
            report["tools"] = []
    finally:
        client.close()
    print(json.dumps(report, indent=2, sort_keys=True))
    if verdict.auth:
        return _needs_auth(args.target[0], getattr(client.channel, "auth", None))
    return 0 if verdict.era != "unavailable" else 1


def gateway_parser() -> Parser:
    parser = Parser(prog=prog("gateway"), description="serve many MCP servers as one merged server")
    parser.add_argument("config", metavar="CONFIG.json",
                        help="a JSON file with an mcpServers object (Claude Desktop / mcp.json shape)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    mode.add_argument("--http", metavar="HOST:PORT", type=host_port,
                      help="serve Streamable HTTP at http://HOST:PORT/mcp (port 0 picks a free one)")
    add_token_options(parser)
    add_origin_options(parser)
    add_insecure_option(parser)
    parser.add_argument("--timeout", type=float, default=5.0, metavar="S", help="probe timeout per backend (default 5)")
    parser.add_argument("--separator", default=".", help="between alias and name on a collision (default '.')")
    parser.add_argument("--sessions", metavar="FILE",
                        help="sqlite file keeping agent sessions across restarts, the store sqlite:///FILE (default"
                             " CONFIG.sessions.sqlite; with --store sqlite:// or postgresql://, the sessions live in"
                             " that shared store)")
    add_store_options(parser)
    parser.add_argument("--principal-header", metavar="NAME",
                        help="behind a trusted proxy only: take the caller's identity from this header")
    add_oauth_options(parser)
    return parser


def main_gateway(argv: list[str]) -> int:
    args = gateway_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="gateway: %(message)s")
    from mcp_agent_kit.gateway.agents_config import parse_agents, parse_retention
    from mcp_agent_kit.gateway.config import ConfigError, load_document, parse_config
    from mcp_agent_kit.gateway.merged import Gateway

    if not os.path.isfile(args.config):
        return fail(f"no such config file: {args.config}",
                    'give a JSON file with an "mcpServers" object (the Claude Desktop / mcp.json shape)', USAGE)
    try:
        document = load_document(args.config)
        config = parse_config(document)
        agents = parse_agents(document)
        retention = parse_retention(document)
    except ConfigError as exc:
        problem = str(exc) if args.config in str(exc) else f"{args.config}: {exc}"
        return fail(problem, 'fix the file: an "mcpServers" object of {"command": ...} or {"url": ...} entries'
                    ' and/or an "agents" object of "namespace/name": {"a2a": URL} or {"acp": {...}} entries')
    tokens = tokens_from(args)  # a bad --tokens-file is a CliError, before any backend starts
    oauth = oauth_settings(args)
    if oauth is not None and not args.http:
        return fail("--oauth-issuer protects an HTTP endpoint", "add --http HOST:PORT (stdio has no tokens)", USAGE)
    if args.http:  # before any backend starts
        check_public_bind(args.http[0], authenticated=bool(tokens) or oauth is not None, insecure=args.insecure,
                          what="the gateway")
    options = store_from_args(args)  # memory without --store; the secret from --secret-file or the environment
    shared: StoreOptions | None = options
    if not options.store.shared:
        options.store.close()  # memory: nothing to share; the sessions stay in the one-process sqlite file
        shared = None
    service = _agent_service(agents, args, retention, shared) if agents else None
    try:
        gateway = Gateway(config, timeout=args.timeout, separator=args.separator, agents=service)
    except ConfigError as exc:
        return fail(f"{args.config}: {exc}", "fix the server's oauth settings (docs/oauth.md)")
    if shared is not None:  # the gateway's own MCP tasks and legacy sessions, shared by every replica too
        gateway.server.use_store(shared.store, secret=shared.secret, lease_s=shared.lease_s, replica=shared.replica)
    elif options.secret is not None:
        gateway.server.secret = options.secret
    try:
        if not args.http:
            gateway.start()
            # On SIGTERM the stdio transport leaves the process through the server's lifespan, never
            # through our `finally`: the backends (and what they started) are closed there too.
            gateway.server.lifespan(_closing(gateway))
            return gateway.server.serve_stdio()
        host, port = args.http
        def run() -> int:
            check_bindable(host, port)  # before starting the backends: a port in use fails fast
            gateway.start()
            return gateway.server.serve_http(host, port, tokens=tokens, principal_header=args.principal_header,
                                             oauth=oauth, allowed_hosts=args.allow_host,
                                             allowed_origins=args.allow_origin, insecure=args.insecure)

        return serving(run, host, port, oauth)
    finally:
        gateway.close()


def _closing(gateway: Any) -> Callable[[Any], Iterator[None]]:
    """A lifespan that closes the gateway (its backends' processes included) when serving ends."""

    def lifespan(server: Any) -> Iterator[None]:
        try:
            yield None
        finally:
            gateway.close()

    return lifespan


def _agent_service(agents: dict[str, Any], args: argparse.Namespace, max_age: float | None,
                   shared: StoreOptions | None) -> Any:
    """The agents' service over their sessions (gateway.agent_store): in the shared store (`--store`),
    else in this process's own sqlite file, the store sqlite:///FILE (`--sessions FILE`, default
    CONFIG.sessions.sqlite; an older session file is migrated on open); a CLI error when it cannot be opened."""
    from mcp_agent_kit.gateway.agent_service import AgentService
    from mcp_agent_kit.gateway.agent_store import AgentSessions, open_sessions, sessions_url
    from mcp_agent_kit.store import StoreError

    if shared is not None:
        if args.sessions:
            raise CliError("give --sessions FILE or --store URL, not both", "drop --sessions: the sessions live"
                           " in the shared store", USAGE)
        assert shared.secret is not None  # store_from_args refuses a shared store without one
        try:
            sessions = AgentSessions(shared.store, shared.secret, shared.replica, shared.lease_s)
        except StoreError as exc:
            raise CliError(f"cannot open the sessions in {shared.store.url}: {exc}",
                           "check the store (docs/store.md)") from exc
        return AgentService(agents, sessions, max_age=max_age)
    path = args.sessions or f"{args.config}.sessions.sqlite"
    try:  # this process is the file's one user: its own secret, and turns left working by a dead run fail now
        sessions = open_sessions(sessions_url(path), sole=True)
    except StoreError as exc:
        raise CliError(f"cannot open the session store {path}: {exc}",
                       "give a writable file with --sessions FILE") from exc
    return AgentService(agents, sessions, max_age=max_age)
