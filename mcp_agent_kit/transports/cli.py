"""cli: `python -m mcp_agent_kit serve MODULE:ATTR [--stdio | --http HOST:PORT] [options]`.

Loads any server object (a dotted module or a path to a .py file, attribute `server` by
default) and serves it on stdio or Streamable HTTP; `Server.run()` uses the same options.
Rules: argument parsing and wiring only; bad input is a clear message on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mcp_agent_kit.addresses import split_host_port
from mcp_agent_kit.loader import TargetError, load_target

DEFAULT_MAX_MESSAGE = 4 * 1024 * 1024


def add_serving_options(parser: argparse.ArgumentParser) -> None:
    """The options shared by `serve` and `Server.run()`."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve newline-delimited JSON-RPC on stdio (default)")
    mode.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp")
    parser.add_argument("--token", help="require `Authorization: Bearer TOKEN` (HTTP); default $MCP_TOKEN")
    parser.add_argument("--path", default="/mcp", help="the HTTP endpoint path (default /mcp)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                        help="also accept this Host header (repeatable; '*' for any; loopback names always pass)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="also accept this Origin, e.g. https://app.example.com (repeatable)")
    parser.add_argument("--max-message-bytes", "--max-body", dest="max_message", type=int, default=DEFAULT_MAX_MESSAGE,
                        metavar="N", help="largest message: a stdio line or an HTTP body (default 4 MiB)")
    parser.add_argument("--workers", type=int, default=64, help="most HTTP connections served at once")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mcp_agent_kit serve", description="Serve an MCP server object.")
    parser.add_argument("target", metavar="MODULE:ATTR", help="pkg.module:attr or path/to/file.py:attr (attr: server)")
    add_serving_options(parser)
    return parser


def serve(server: Any, args: argparse.Namespace, prog: str) -> int:
    """Serve a Server object as the parsed options say."""
    if args.max_message < 1024:
        print(f"{prog}: --max-message-bytes must be at least 1024", file=sys.stderr)
        return 2
    if not args.http:
        return int(server.serve_stdio(max_line_bytes=args.max_message))
    try:
        host, port = split_host_port(args.http)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    token = args.token or os.environ.get("MCP_TOKEN") or None
    try:
        return int(server.serve_http(
            host, port, token=token, path=args.path, allowed_hosts=args.allow_host,
            allowed_origins=args.allow_origin, max_body=args.max_message, max_workers=args.workers,
        ))
    except OSError as exc:
        print(f"{prog}: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1


def run_server(server: Any, argv: list[str]) -> int:
    """`Server.run(argv)`: the serving options without a target."""
    parser = argparse.ArgumentParser(description=f"MCP server {getattr(server, 'name', '')}".strip())
    add_serving_options(parser)
    return serve(server, parser.parse_args(argv), parser.prog)


def main_serve(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        server: Any = load_target(args.target)
    except TargetError as exc:
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    if not hasattr(server, "dispatcher") or not hasattr(server, "serve_stdio"):
        print(f"serve: {args.target} is not an mcp_agent_kit Server (got {type(server).__name__})", file=sys.stderr)
        return 2
    return serve(server, args, "serve")
