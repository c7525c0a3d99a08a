"""cli: `mcp-agent-kit serve MODULE:ATTR [--stdio | --http HOST:PORT] [options]`.

Loads any server object (a dotted module or a path to a .py file; without `:ATTR` the object
named `server`, `mcp` or `app`, or the module's one Server) and serves it on stdio or Streamable
HTTP; `Server.run()` uses the same options.
Rules: argument parsing and wiring only; bad input is one clear line on stderr (cli_common) and
exit code 2, a port that cannot be bound exit code 1, never a traceback. A non-loopback `--http`
bind needs `--token` or `--oauth-issuer` (or `--insecure`), as on `a2a` (cli_common.check_public_bind).
"""

from __future__ import annotations

import argparse
from typing import Any

from mcp_agent_kit.cli_common import (
    USAGE,
    CliError,
    Parser,
    add_insecure_option,
    add_oauth_options,
    add_origin_options,
    add_store_options,
    add_token_options,
    check_public_bind,
    fail,
    host_port,
    listen_failed,
    oauth_settings,
    prog,
    tokens_from,
)
from mcp_agent_kit.loader import TargetError, load_target

DEFAULT_MAX_MESSAGE = 4 * 1024 * 1024


def add_serving_options(parser: argparse.ArgumentParser) -> None:
    """The options shared by `serve` and `Server.run()`."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve newline-delimited JSON-RPC on stdio (default)")
    mode.add_argument("--http", metavar="HOST:PORT", type=host_port,
                      help="serve Streamable HTTP at http://HOST:PORT/mcp (port 0 picks a free one)")
    add_token_options(parser, "HTTP; default $MCP_TOKEN")
    parser.add_argument("--path", default="/mcp", help="the HTTP endpoint path (default /mcp)")
    add_origin_options(parser)
    add_insecure_option(parser)
    add_oauth_options(parser)
    parser.add_argument("--max-message-bytes", "--max-body", dest="max_message", type=int, default=DEFAULT_MAX_MESSAGE,
                        metavar="N", help="largest message: a stdio line or an HTTP body (default 4 MiB)")
    parser.add_argument("--workers", type=int, default=64, metavar="N", help="most HTTP connections served at once")
    add_store_options(parser)


def share(server: Any, args: argparse.Namespace) -> None:
    """--store / --secret-file / --store-lease: the store and the secret every replica shares.
    Without --store the server keeps today's in-memory tasks (a --secret-file still applies)."""
    from mcp_agent_kit.cli_common import store_from_args

    options = store_from_args(args)
    if args.store is None:
        options.store.close()
        if options.secret is not None:
            server.secret = options.secret
        return
    server.use_store(options.store, secret=options.secret, lease_s=options.lease_s, replica=options.replica)


def serve_parser() -> Parser:
    parser = Parser(prog=prog("serve"), description="Serve an MCP server object.")
    parser.add_argument("target", metavar="MODULE:ATTR",
                        help="pkg.module:attr or path/to/file.py:attr (without :attr: the object named server, mcp"
                             " or app, or the module's one Server)")
    add_serving_options(parser)
    return parser


def serve(server: Any, args: argparse.Namespace, name: str) -> int:
    """Serve a Server object as the parsed options say (`name` prefixes error lines)."""
    if args.max_message < 1024:
        return fail("--max-message-bytes must be at least 1024", "give a larger N", USAGE, name)
    tokens: dict[str, str] = {}
    oauth = None
    try:
        if args.http:  # the bind is judged before a store opens or anything starts
            tokens = tokens_from(args, "MCP_TOKEN")
            oauth = oauth_settings(args)
            check_public_bind(args.http[0], authenticated=bool(tokens) or oauth is not None, insecure=args.insecure)
        share(server, args)
    except CliError as exc:
        return fail(exc.problem, exc.fix, exc.code, name)
    except ValueError as exc:  # the server object already uses a store
        return fail(str(exc), "give --store once, or leave it to the code", USAGE, name)
    if not args.http:
        return int(server.serve_stdio(max_line_bytes=args.max_message))
    host, port = args.http
    try:
        return int(server.serve_http(
            host, port, tokens=tokens, path=args.path, allowed_hosts=args.allow_host,
            allowed_origins=args.allow_origin, max_body=args.max_message, max_workers=args.workers, oauth=oauth,
            insecure=args.insecure,
        ))
    except ValueError as exc:
        if oauth is None:
            raise
        # OAuth set-up: the issuer's metadata or keys cannot be used
        return fail(f"OAuth: {exc}", "check --oauth-issuer (and --oauth-jwks-url)", name=name)
    except (OSError, OverflowError) as exc:
        return listen_failed(host, port, exc, name)


def run_server(server: Any, argv: list[str]) -> int:
    """`Server.run(argv)`: the serving options without a target."""
    parser = Parser(description=f"MCP server {getattr(server, 'name', '')}".strip())
    add_serving_options(parser)
    return serve(server, parser.parse_args(argv), parser.prog)


def main_serve(argv: list[str]) -> int:
    args = serve_parser().parse_args(argv)
    try:
        server: Any = load_target(args.target)
    except TargetError as exc:
        return fail(str(exc), code=USAGE)
    if not hasattr(server, "dispatcher") or not hasattr(server, "serve_stdio"):
        return fail(f"{args.target} is not an mcp_agent_kit Server (got {type(server).__name__})",
                    "point MODULE:ATTR at a Server object", USAGE)
    return serve(server, args, "mcp-agent-kit")
