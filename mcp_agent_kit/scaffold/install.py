"""install: add an MCP server to Claude Desktop's config, print Claude Code's command, install a skill.

Rules: the Claude Desktop config is edited only when it parses; a backup with a name of its own
(never an earlier backup's) is written first, other entries are left exactly as they were, and the
new file replaces the old atomically. Commands are made absolute (interpreter and script paths)
because hosts start servers from another directory, and are started once with no input for a
bounded time: one that does not start is added anyway, with a one-line warning on stderr.
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

CHECK_SECONDS = 3.0  # how long `install` lets the server command run to see that it starts


def claude_desktop_config_path() -> Path:
    """Where Claude Desktop keeps claude_desktop_config.json on this OS."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform.startswith("win"):
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "Claude" / "claude_desktop_config.json"
    return Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "Claude" / "claude_desktop_config.json"


def absolute_command(command: list[str]) -> list[str]:
    """Resolve the program on PATH and make existing relative file arguments absolute."""
    if not command:
        raise ValueError("give the server command after --, e.g. -- python -m my_agent.server")
    program = command[0]
    if program in ("python", "python3") or Path(program).name.startswith("python"):
        resolved = sys.executable if program in ("python", "python3") else shutil.which(program) or program
    else:
        resolved = shutil.which(program) or program
    args = [str(Path(a).absolute()) if not a.startswith("-") and Path(a).is_file() else a for a in command[1:]]
    return [str(Path(resolved).absolute()) if os.sep in resolved or Path(resolved).exists() else resolved, *args]


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


def add_to_claude_desktop(
    config: Path, name: str, command: list[str], env: dict[str, str] | None = None, *, force: bool = False
) -> Path | None:
    """Add (or with force, replace) one server entry; returns the backup path, if any."""
    data: dict[str, Any] = {}
    if config.exists():
        try:
            loaded = json.loads(config.read_text(encoding="utf-8") or "{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{config} is not valid JSON ({exc}); fix it first, nothing was written") from exc
        if not isinstance(loaded, dict) or not isinstance(loaded.get("mcpServers", {}), dict):
            raise ConfigError(f"{config} does not hold a JSON object with an mcpServers object; nothing was written")
        data = loaded
    servers = data.setdefault("mcpServers", {})
    if name in servers and not force:
        raise ConfigError(f"{config} already has a server named {name!r}; give --force to replace it")
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


def start_problem(command: list[str], env: dict[str, str], seconds: float = CHECK_SECONDS) -> str | None:
    """Start the command with no input for a bounded time; why it does not start, or None.

    A stdio server given an empty stdin exits 0 (or is still running when the time is up): fine.
    A missing program, or an exit with an error (a module that cannot be imported), is a problem.
    It runs in the home directory, as hosts start servers elsewhere than the current directory.
    """
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env={**os.environ, **env}, cwd=Path.home(), timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        return None
    except OSError as exc:
        return f"cannot run {command[0]}: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    said = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return f"it exited with code {done.returncode}" + (f" ({said[-1].strip()})" if said else "")


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
    desktop.add_argument("--no-check", action="store_true", help="do not start the command briefly to check it")
    desktop.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    code = sub.add_parser("claude-code", help="print (or --run) the `claude mcp add` command",
                          description="Print (or --run) the `claude mcp add` command.")
    code.add_argument("--name", required=True, help="the server's name in Claude Code")
    code.add_argument("--scope", default="user", choices=["local", "project", "user"],
                      help="where Claude Code keeps it (default user)")
    code.add_argument("--run", action="store_true", help="run it instead of printing it")
    code.add_argument("--no-check", action="store_true", help="do not start the command briefly to check it")
    code.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    skill = sub.add_parser("skill", help="copy a skill directory into ~/.claude/skills/", add_help=False,
                           description="Same as `mcp-agent-kit skill install`.")
    skill.add_argument("rest", nargs=argparse.REMAINDER, help="the arguments of `mcp-agent-kit skill install`")
    return cli


def _warn_unless_it_starts(args: argparse.Namespace, given: list[str], command: list[str], env: dict[str, str]) -> None:
    problem = None if args.no_check else start_problem(command, env)
    if problem:
        fail(f"warning: the server command does not start: {problem}",
             f"check that `{shlex.join(given)}` runs on its own (it was added anyway)", 0)


def _claude_code(args: argparse.Namespace, given: list[str], command: list[str]) -> int:
    line = claude_code_command(args.name, command, args.scope)
    if not args.run:
        print(shlex.join(line))
        return 0
    if shutil.which("claude") is None:
        print(shlex.join(line))
        return fail("the `claude` command (Claude Code) is not on PATH",
                    "install Claude Code, or paste the command above once it is")
    code = subprocess.call(line)
    if code == 0:
        _warn_unless_it_starts(args, given, command, {})
    return code


def _claude_desktop(args: argparse.Namespace, given: list[str], command: list[str]) -> int:
    config = args.config or claude_desktop_config_path()
    env = dict(args.env)
    try:
        backup = add_to_claude_desktop(config, args.name, command, env, force=args.force)
    except ConfigError as exc:
        return fail(str(exc))
    print(f"added {args.name!r} to {config}" + (f" (backup: {backup})" if backup else ""))
    print("restart Claude Desktop to load it")
    _warn_unless_it_starts(args, given, command, env)
    return 0


def main(argv: list[str]) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    if args.host == "skill":
        from mcp_agent_kit.packaging.cli import main_skill

        return main_skill(["install", *args.rest])
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        resolved = absolute_command(command)
    except ValueError as exc:
        cli.error(str(exc))
    add = _claude_code if args.host == "claude-code" else _claude_desktop
    return add(args, command, resolved)
