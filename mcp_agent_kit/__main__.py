"""`mcp-agent-kit` / `python -m mcp_agent_kit`: the command-line front door.

A table maps each subcommand to the module and function that implements it (and the function that
builds its parser, for --help checks); modules are imported only when their command runs. Every
command runs inside `cli_common.guarded`: known user mistakes are one stderr line, a closed stdout
ends quietly. Rules: argument routing only; imported by nothing.
"""

from __future__ import annotations

import difflib
import importlib
import sys

from mcp_agent_kit.cli_common import PROG, USAGE, fail, guarded, version_line

COMMANDS: dict[str, tuple[str, str, str, str]] = {
    # name: (module, function, parser builder, one-line help)
    "serve": ("mcp_agent_kit.transports.cli", "main_serve", "serve_parser",
              "serve a Server object over stdio or Streamable HTTP"),
    "probe": ("mcp_agent_kit.gateway.cli", "main_probe", "probe_parser", "find out which MCP era a server speaks"),
    "gateway": ("mcp_agent_kit.gateway.cli", "main_gateway", "gateway_parser", "serve many MCP servers as one"),
    "a2a": ("mcp_agent_kit.a2a.cli", "main", "parser",
            "serve a Server's tools (or an ACP agent, --acp) as an A2A v1.0 agent"),
    "skill": ("mcp_agent_kit.packaging.cli", "main_skill", "skill_parser", "validate, create or install Agent Skills"),
    "plugin": ("mcp_agent_kit.packaging.cli", "main_plugin", "plugin_parser",
               "validate or build Agent Plugins packages"),
    "new": ("mcp_agent_kit.scaffold.cli", "main_new", "new_parser", "create a new agent project"),
    "acp": ("mcp_agent_kit.acp.client.cli", "main", "parser", "drive an ACP agent (probe, one prompt, chat)"),
    "agents": ("mcp_agent_kit.acp.client.known_cli", "main", "parser",
               "list the ACP agents it knows and which are installed"),
    "install": ("mcp_agent_kit.scaffold.install", "main", "parser", "add a server to Claude Desktop / Claude Code"),
    "store": ("mcp_agent_kit.store_cli", "main", "parser", "create or upgrade a shared store's schema (migrate)"),
    "auth": ("mcp_agent_kit.gateway.auth_cli", "main", "parser",
             "log in to OAuth-protected servers (login, status, logout)"),
    "call": ("mcp_agent_kit.devtools.cli", "main_call", "call_parser", "call one tool of a server from the shell"),
    "list": ("mcp_agent_kit.devtools.cli", "main_list", "list_parser",
             "list a server's tools, resources and prompts"),
    "check": ("mcp_agent_kit.devtools.check", "main", "parser", "check a server's tools against the design rules"),
    "dev": ("mcp_agent_kit.devtools.inspector", "main", "parser", "open a server in the MCP Inspector (npx)"),
    "board": ("mcp_agent_kit.board.cli", "main", "parser", "serve a repository's board of coding agents (MCP)"),
    "task": ("mcp_agent_kit.board.task_cli", "main", "parser", "create, watch, answer and review a board's tasks"),
    "agent-host": ("mcp_agent_kit.hosts.cli", "main", "parser",
                   "serve this machine's ACP agents to remote clients (ACP over WebSocket and HTTP, agentctl)"),
}


def usage() -> str:
    lines = [f"usage: {PROG} COMMAND [ARGS...]   (also: python -m mcp_agent_kit)", "", "commands:"]
    lines += [f"  {name:<10} {entry[3]}" for name, entry in COMMANDS.items()]
    lines += ["", "options:", "  -h, --help  show this help", "  --version   print the version",
              "", f"`{PROG} COMMAND --help` describes one command."]
    return "\n".join(lines)


def _unknown(command: str) -> int:
    close = difflib.get_close_matches(command, COMMANDS, n=1, cutoff=0.7)
    fix = f"did you mean {close[0]!r}?" if close else f"run '{PROG} --help' for the list of commands"
    if not close and _project_name(command):  # the older kits' `python -m mcp_agent_kit NAME`
        fix = f"to create a project run '{PROG} new {command}' (or 'create-mcp-agent {command}')"
    return fail(f"unknown command {command!r}", fix, USAGE)


def _project_name(word: str) -> bool:
    from mcp_agent_kit.scaffold.names import NameError_, derive

    try:
        derive(word)
    except NameError_:
        return False
    return True


def _dispatch(args: list[str]) -> int:
    if not args:
        print(usage(), file=sys.stderr)
        return USAGE
    if args[0] in ("-h", "--help"):
        print(usage())
        return 0
    if args[0] == "--version":
        print(version_line())
        return 0
    entry = COMMANDS.get(args[0])
    if entry is None:
        return _unknown(args[0])
    module_name, function = entry[0], entry[1]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            return fail(f"the {args[0]!r} command is not available in this build", "reinstall mcp-agent-kit", USAGE)
        raise
    code: int = getattr(module, function)(args[1:])
    return code


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return guarded(lambda: _dispatch(args))


if __name__ == "__main__":
    sys.exit(main())
