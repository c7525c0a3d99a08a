"""plugin_build: writes an Agent Plugins 1.0.0 package (optionally Claude Code-ready too).

Rules: standard library only; knows nothing about servers or transports: the MCP server is
just a stdio command line and/or a streamable-http URL. The package is built in a temporary
directory, checked with ``plugin_validate`` and only then renamed into place; an existing
target is refused unless ``force``. With ``claude_code`` it also writes
``.claude-plugin/plugin.json`` and ``.mcp.json`` around the same ``skills/`` tree.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_agent_kit.safefile import UnsafeFileError
from mcp_agent_kit.wire.frontmatter import read

from .findings import errors
from .fsutil import copy_safe_tree, install_tree, write_files
from .plugin_validate import (
    MCP_SCHEMA,
    PLUGIN_SCHEMA,
    check_plugin_name,
    check_server,
    validate_plugin,
)
from .skill_validate import validate_skill

CLAUDE_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
CLAUDE_VARIABLES = {
    "${PLUGIN_ROOT}": "${CLAUDE_PLUGIN_ROOT}",
    "${PLUGIN_DATA}": "${CLAUDE_PLUGIN_DATA}",
}


class BuildError(ValueError):
    """The inputs cannot make a valid package."""


@dataclass
class PluginSpec:
    """What goes into a package. ``command`` starting with ``./`` is copied from ``base_dir``."""

    name: str
    description: str = ""
    version: str = "0.1.0"
    command: str | None = None
    args: list[str] = field(default_factory=list)
    url: str | None = None
    server_name: str | None = None
    skill_dirs: list[Path] = field(default_factory=list)
    skill_files: list[Mapping[str, str]] = field(default_factory=list)
    include: list[Path] = field(default_factory=list)
    base_dir: Path = field(default_factory=Path.cwd)
    claude_code: bool = False


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _servers(spec: PluginSpec) -> dict[str, dict[str, Any]]:
    name = spec.server_name or spec.name
    servers: dict[str, dict[str, Any]] = {}
    if spec.command is not None:
        entry: dict[str, Any] = {"type": "stdio", "command": spec.command}
        if spec.args:
            entry["args"] = list(spec.args)
        servers[name] = entry
    if spec.url is not None:
        servers[f"{name}-http" if spec.command is not None else name] = {
            "type": "streamable-http", "url": spec.url}
    return servers


def _claude_translate(text: str) -> str:
    for ours, theirs in CLAUDE_VARIABLES.items():
        text = text.replace(ours, theirs)
    return text


def _claude_servers(servers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = {}
    for name, entry in servers.items():
        if entry["type"] != "stdio":
            result[name] = {"type": "http", "url": entry["url"]}
            continue
        command = str(entry["command"])
        if command.startswith("./"):
            command = "${CLAUDE_PLUGIN_ROOT}/" + command[2:]
        converted: dict[str, Any] = {"command": command}
        if entry.get("args"):
            converted["args"] = [_claude_translate(a) for a in entry["args"]]
        result[name] = converted
    return result


def plugin_files(spec: PluginSpec) -> dict[str, str]:
    """The JSON files of the package: ``{relative path: text}``."""
    manifest: dict[str, Any] = {"$schema": PLUGIN_SCHEMA, "name": spec.name}
    manifest["version"] = spec.version
    if spec.description:
        manifest["description"] = spec.description
    files = {"plugin.json": _json(manifest)}
    servers = _servers(spec)
    if servers:
        files["mcp.json"] = _json({"$schema": MCP_SCHEMA, "mcpServers": servers})
    if spec.claude_code:
        claude = {k: v for k, v in manifest.items() if k != "$schema"}
        files[".claude-plugin/plugin.json"] = _json(claude)
        if servers:
            files[".mcp.json"] = _json({"mcpServers": _claude_servers(servers)})
    return files


def _precheck(spec: PluginSpec) -> None:
    problem = check_plugin_name(spec.name)
    if problem:
        raise BuildError(f"plugin name {problem}")
    if spec.claude_code and not CLAUDE_NAME.fullmatch(spec.name):
        raise BuildError(f"Claude Code plugin names must be kebab-case; {spec.name!r} is not")
    for entry in _servers(spec).values():
        checked = dict(entry)
        if checked.get("command", "").startswith("./"):
            checked["command"] = "true"  # existence is checked after copying
        problems, _ = check_server(checked, Path("/"))
        if problems:
            raise BuildError("; ".join(problems))
    for skill in spec.skill_dirs:
        report = validate_skill(skill)
        if not report.valid:
            raise BuildError("; ".join(str(f) for f in errors(report.findings)))


def _copy_command(spec: PluginSpec, root: Path) -> None:
    if spec.command is None or not spec.command.startswith("./"):
        return
    target = root / spec.command[2:]
    if not target.exists():
        source = spec.base_dir / spec.command[2:]
        if not source.is_file():
            raise BuildError(f"{spec.command} is neither included nor found in {spec.base_dir}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    mode = os.stat(target).st_mode
    os.chmod(target, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def build_plugin(spec: PluginSpec, out: Path, *, force: bool = False) -> Path:
    """Write the package to ``out`` and return it; raise BuildError if it would be invalid."""
    _precheck(spec)

    def build(tmp: Path) -> None:
        write_files(tmp, plugin_files(spec))
        try:  # a directory is copied with no symlink that leaves it and no special file in it
            for item in spec.include:
                destination = tmp / item.name
                if item.is_dir():
                    copy_safe_tree(item, destination)
                elif item.is_file():  # named on purpose: a link to a regular file is copied as that file
                    shutil.copy2(item, destination)
                else:
                    raise BuildError(f"--include {item}: not a regular file or directory")
            _copy_command(spec, tmp)
            for skill in spec.skill_dirs:
                copy_safe_tree(skill, tmp / "skills" / Path(os.path.abspath(skill)).name)
        except UnsafeFileError as exc:
            raise BuildError(f"refusing to package it: {exc}") from exc
        for files in spec.skill_files:
            name = _skill_dir_name(files)
            write_files(tmp / "skills" / name, dict(files))
        report = validate_plugin(tmp)
        if not report.valid:
            raise BuildError("; ".join(str(f) for f in errors(report.findings)) or "invalid")

    return install_tree(build, Path(out), force=force)


def _skill_dir_name(files: Mapping[str, str]) -> str:
    name = (read(files["SKILL.md"]).data or {}).get("name")
    if not isinstance(name, str):
        raise BuildError("a generated skill has no name")
    return name
