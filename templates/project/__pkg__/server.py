"""The ${name} MCP server: `python -m ${pkg}.server` (stdio) or `--http HOST:PORT`.

It also publishes the project's Agent Skills (skills/<name>/) over MCP (the Skills extension,
SEP-2640): hosts list them with skills/list and read each file, digest-checked, as skill:// resources.
"""

from pathlib import Path

from mcp_agent_kit import Server

from ${pkg}.tools import register_all

SKILLS = Path(__file__).resolve().parent.parent / "skills"  # absent when installed without the project

server = Server(
    "${name}",
    "0.1.0",
    title=${title_py},
    instructions=${desc_py},
    skills=[SKILLS] if SKILLS.is_dir() else [],
)
register_all(server)


def main() -> None:
    server.run()


if __name__ == "__main__":
    main()
