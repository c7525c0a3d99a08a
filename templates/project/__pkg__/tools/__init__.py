"""The tools of ${name}. Add a module here and register its functions in register_all."""

from mcp_agent_kit import Server

from ${pkg}.tools.example import ${example_tool}


def register_all(server: Server) -> None:
    server.add_tool(${example_tool}, read_only=True, idempotent=True, open_world=False)
