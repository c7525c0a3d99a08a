"""cli: the ``skill`` and ``plugin`` subcommands (argparse in, exit code out).

Rules: parses arguments, calls the packaging modules and prints; holds no validation or
generation logic of its own. Exit codes: 0 valid / done, 1 invalid / refused, 2 usage error; a
user mistake is one stderr line (cli_common). `--out DIR` is the one output-directory flag
(`skill new --dir` and `skill install --dest` stay as hidden aliases). `skill install` copies only
a skill that validates (no symlink out, no special file, SKILL.md within its cap) and copies it
with fsutil.copy_safe_tree, so the installed skill holds no symlink. `skill install --from-server
[--list] [NAME] -- CMD ...` (or `--from-url URL`) lists or installs a skill an MCP server publishes
(packaging.skill_fetch: every file verified, then the strict validator, then an atomic rename).
``python -m mcp_agent_kit.packaging.cli skill|plugin ...`` runs it without the kit's front door.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from mcp_agent_kit.cli_common import Parser, alias, fail, prog
from mcp_agent_kit.safefile import UnsafeFileError

from .findings import Finding
from .fsutil import TargetExistsError, copy_safe_tree, install_tree
from .plugin_build import BuildError, PluginSpec, build_plugin
from .plugin_validate import PluginReport, validate_plugin
from .skill_generate import GenerateError, render_skill, skeleton_skill, write_skill
from .skill_validate import skill_dirs, validate_skill

OK, INVALID, USAGE = 0, 1, 2


def _print_findings(findings: Sequence[Finding], stream: TextIO) -> None:
    for finding in findings:
        print(str(finding), file=stream)


def _missing(paths: Sequence[str]) -> str | None:
    return next((p for p in paths if not Path(p).exists()), None)


def _no_such_path(path: str) -> int:
    return fail(f"no such file or directory: {path}", "check the path", USAGE)


# -- skill ---------------------------------------------------------------------------------
def _skill_validate(args: argparse.Namespace) -> int:
    missing = _missing(args.paths)
    if missing:
        return _no_such_path(missing)
    reports = [validate_skill(skill, strict=args.strict) for p in args.paths for skill in skill_dirs(Path(p))]
    valid = all(report.valid for report in reports)
    if args.json:
        print(json.dumps({"valid": valid, "skills": [r.as_dict() for r in reports]}, indent=2))
        return OK if valid else INVALID
    for report in reports:
        _print_findings(report.findings, sys.stdout)
        verdict = "Valid skill" if report.valid else "Invalid skill"
        print(f"{verdict}: {report.path}")
    if len(reports) > 1:
        print(f"{sum(r.valid for r in reports)} of {len(reports)} skills valid")
    return OK if valid else INVALID


def _tools_of(target: str) -> tuple[list[dict[str, Any]], str]:
    """The MCP Tool definitions (and version) of a server object named `MODULE:ATTR`."""
    from mcp_agent_kit.loader import load_target

    server = load_target(target)
    definitions = getattr(server, "definitions", None)
    if not callable(definitions):
        raise GenerateError(f"{target} is not an MCP server object with tool definitions")
    return [dict(tool) for tool in definitions("tools")], str(getattr(server, "version", "0.1.0"))


def _skill_new(args: argparse.Namespace) -> int:
    try:
        if args.tools_from:
            tools, version = _tools_of(args.tools_from)
            files = render_skill(tools, name=args.name, description=args.desc, version=version)
        else:
            files = skeleton_skill(args.name, args.desc)
        root = write_skill(files, Path(args.out), force=args.force)
    except (GenerateError, ValueError, ImportError) as exc:  # TargetError is a ValueError
        return fail(str(exc), code=USAGE)
    except TargetExistsError as exc:
        return fail(str(exc), "give --force to replace it", INVALID)
    print(f"Created skill: {root}")
    return OK


def _from_server(args: argparse.Namespace) -> int:
    from .skill_fetch import FetchError, fetch, install, listing, with_server

    command: list[str] = args.server_command
    if bool(command) == bool(args.from_url):
        return fail("--from-server needs the server: `-- CMD ARGS...` (stdio) or --from-url URL (HTTP), one of them",
                    code=USAGE)
    if not args.list and not args.path:
        return fail("name the skill to install", "give NAME (or its SKILL.md URI), or --list to see them", USAGE)
    try:
        if args.list:
            for name, uri, about in with_server(command, args.from_url, listing):
                print(f"{name}\t{uri}\t{about}", file=sys.stderr if name == "declined" else sys.stdout)
            return OK
        fetched = with_server(command, args.from_url, lambda client: fetch(client, args.path))
        dest = Path(args.out) if args.out else Path.home() / ".claude" / "skills"
        target = install(fetched, dest, force=args.force)
    except FetchError as exc:
        for finding in exc.findings:
            print(finding, file=sys.stderr)
        return fail(str(exc), exc.fix, INVALID)
    except TargetExistsError as exc:
        return fail(str(exc), "give --force to replace it", INVALID)
    print(f"Installed skill '{fetched.name}' from {fetched.uri} to {target}")
    return OK


def _skill_install(args: argparse.Namespace) -> int:
    if args.from_server or args.from_url or args.server_command:
        return _from_server(args)
    if args.list:
        return fail("--list lists a server's skills", "add --from-server with -- CMD or --from-url URL", USAGE)
    if not args.path:
        return fail("name the skill directory to install", "give PATH, or --from-server to install from a server",
                    USAGE)
    if _missing([args.path]):
        return _no_such_path(args.path)
    source = Path(args.path)
    source = source.parent if source.name.lower() == "skill.md" and not source.is_dir() else source
    report = validate_skill(source)
    if not report.valid or report.name is None:
        _print_findings(report.findings, sys.stderr)
        return fail(f"not installing an invalid skill: {source}", "fix the errors above first", INVALID)
    dest = Path(args.out) if args.out else Path.home() / ".claude" / "skills"
    try:
        target = install_tree(lambda tmp: copy_safe_tree(source, tmp), dest / report.name,
                              force=args.force)
    except TargetExistsError as exc:
        return fail(str(exc), "give --force to replace it", INVALID)
    except UnsafeFileError as exc:  # changed between the validation and the copy
        return fail(f"not installing {source}: {exc} [{exc.rule}]", code=INVALID)
    print(f"Installed skill '{report.name}' to {target}")
    return OK


def skill_parser() -> Parser:
    parser = Parser(prog=prog("skill"), description="Agent Skills (SKILL.md) tools")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("validate", help="validate skill directories", description="Validate skill directories.")
    check.add_argument("paths", nargs="+", metavar="PATH",
                       help="a skill directory (or its SKILL.md), or a folder of skill directories (each is checked)")
    check.add_argument("--json", action="store_true", help="machine-readable report")
    check.add_argument("--strict", action="store_true", help="also apply the kit design rules")
    check.set_defaults(run=_skill_validate)
    new = sub.add_parser("new", help="write a skeleton skill", description="Write a skeleton skill.")
    new.add_argument("name", help="the skill name, e.g. my-agent (my_agent becomes my-agent)")
    new.add_argument("--desc", required=True, help="'Use when X. Do not use for Y.'")
    new.add_argument("--out", default=".", metavar="DIR",
                     help="parent directory: the skill goes in DIR/NAME (default: .)")
    alias(new, "--dir", dest="out")
    new.add_argument("--force", action="store_true", help="replace an existing skill")
    new.add_argument("--tools-from", metavar="MODULE:ATTR",
                     help="index the tools of this MCP server object (e.g. examples/metrics_server.py:server)")
    new.set_defaults(run=_skill_new)
    install = sub.add_parser("install", help="copy a skill into ~/.claude/skills/<name>/",
                             description="Copy a skill into ~/.claude/skills/<name>/, from a directory or "
                             "from an MCP server (--from-server ... -- CMD ARGS, or --from-url URL).")
    install.add_argument("path", nargs="?", metavar="PATH|NAME",
                         help="the skill directory (or its SKILL.md); with --from-server the skill's name or URI")
    install.add_argument("--from-server", action="store_true",
                         help="install a skill an MCP server publishes (Skills over MCP); the server is "
                         "`-- CMD ARGS...` (stdio) or --from-url")
    install.add_argument("--from-url", metavar="URL", help="the server's Streamable HTTP endpoint")
    install.add_argument("--list", action="store_true", help="with --from-server: list the server's skills")
    install.add_argument("--out", metavar="DIR", help="skills directory: the skill goes in DIR/NAME "
                         "(default: ~/.claude/skills)")
    alias(install, "--dest", dest="out")
    install.add_argument("--force", action="store_true", help="replace an installed skill")
    install.set_defaults(run=_skill_install, server_command=[])
    return parser


# -- plugin --------------------------------------------------------------------------------
def plugin_summary(report: PluginReport) -> list[str]:
    """The verdicts of `plugin validate`, one line per component, each entry with its own verdict:
    `skills: ok (2: greet ok, search skipped)`."""
    def component(label: str, verdict: str, entries: dict[str, str]) -> str:
        listed = ", ".join(f"{name} {entries[name]}" for name in sorted(entries))
        return f"{label}: {verdict}" + (f" ({len(entries)}: {listed})" if entries else "")

    named = f" ({report.name})" if report.name else ""
    return [f"plugin.json: {report.plugin}{named}", component("skills", report.skills_component, report.skills),
            component("mcp.json servers", report.mcp_component, report.servers), f"package: {report.package}"]


def _plugin_validate(args: argparse.Namespace) -> int:
    if _missing([args.path]):
        return _no_such_path(args.path)
    report = validate_plugin(Path(args.path))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return OK if report.valid else INVALID
    _print_findings(report.findings, sys.stdout)
    for line in plugin_summary(report):
        print(line)
    print(f"{'Valid' if report.valid else 'Invalid'} plugin: {report.root}")
    return OK if report.valid else INVALID


def _plugin_build(args: argparse.Namespace) -> int:
    try:
        extra = shlex.split(args.args) if args.args else []
    except ValueError as exc:
        return fail(f"--args: {exc}", "quote the arguments as a shell would", USAGE)
    spec = PluginSpec(
        name=args.name, description=args.desc or "", version=args.version,
        command=args.command, args=extra, url=args.url, server_name=args.server_name,
        skill_dirs=[Path(s) for s in args.skill], include=[Path(i) for i in args.include],
        claude_code=args.claude_code,
    )
    try:
        root = build_plugin(spec, Path(args.out), force=args.force)
    except TargetExistsError as exc:
        return fail(str(exc), "give --force to replace it", INVALID)
    except BuildError as exc:
        return fail(str(exc), code=INVALID)
    print(f"Built plugin '{args.name}' in {root}")
    return OK


def plugin_parser() -> Parser:
    parser = Parser(prog=prog("plugin"), description="Agent Plugins 1.0.0 tools")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("validate", help="validate a plugin package", description="Validate a plugin package.")
    check.add_argument("path", help="the plugin package directory")
    check.add_argument("--json", action="store_true", help="machine-readable report")
    check.set_defaults(run=_plugin_validate)
    build = sub.add_parser("build", help="write a plugin package", description="Write a plugin package.")
    build.add_argument("--name", required=True, help="the plugin name (lowercase, hyphens)")
    build.add_argument("--desc", help="one-sentence description of the plugin")
    build.add_argument("--version", default="0.1.0", help="the plugin's own version (default 0.1.0)")
    build.add_argument("--command", help="stdio command: a bare name or ./path")
    build.add_argument("--args", help="arguments for the command (shell-style quoting)")
    build.add_argument("--url", help="a streamable-http endpoint")
    build.add_argument("--server-name", help="mcp.json server name (default: --name)")
    build.add_argument("--skill", action="append", default=[], metavar="DIR",
                       help="a skill directory to include (repeatable)")
    build.add_argument("--include", action="append", default=[], metavar="PATH",
                       help="file or directory copied into the package root")
    build.add_argument("--out", required=True, metavar="DIR", help="the package directory to write")
    build.add_argument("--claude-code", action="store_true",
                       help="also write .claude-plugin/plugin.json and .mcp.json")
    build.add_argument("--force", action="store_true", help="replace an existing package")
    build.set_defaults(run=_plugin_build)
    return parser


def _run(parser: Parser, argv: list[str], **extra: Any) -> int:
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error, already reported on one line (2)
        return exc.code if isinstance(exc.code, int) else OK
    for key, value in extra.items():
        setattr(args, key, value)
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


def main_skill(argv: list[str]) -> int:
    """``skill validate|new|install ...``; returns the exit code. For ``install``, what follows
    ``--`` is the stdio command of the server to install from."""
    if argv[:1] == ["install"] and "--" in argv:
        at = argv.index("--")
        command = argv[at + 1 :]
        if not command:
            return fail("nothing after --", "give the server command: -- CMD ARGS...", USAGE)
        return _run(skill_parser(), argv[:at], server_command=command)
    return _run(skill_parser(), argv)


def main_plugin(argv: list[str]) -> int:
    """``plugin validate|build ...``; returns the exit code."""
    return _run(plugin_parser(), argv)


COMMANDS: dict[str, Callable[[list[str]], int]] = {"skill": main_skill, "plugin": main_plugin}


def main(argv: list[str]) -> int:
    """Dispatch on the first argument: ``skill`` or ``plugin``."""
    if not argv or argv[0] not in COMMANDS:
        return fail("expected skill or plugin", "usage: python -m mcp_agent_kit.packaging.cli {skill,plugin} ...",
                    USAGE)
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
