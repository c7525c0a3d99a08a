"""${name} as an A2A v1.0 agent: `python -m ${pkg}.a2a_server [--http 127.0.0.1:8080] [--store tasks.db]`."""

import sys

from mcp_agent_kit.a2a.cli import main as a2a_main


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    sys.exit(a2a_main(["${pkg}.server:server", *args]))


if __name__ == "__main__":
    main()
