"""cli: `create-mcp-agent NAME` / `python -m mcp_agent_kit new NAME`, and `install` helpers.

Rules: argument parsing, messages and exit codes only; rendering lives in render.py, the
host configuration edits in install.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcp_agent_kit.cli_common import CREATE_PROG, USAGE, Parser, alias, fail, guarded, version_line
from mcp_agent_kit.scaffold.names import NameError_, derive


def new_parser(prog: str = "mcp-agent-kit new") -> argparse.ArgumentParser:
    parser = Parser(prog=prog, description="Create a new MCP + A2A agent project.")
    parser.add_argument("name", help="project name, e.g. my-agent or my_agent")
    parser.add_argument("--desc", default=None, help="one-sentence description of what the agent does")
    parser.add_argument("--out", dest="dir", default=None, metavar="DIR",
                        help="parent directory: the project goes in DIR/NAME (default: the current directory)")
    alias(parser, "--dir", dest="dir")
    parser.add_argument("--force", action="store_true", help="regenerate files we made that you have not changed")
    parser.add_argument("--no-install", dest="install", action="store_false",
                        help="do not pip-install the project into this virtual environment (editable)")
    if prog == CREATE_PROG:
        parser.add_argument("--version", action="version", version=version_line(CREATE_PROG),
                            help="print the version and exit")
    return parser


def main_new(argv: list[str], prog: str = "mcp-agent-kit new") -> int:
    args = new_parser(prog).parse_args(argv)
    name = prog.split()[0]  # error lines start `mcp-agent-kit:` or `create-mcp-agent:`
    try:
        names = derive(args.name)
    except NameError_ as exc:
        return fail(str(exc), "try a name like my-agent", USAGE, name)
    from mcp_agent_kit.scaffold.finish import copy_kit_wheel, install_project, next_steps
    from mcp_agent_kit.scaffold.origin import find_origin
    from mcp_agent_kit.scaffold.render import ExistsError, render_project, write_project

    description = " ".join((args.desc or f"An MCP agent named {names.dist}.").split())
    target = Path(args.dir or ".") / names.directory
    try:
        origin = find_origin()
        files = render_project(names, description, origin)
        written = write_project(files, target, force=args.force)
        copy_kit_wheel(origin, target)
    except ExistsError as exc:
        return fail(str(exc), name=name)
    except (OSError, ValueError) as exc:
        return fail(f"could not create {target}: {exc}", "check the --out directory is writable", name=name)
    for rel in written.kept:
        print(f"kept {rel} (you changed it)")
    print(written.summary(target.absolute()), flush=True)
    installed = install_project(names, target.absolute(), wanted=args.install)
    shown = target if args.dir else Path(names.directory)
    print(next_steps(names, shown, origin, installed))
    if installed.error:
        return fail(f"{target} was made, but installing it failed: {installed.error}",
                    f"fix that, then run: {installed.line()}", name=name)
    return 0


def main_create() -> None:
    """The `create-mcp-agent` console script."""
    sys.exit(guarded(lambda: main_new(sys.argv[1:], prog=CREATE_PROG), CREATE_PROG))


def main_install(argv: list[str]) -> int:
    from mcp_agent_kit.scaffold.install import main as install_main

    return install_main(argv)
