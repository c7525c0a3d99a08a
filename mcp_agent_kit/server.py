"""server: the public Server — a registry with a dispatcher and ways to run it.

This facade sits above the core and the transports: `Server` registers tools, resources and
prompts (core.registry) and serves them with `run()` on stdio or Streamable HTTP. Rules: no
protocol logic here; transports are imported only when a server is run.
"""

from __future__ import annotations

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
        """Serve stdio, or Streamable HTTP with `--http HOST:PORT` (see `--help`); exits the process."""
        args = sys.argv[1:] if argv is None else argv
        if not args:
            sys.exit(self.serve_stdio())  # the common case, without loading argparse
        from mcp_agent_kit.transports.cli import run_server

        sys.exit(run_server(self, args))
