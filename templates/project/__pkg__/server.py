"""The ${name} MCP server: `python -m ${pkg}.server` (stdio) or `--http HOST:PORT`."""

from mcp_agent_kit import Server

from ${pkg}.tools import register_all

server = Server(
    "${name}",
    "0.1.0",
    title=${title_py},
    instructions=${desc_py},
)
register_all(server)


def main() -> None:
    server.run()


if __name__ == "__main__":
    main()
