"""acp.client.known_cli: `mcp-agent-kit agents [ID ...] [--json] [--timeout SECONDS]` — the ACP agents the kit
knows, found or not.

Prints one row per known agent (acp.client.known.KNOWN, or the ids given): its id, whether its program is on
PATH, its version when it says, and the exact command a board or gateway would run; a missing agent
gets its install line, a found one that would not say its version gets the reason. With `--json`, one
JSON list of objects with the fields id, name, found, path, version, version_error, command (an argv
list), install and homepage (docs/agents.md). Exit 0 however many are found; an unknown id or a bad
flag is one stderr line, exit 2. Rules: argument parsing and printing only; the lookup is acp.client.known's.
"""

from __future__ import annotations

import argparse
import json
import shlex
from typing import TYPE_CHECKING, TextIO

from mcp_agent_kit.cli_common import OK, USAGE, CliError, Parser, prog

if TYPE_CHECKING:
    from mcp_agent_kit.acp.client.known import FoundAgent


def _seconds(value: str) -> float:
    """argparse type: a version timeout, more than 0 and at most 60 seconds."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 60:
        raise argparse.ArgumentTypeError(f"timeout must be a number of seconds above 0 and at most 60, got {value!r}")
    return seconds


def parser() -> Parser:
    from mcp_agent_kit.acp.client.known import VERSION_TIMEOUT_S

    top = Parser(prog=prog("agents"),
                 description="List the ACP agents the kit knows: whether each is on PATH, its version, the command "
                             "a board would run, and how to install a missing one (docs/agents.md).")
    top.add_argument("ids", nargs="*", metavar="ID", help="only these agents (default: every known one)")
    top.add_argument("--json", action="store_true",
                     help="print one JSON list (id, name, found, path, version, version_error, command, install, "
                          "homepage)")
    top.add_argument("--timeout", type=_seconds, default=VERSION_TIMEOUT_S, metavar="SECONDS",
                     help=f"how long each agent's version command may take (default {VERSION_TIMEOUT_S:g})")
    return top


def table(found: list[FoundAgent], out: TextIO) -> None:
    """The readable listing: a header, one line per agent, an indented line with the install hint or version error."""
    width = max([len("ID"), *(len(row.agent.id) for row in found)])
    version_width = max([len("VERSION"), *(len(row.version or "-") for row in found)])
    print(f"{'ID':<{width}}  ON PATH  {'VERSION':<{version_width}}  COMMAND", file=out)
    for row in found:
        print(f"{row.agent.id:<{width}}  {'yes' if row.found else 'no':<7}  {row.version or '-':<{version_width}}  "
              f"{shlex.join(row.command)}", file=out)
        if not row.found:
            print(f"{'':<{width}}  install: {row.agent.install}", file=out)
        elif row.version_error:
            print(f"{'':<{width}}  no version: {row.version_error}", file=out)
    count = sum(row.found for row in found)
    print(f"{count} of {len(found)} found; a board config can name a found agent by its id.", file=out)


def main(argv: list[str]) -> int:
    import sys

    from mcp_agent_kit.acp.client.known import BY_ID, found_agents

    args = parser().parse_args(argv)
    unknown = [agent_id for agent_id in args.ids if agent_id not in BY_ID]
    if unknown:
        raise CliError(f"no known ACP agent {unknown[0]!r}", f"known ids: {', '.join(BY_ID)}", USAGE)
    chosen = [BY_ID[agent_id] for agent_id in dict.fromkeys(args.ids)] if args.ids else list(BY_ID.values())
    rows = found_agents(timeout=args.timeout, agents=chosen)
    if args.json:
        print(json.dumps([row.as_json() for row in rows], indent=2))
    else:
        table(rows, sys.stdout)
    return OK
