"""install: add an MCP server to Claude Desktop's config, print Claude Code's command, install a skill.

Rules: the Claude Desktop config is edited only when it parses; a backup with a name of its own
(never an earlier backup's) is written first, other entries are left exactly as they were, and the
new file replaces the old atomically. Commands are made absolute (the program found on PATH,
interpreter and script paths) because hosts start servers from another directory and with
another PATH; a program that cannot be found is refused. Before anything is written or printed,
the command is started as the host would start it and must answer MCP (scaffold.start_check);
when it does not, nothing is written and the one-line reason is the error (exit 1).
`--no-check` skips that and says so.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp_agent_kit.cli_common import Parser, alias, fail, prog
from mcp_agent_kit.scaffold.start_check import CHECK_SECONDS, start_problem


def claude_desktop_config_path() -> Path:
    """Where Claude Desktop keeps claude_desktop_config.json on this OS."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform.startswith("win"):
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "Claude" / "claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "Claude" / "claude_desktop_config.json"


def absolute_command(command: list[str]) -> list[str]:
    """The program as an absolute path (looked up on PATH when bare) and existing relative file arguments absolute.

    ValueError when there is no command, or its program cannot be found.
    """
    if not command:
        raise ValueError("give the server command after --, e.g. -- python -m my_agent.server")
    program = command[0]
    if program in ("python", "python3"):
        resolved = sys.executable  # the interpreter this kit (and, usually, the server's packages) runs in
    elif os.sep in program or (os.altsep and os.altsep in program):
        if not Path(program).is_file():
            raise LookupError(f"no such program: {program}; check the path")
        resolved = str(Path(program).absolute())
    else:
        found = shutil.which(program)
        if found is None:
            raise LookupError(f"{program!r} is not on PATH; install it, or give its absolute path")
        resolved = str(Path(found).absolute())
    args = [str(Path(a).absolute()) if not a.startswith("-") and Path(a).is_file() else a for a in command[1:]]
    return [resolved, *args]


class ConfigError(ValueError):
    """The config file cannot be updated safely; nothing was written."""


def backup_copy(config: Path) -> Path:
    """Copy config to `NAME.YYYYmmdd-HHMMSS[-N].bak`; never replaces an earlier backup."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for count in itertools.count(1):
        backup = config.with_name(f"{config.name}.{stamp if count == 1 else f'{stamp}-{count}'}.bak")
        try:
            with open(backup, "xb") as out, open(config, "rb") as source:
                shutil.copyfileobj(source, out)
        except FileExistsError:
            continue
        shutil.copystat(config, backup)
        return backup
    raise AssertionError("unreachable")


def loaded_config(config: Path, name: str, *, force: bool) -> dict[str, Any]:
    """The config as it is ({} when absent); ConfigError when it cannot take an entry named `name`."""
    if not config.exists():
        return {}
    try:
        loaded = json.loads(config.read_text(encoding="utf-8") or "{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{config} is not valid JSON ({exc}); fix it first, nothing was written") from exc
    if not isinstance(loaded, dict) or not isinstance(loaded.get("mcpServers", {}), dict):
        raise ConfigError(f"{config} does not hold a JSON object with an mcpServers object; nothing was written")
    if name in loaded.get("mcpServers", {}) and not force:
        raise ConfigError(f"{config} already has a server named {name!r}; give --force to replace it")
    return loaded


def add_to_claude_desktop(
    config: Path, name: str, command: list[str], env: dict[str, str] | None = None, *, force: bool = False
) -> Path | None:
    """Add (or with force, replace) one server entry; returns the backup path, if any."""
    data = loaded_config(config, name, force=force)
    servers = data.setdefault("mcpServers", {})
    entry: dict[str, Any] = {"command": command[0], "args": command[1:]}
    if env:
        entry["env"] = env
    servers[name] = entry
    config.parent.mkdir(parents=True, exist_ok=True)
    backup = backup_copy(config) if config.exists() else None
    handle, temp = tempfile.mkstemp(prefix=".claude_desktop_config.", dir=config.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(data, stream, indent=2)
        stream.write("\n")
    os.replace(temp, config)
    return backup


def claude_code_command(name: str, command: list[str], scope: str) -> list[str]:
    return ["claude", "mcp", "add", "--scope", scope, name, "--", *command]


def key_value(item: str) -> tuple[str, str]:
    """argparse type for --env: `KEY=VALUE` with a non-empty KEY."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {item!r}")
    return key, value


