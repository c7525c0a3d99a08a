"""install: add an MCP server to Claude Desktop's config, print Claude Code's command, install a skill.

Rules: the Claude Desktop config is edited only when it parses; a backup is written first, other
entries are left exactly as they were, and the new file replaces the old atomically. Commands are
made absolute (interpreter and script paths) because hosts start servers from another directory.
"""

from __future__ import annotations

import argparse
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


def add_to_claude_desktop(
    config: Path, name: str, command: list[str], env: dict[str, str] | None = None, *, replace: bool = False
) -> Path | None:
    """Add (or with replace, update) one server entry; returns the backup path, if any."""
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
    if name in servers and not replace:
        raise ConfigError(f"{config} already has a server named {name!r}; use --replace to update it")
    entry: dict[str, Any] = {"command": command[0], "args": command[1:]}
    if env:
        entry["env"] = env
    servers[name] = entry
    backup = None
    config.parent.mkdir(parents=True, exist_ok=True)
    if config.exists():
        backup = config.with_name(f"{config.name}.{time.strftime('%Y%m%d-%H%M%S')}.bak")
        shutil.copy2(config, backup)
    handle, temp = tempfile.mkstemp(prefix=".claude_desktop_config.", dir=config.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(data, stream, indent=2)
        stream.write("\n")
    os.replace(temp, config)
    return backup


def claude_code_command(name: str, command: list[str], scope: str) -> list[str]:
    return ["claude", "mcp", "add", "--scope", scope, name, "--", *command]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mcp-agent-kit install", description="Install a server into a host.")
    sub = parser.add_subparsers(dest="host", required=True)
    desktop = sub.add_parser("claude-desktop", help="add the server to Claude Desktop's config")
    desktop.add_argument("--name", required=True)
    desktop.add_argument("--config", type=Path, default=None, help="config file (default: this OS's location)")
    desktop.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    desktop.add_argument("--replace", action="store_true", help="update an existing entry of that name")
    desktop.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    code = sub.add_parser("claude-code", help="print (or --run) the `claude mcp add` command")
    code.add_argument("--name", required=True)
    code.add_argument("--scope", default="user", choices=["local", "project", "user"])
    code.add_argument("--run", action="store_true", help="run it instead of printing it")
    code.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    skill = sub.add_parser("skill", help="copy a skill directory into ~/.claude/skills/")
    skill.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.host == "skill":
        from mcp_agent_kit.packaging.cli import main_skill

        return main_skill(["install", *args.rest])
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        resolved = absolute_command(command)
    except ValueError as exc:
        parser.error(str(exc))
    if args.host == "claude-code":
        line = claude_code_command(args.name, resolved, args.scope)
        if not args.run:
            print(shlex.join(line))
            return 0
        return subprocess.call(line)
    env = dict(item.split("=", 1) for item in args.env if "=" in item)
    config = args.config or claude_desktop_config_path()
    try:
        backup = add_to_claude_desktop(config, args.name, resolved, env, replace=args.replace)
    except ConfigError as exc:
        print(f"install: {exc}", file=sys.stderr)
        return 1
    print(f"added {args.name!r} to {config}" + (f" (backup: {backup})" if backup else ""))
    print("restart Claude Desktop to load it")
    return 0
