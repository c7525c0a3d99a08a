"""cli: `python -m mcp_agent_kit serve MODULE:ATTR [--stdio | --http HOST:PORT] [options]`.

Loads any server object (a dotted module or a path to a .py file, attribute `server` by
default) and serves it on stdio or Streamable HTTP. Rules: argument parsing and wiring only;
bad input is a clear message on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mcp_agent_kit.loader import TargetError, load_target


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mcp_agent_kit serve", description="Serve an MCP server object.")
    parser.add_argument("target", metavar="MODULE:ATTR", help="pkg.module:attr or path/to/file.py:attr (attr: server)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve newline-delimited JSON-RPC on stdio (default)")
    mode.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp")
    parser.add_argument("--token", help="require `Authorization: Bearer TOKEN` (HTTP); default $MCP_TOKEN")
    parser.add_argument("--path", default="/mcp", help="the HTTP endpoint path (default /mcp)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                        help="also accept this Host header (repeatable; loopback names always pass)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="also accept this Origin, e.g. https://app.example.com (repeatable)")
    parser.add_argument("--max-body", type=int, default=4 * 1024 * 1024, help="largest request body in bytes")
    parser.add_argument("--workers", type=int, default=64, help="most connections served at once")
    return parser


def split_host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def main_serve(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        server: Any = load_target(args.target)
    except TargetError as exc:
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    dispatcher = getattr(server, "dispatcher", None)
    if dispatcher is None or not hasattr(server, "serve_stdio"):
        print(f"serve: {args.target} is not an mcp_agent_kit Server (got {type(server).__name__})", file=sys.stderr)
        return 2
    if not args.http:
        return int(server.serve_stdio())
    try:
        host, port = split_host_port(args.http)
    except ValueError as exc:
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    from mcp_agent_kit.transports.http import serve_http

    token = args.token or os.environ.get("MCP_TOKEN") or None
    try:
        return serve_http(
            dispatcher, host, port, token=token, path=args.path, allowed_hosts=args.allow_host,
            allowed_origins=args.allow_origin, max_body=args.max_body, max_workers=args.workers,
        )
    except OSError as exc:
        print(f"serve: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