def parser() -> Parser:
    cli = Parser(prog=prog("install"), description="Install a server into a host.")
    sub = cli.add_subparsers(dest="host", required=True)
    desktop = sub.add_parser("claude-desktop", help="add the server to Claude Desktop's config",
                             description="Add the server to Claude Desktop's config (a backup is kept).")
    desktop.add_argument("--name", required=True, help="the server's name in the config")
    desktop.add_argument("--config", type=Path, default=None, help="config file (default: this OS's location)")
    desktop.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", type=key_value,
                         help="an environment variable for the server (repeatable)")
    desktop.add_argument("--force", action="store_true", help="replace an existing entry of that name")
    alias(desktop, "--replace", dest="force", action="store_true")
    desktop.add_argument("--no-check", action="store_true",
                         help="write the entry without starting the command to see it answer MCP")
    desktop.add_argument("--check-timeout", type=float, default=CHECK_SECONDS, metavar="S",
                         help=f"seconds the server may take to answer (default {CHECK_SECONDS:g})")
    desktop.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    code = sub.add_parser("claude-code", help="print (or --run) the `claude mcp add` command",
                          description="Print (or --run) the `claude mcp add` command.")
    code.add_argument("--name", required=True, help="the server's name in Claude Code")
    code.add_argument("--scope", default="user", choices=["local", "project", "user"],
                      help="where Claude Code keeps it (default user)")
    code.add_argument("--run", action="store_true", help="run it instead of printing it")
    code.add_argument("--no-check", action="store_true",
                      help="print (or run) the command without starting the server to see it answer MCP")
    code.add_argument("--check-timeout", type=float, default=CHECK_SECONDS, metavar="S",
                      help=f"seconds the server may take to answer (default {CHECK_SECONDS:g})")
    code.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    skill = sub.add_parser("skill", help="copy a skill directory into ~/.claude/skills/", add_help=False,
                           description="Same as `mcp-agent-kit skill install`.")
    skill.add_argument("rest", nargs=argparse.REMAINDER, help="the arguments of `mcp-agent-kit skill install`")
    return cli


def _checked(args: argparse.Namespace, given: list[str], command: list[str], env: dict[str, str]) -> int | None:
    """None when the command answers MCP (or --no-check); else the exit code after saying why, nothing written."""
    if args.no_check:
        return None
    problem = start_problem(command, env, args.check_timeout)
    if problem is None:
        return None
    return fail(f"the server command does not start: {problem}",
                f"fix it and run `{shlex.join(given)}` on its own to see it answer; nothing was written "
                f"(--no-check writes anyway)")


def _claude_code(args: argparse.Namespace, given: list[str], command: list[str]) -> int:
    line = claude_code_command(args.name, command, args.scope)
    failed = _checked(args, given, command, {})
    if failed is not None:
        return failed
    if not args.run:
        print(shlex.join(line))
        return _unchecked(args, 0)
    if shutil.which("claude") is None:
        print(shlex.join(line))
        return fail("the `claude` command (Claude Code) is not on PATH",
                    "install Claude Code, or paste the command above once it is")
    return _unchecked(args, subprocess.call(line))


def _claude_desktop(args: argparse.Namespace, given: list[str], command: list[str]) -> int:
    config = args.config or claude_desktop_config_path()
    env = dict(args.env)
    try:
        loaded_config(config, args.name, force=args.force)  # a config it cannot change refuses before any start
    except ConfigError as exc:
        return fail(str(exc))
    failed = _checked(args, given, command, env)
    if failed is not None:
        return failed
    try:
        backup = add_to_claude_desktop(config, args.name, command, env, force=args.force)
    except ConfigError as exc:
        return fail(str(exc))
    print(f"added {args.name!r} to {config}" + (f" (backup: {backup})" if backup else ""))
    print("restart Claude Desktop to load it")
    return _unchecked(args, 0)


def _unchecked(args: argparse.Namespace, code: int) -> int:
    if args.no_check and code == 0:
        print("not checked (--no-check): the server command was not started to see it answer", file=sys.stderr)
    return code


def main(argv: list[str]) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    if args.host == "skill":
        from mcp_agent_kit.packaging.cli import main_skill

        return main_skill(["install", *args.rest])
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        resolved = absolute_command(command)
    except LookupError as exc:
        return fail(str(exc), "nothing was written")
    except ValueError as exc:
        cli.error(str(exc))
    add = _claude_code if args.host == "claude-code" else _claude_desktop
    return add(args, command, resolved)
