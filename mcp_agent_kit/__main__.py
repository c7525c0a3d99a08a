"""`python -m mcp_agent_kit` / `mcp-agent-kit`: the command-line front door.

A table maps each subcommand to the module and function that implements it; modules are
imported only when their command runs. Rules: argument routing only; imported by nothing.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS: dict[str, tuple[str, str, str]] = {
    # name: (module, function, one-line help)
    "serve": ("mcp_agent_kit.transports.cli", "main_serve", "serve a Server object over stdio or Streamable HTTP"),
    "probe": ("mcp_agent_kit.client.cli", "main_probe", "find out which MCP era a server speaks"),
    "gateway": ("mcp_agent_kit.client.cli", "main_gateway", "serve many MCP servers as one"),
    "a2a": ("mcp_agent_kit.a2a.cli", "main", "serve a Server's tools as an A2A v1.0 agent"),
    "skill": ("mcp_agent_kit.packaging.cli", "main_skill", "validate, create or install Agent Skills"),
    "plugin": ("mcp_agent_kit.packaging.cli", "main_plugin", "validate or build Agent Plugins packages"),
    "new": ("mcp_agent_kit.scaffold.cli", "main_new", "create a new agent project"),
    "install": ("mcp_agent_kit.scaffold.cli", "main_install", "add a server to Claude Desktop / Claude Code"),
}


def usage() -> str:
    lines = ["usage: python -m mcp_agent_kit COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, _, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    entry = COMMANDS.get(args[0])
    if entry is None:
        print(f"unknown command {args[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module_name, function, _ = entry
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            print(f"the {args[0]!r} command is not available in this build", file=sys.stderr)
            return 2
        raise
    code: int = getattr(module, function)(args[1:])
    return code


if __name__ == "__main__":
    sys.exit(main())
