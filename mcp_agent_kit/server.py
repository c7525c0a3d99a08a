"""server: the public Server — a registry with a dispatcher and ways to run it.

This facade sits above the core and the transports: `Server` registers tools, resources and
prompts (core.registry) and serves them with `run()` on stdio or Streamable HTTP. Rules: no
protocol logic here; transports are imported only when a server is run.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mcp_agent_kit.core.dispatcher import Connection, Dispatcher
from mcp_agent_kit.core.registry import Registry


class Server(Registry):
    """An MCP server: register with `@server.tool`, `@server.resource`, `@server.prompt`, then `run()`."""

    _dispatcher: Dispatcher | None = None

    @property
    def dispatcher(self) -> Dispatcher:
        if self._dispatcher is None:
            self._dispatcher = Dispatcher(self)
        return self._dispatcher

    def handle(self, message: dict[str, Any], conn: Connection | None = None) -> dict[str, Any] | None:
        """Answer one parsed JSON-RPC message in-process (handy in tests)."""
        return self.dispatcher.handle(message, conn if conn is not None else Connection())

    def serve_stdio(self, **options: Any) -> int:
        from mcp_agent_kit.transports.stdio import serve_stdio

        return serve_stdio(self.dispatcher, **options)

    def serve_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> int:
        from mcp_agent_kit.transports import http

        code: int = http.serve_http(self.dispatcher, host, port, **options)
        return code

    def run(self, argv: list[str] | None = None) -> None:
        """Serve stdio, or Streamable HTTP with `--http HOST:PORT`; exits the process when done."""
        if not (sys.argv[1:] if argv is None else argv):
            sys.exit(self.serve_stdio())  # the common case, without loading argparse
        parser = argparse.ArgumentParser(description=f"MCP server {self.name}")
        parser.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
        parser.add_argument("--token", help="require this bearer token (HTTP)")
        parser.add_argument("--max-message-bytes", type=int, default=None, metavar="N",
                            help="largest message accepted: a stdio line or an HTTP body (default 4 MiB)")
        args = parser.parse_args(argv)
        if args.max_message_bytes is not None and args.max_message_bytes < 1024:
            parser.error("--max-message-bytes must be at least 1024")
        limit = {} if args.max_message_bytes is None else {"max_body": args.max_message_bytes}
        if args.http:
            host, port = parse_host_port(args.http, parser)
            sys.exit(self.serve_http(host, port, token=args.token, **limit))
        sys.exit(self.serve_stdio(**{"max_line_bytes": limit["max_body"]} if limit else {}))


def parse_host_port(value: str, parser: argparse.ArgumentParser) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        parser.error(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
