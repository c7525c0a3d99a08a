"""cli: `python -m mcp_agent_kit a2a MODULE:ATTR [--host H] [--port N] [--store PATH] [--token T] [--public-url URL]`.

MODULE:ATTR names a Registry/Server (its tools become skills) or an a2a Agent. Rules: argument parsing
and wiring only; refuses a non-loopback bind without a token unless told `--insecure`.
"""

from __future__ import annotations

import argparse
import logging
import sys

from mcp_agent_kit.a2a.engine import Agent, TaskEngine
from mcp_agent_kit.a2a.http import MAX_BODY, is_loopback, serve
from mcp_agent_kit.a2a.store import MemoryStore, TaskStore


def build_agent(target: object) -> Agent:
    from mcp_agent_kit.core.registry import Registry

    if isinstance(target, Agent):
        return target
    if isinstance(target, Registry):
        from mcp_agent_kit.a2a.toolagent import ToolAgent

        return ToolAgent(target)
    raise TypeError(f"expected an MCP Server/Registry or an a2a Agent, got {type(target).__name__}")


def build_store(path: str | None) -> TaskStore:
    if not path:
        return MemoryStore()
    from mcp_agent_kit.a2a.sqlite_store import SqliteStore

    return SqliteStore(path)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mcp_agent_kit a2a", description="Serve tools as an A2A v1.0 agent.")
    parser.add_argument("target", help="MODULE:ATTR or path/file.py:ATTR (an MCP Server or an a2a Agent)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    parser.add_argument("--store", metavar="PATH", help="keep tasks in this sqlite3 file (default: in memory)")
    parser.add_argument("--token", action="append", default=[], help="require this bearer token (repeatable)")
    parser.add_argument("--public-url", help="the base URL clients use, when behind a proxy")
    parser.add_argument("--max-body", type=int, default=MAX_BODY, help="largest request body in bytes")
    parser.add_argument("--insecure", action="store_true", help="allow a non-loopback bind without a token")
    parser.add_argument("--verbose", action="store_true", help="log requests")
    args = parser.parse_args(argv)
    if not is_loopback(args.host) and not args.token and not args.insecure:
        parser.error(f"binding {args.host} exposes the agent to the network: give --token (or --insecure)")
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s")
    from mcp_agent_kit.loader import TargetError, load_target

    try:
        agent = build_agent(load_target(args.target))
    except (TargetError, TypeError) as exc:
        print(f"a2a: {exc}", file=sys.stderr)
        return 2
    try:
        engine = TaskEngine(agent, build_store(args.store))
    except Exception as exc:  # e.g. sqlite3.DatabaseError for a path that is not a database
        print(f"a2a: cannot open the task store: {exc}", file=sys.stderr)
        return 2
    try:
        return serve(
            engine, args.host, args.port, tokens=args.token, public_url=args.public_url, max_body=args.max_body
        )
    except OSError as exc:
        print(f"a2a: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
