"""devtools.inspector: `mcp-agent-kit dev SERVER` — the MCP Inspector (web UI) against a server.

Runs `npx -y @modelcontextprotocol/inspector@VERSION [-e PYTHONPATH=...] -- PYTHON -m mcp_agent_kit
serve FILE[:obj]`, PYTHON being this interpreter (the one the kit is installed in) and FILE made
absolute; a URL is handed over as it is, `-- CMD ARGS...` as that command. The Inspector starts
stdio servers with a bare environment, so our PYTHONPATH, when set, goes along with `-e`. The
Inspector needs Node 22.19 or newer: with an older `node` on PATH, npx fetches Node 22 for it
(`npx -y -p node@22 -p @modelcontextprotocol/inspector@VERSION -- mcp-inspector ...`). Without
npx on PATH: one line naming what to install, exit 2. Rules: builds one command line and runs it;
the version of the Inspector is pinned here, once.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from urllib.parse import urlsplit

from mcp_agent_kit.cli_common import PROG, USAGE, Parser, fail, prog
from mcp_agent_kit.devtools.targets import SERVER_HELP, Target, resolve, split_command

INSPECTOR_VERSION = "2.12.0"
INSPECTOR = f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}"
NODE_MINIMUM = (22, 19)  # the Inspector's `engines.node`: >=22.19.0
NODE_FETCHED = "node@22"
ERAS = ("legacy", "auto", "modern")


def parser() -> Parser:
    name = prog("dev")
    top = Parser(prog=name, usage=f"{name} [options] SERVER\n       {name} [options] -- CMD [ARGS ...]",
                 description=f"Open an MCP server in the MCP Inspector {INSPECTOR_VERSION} (web UI, through npx; "
                             "needs Node.js). Ctrl-C stops it.")
    top.add_argument("server", nargs="?", metavar="SERVER", help=SERVER_HELP)
    top.add_argument("--era", choices=ERAS,
                     help="the protocol era the Inspector speaks to the server (default: the Inspector's, legacy)")
    return top


def node_version(node: str | None) -> tuple[int, int] | None:
    """(major, minor) of `node --version`; None when there is no node or it does not say."""
    if node is None:
        return None
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"v?(\d+)\.(\d+)", done.stdout.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


def server_argv(target: Target) -> list[str]:
    """What the Inspector is given after `--`: the stdio command, or the URL."""
    return [target.spec] if target.kind == "url" else list(target.argv)


def inspector_command(npx: str, target: Target, node: tuple[int, int] | None, era: str | None = None,
                      pythonpath: str | None = None) -> list[str]:
    """The command line that runs the pinned Inspector against the target."""
    if node is not None and node < NODE_MINIMUM:
        command = [npx, "-y", "-p", NODE_FETCHED, "-p", INSPECTOR, "--", "mcp-inspector"]
    else:
        command = [npx, "-y", INSPECTOR]
    if target.kind == "url" and not urlsplit(target.spec).path.rstrip("/").endswith("/sse"):
        command += ["--transport", "http"]  # the Inspector guesses only from a path ending in /mcp or /sse
    if pythonpath and target.kind != "url":
        command += ["-e", f"PYTHONPATH={pythonpath}"]
    if era is not None:
        command += ["--protocol-era", era]
    return [*command, "--", *server_argv(target)]


def main(argv: list[str]) -> int:
    ours, command = split_command(argv)
    args = parser().parse_args(ours)
    target = resolve(args.server, command)
    npx = shutil.which("npx")
    if npx is None:
        return fail("the MCP Inspector runs on Node.js, and npx is not on PATH",
                    "install Node.js 22.19 or newer (https://nodejs.org; it brings npx), then run this again", USAGE)
    node = node_version(shutil.which("node"))
    line = inspector_command(npx, target, node, args.era, os.environ.get("PYTHONPATH"))
    if node is not None and node < NODE_MINIMUM:
        print(f"{PROG} dev: node {node[0]}.{node[1]} is older than the Inspector's "
              f"{NODE_MINIMUM[0]}.{NODE_MINIMUM[1]}; npx fetches {NODE_FETCHED} for it", file=sys.stderr)
    print(f"{PROG} dev: {shlex.join(line)}", file=sys.stderr, flush=True)
    return subprocess.call(line)
