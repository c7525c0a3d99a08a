"""plugin_validate: judges an Agent Plugins 1.0.0 package the way the spec and kagent do.

Rules: standard library only; reads the package, never writes or executes it; knows nothing
about servers, transports or the CLI. Verdicts follow the spec's failure boundaries: a bad
manifest rejects the plugin; a bad ``skills/`` or ``mcp.json`` invalidates that component type;
a bad skill or server entry is skipped alone. kagent's package walk (10,000 entries, 100 MiB of
regular files, ``.git`` skipped, every symlink inside the root) is a separate ``package``
verdict. Field rules: tables of field -> checker. JSON files are read through safefile (regular,
inside the root, <= MAX_JSON_BYTES); a FIFO, device or socket in the package fails the walk.
"""

from __future__ import annotations

import ipaddress
import json
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.safefile import is_inside, read_bytes

from .findings import ERROR, WARNING, Finding, errors, warnings
from .fsutil import scan_tree
from .skill_validate import SKILL_MD, validate_skill

PLUGIN_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
MCP_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
PLUGIN_KEYS = ("$schema", "name", "version", "description", "author", "homepage",
               "repository", "license", "keywords", "extensions")
PLUGIN_NAME = re.compile(r"(?!.*(?:--|\.\.))[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")
NAMESPACE = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+", re.IGNORECASE)
CWD_FORM = re.compile(r"\./|\$\{PLUGIN_ROOT\}(?:/|$)|\$\{PLUGIN_DATA\}(?:/|$)")
PLACEHOLDER = re.compile(r"\$\{(PLUGIN_ROOT|PLUGIN_DATA)\}")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
RESERVED_ENV = ("PLUGIN_ROOT", "PLUGIN_DATA")
SECRET_HEADERS = ("authorization", "proxy-authorization", "cookie", "x-api-key", "api-key")
MAX_ENTRIES, MAX_BYTES = 10_000, 100 << 20
MAX_JSON_BYTES = 1 << 20  # plugin.json, mcp.json, .claude-plugin/plugin.json: 1 MiB each
DATA_SENTINEL = "/plugin-data-dir"

OK, ABSENT, INVALID, REJECTED, SKIPPED = "ok", "absent", "invalid", "rejected", "skipped"
TRANSPORTS: dict[str, frozenset[str]] = {
    "stdio": frozenset({"type", "command", "args", "env", "cwd"}),
    "streamable-http": frozenset({"type", "url", "headers"}),
    "sse": frozenset({"type", "url", "headers"}),
}
REQUIRED_BY_TRANSPORT = {"stdio": ("command",), "streamable-http": ("url",), "sse": ("url",)}
TYPE_HINTS = {"http": "use 'streamable-http' (\"http\" is the Claude Code and ACP spelling)"}


@dataclass
class PluginReport:
    """Spec verdicts per component plus every finding."""

    root: str
    name: str | None = None
    plugin: str = OK
    skills_component: str = ABSENT
    skills: dict[str, str] = field(default_factory=dict)
    mcp_component: str = ABSENT
    servers: dict[str, str] = field(default_factory=dict)
    package: str = OK
    findings: list[Finding] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        verdicts = [self.plugin, self.skills_component, self.mcp_component, self.package]
        verdicts += [*self.skills.values(), *self.servers.values()]
        return not errors(self.findings) and all(v in (OK, ABSENT) for v in verdicts)

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.root, "name": self.name, "valid": self.valid, "plugin": self.plugin,
            "skills": {"component": self.skills_component, "entries": self.skills},
            "mcp": {"component": self.mcp_component, "servers": self.servers},
            "package": self.package,
            "errors": [f.as_dict() for f in errors(self.findings)],
            "warnings": [f.as_dict() for f in warnings(self.findings)],
        }


class _Reporter:
    def __init__(self, report: PluginReport, root: Path) -> None:
        self.report, self.root = report, root

    def add(self, severity: str, rule: str, message: str, rel: str) -> None:
        where = os.path.join(self.report.root, rel) if rel else self.report.root
        self.report.findings.append(Finding(severity, rule, message, where))


def _load_json(path: Path, root: Path) -> tuple[Any, str | None]:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen[key] = value
        return seen

    try:
        text = read_bytes(path, limit=MAX_JSON_BYTES, root=root).decode("utf-8")
        return json.loads(text, object_pairs_hook=no_duplicates), None
    except (UnicodeDecodeError, ValueError, OSError) as exc:
        return None, f"{'not readable' if isinstance(exc, OSError) else 'not valid JSON'}: {exc}"


def _kind(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


# -- manifest ------------------------------------------------------------------------------
def _string(value: object) -> str | None:
    return None if isinstance(value, str) else f"must be a string, not {_kind(value)}"


def _schema(value: object) -> str | None:
    if value == PLUGIN_SCHEMA:
        return None
    return f"must be {PLUGIN_SCHEMA!r}; this client supports Agent Plugins 1.0.0 only"


def check_plugin_name(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, not {_kind(value)}"
    if not 1 <= len(value) <= 64 or not PLUGIN_NAME.fullmatch(value):
        return (f"{value!r} must be 1-64 characters of a-z, 0-9, '-' and '.', start and end "
                "alphanumeric, with no '--' or '..'")
    return None


def _author(value: object) -> str | None:
    if not isinstance(value, dict):
        return f"must be an object with name/email/url, not {_kind(value)}"
    extra = sorted(set(value) - {"name", "email", "url"})
    if extra:
        return f"has unknown keys {extra}; only name, email and url are allowed"
    bad = sorted(k for k, v in value.items() if not isinstance(v, str))
    return f"values must be strings ({bad})" if bad else None


def _keywords(value: object) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "must be an array of strings"
    return None


MANIFEST_CHECKS: dict[str, Callable[[object], str | None]] = {
    "$schema": _schema, "name": check_plugin_name, "version": _string, "description": _string,
    "author": _author, "homepage": _string, "repository": _string, "license": _string,
    "keywords": _keywords,
}


def _check_manifest(out: _Reporter, root: Path) -> dict[str, Any] | None:
    path = root / "plugin.json"

    def fatal(message: str) -> None:
        out.report.plugin = REJECTED
        out.add(ERROR, "manifest", message, "plugin.json")

    if not os.path.lexists(path):
        fatal("plugin.json is missing from the plugin root")
        return None
    if not is_inside(path, root):
        fatal("plugin.json resolves outside the plugin root")
        return None
    if not path.is_file():
        fatal("plugin.json is not a regular file")
        return None
    manifest, problem = _load_json(path, root)
    if problem or not isinstance(manifest, dict):
        fatal(f"plugin.json is {problem or 'not a JSON object'}")
        return None
    for key in manifest:
        if key not in PLUGIN_KEYS:
            out.add(WARNING, "manifest-unknown-key", f"unknown key {key!r} ignored; put "
                    "client-specific data under 'extensions'", "plugin.json")
    for key in ("$schema", "name"):
        if key not in manifest:
            fatal(f"required field {key!r} is missing")
    for key, check in MANIFEST_CHECKS.items():
        message = check(manifest[key]) if key in manifest else None
        if message:
            fatal(f"{key!r} {message}")
    extensions = manifest.get("extensions")
    if "extensions" in manifest and not isinstance(extensions, dict):
        out.add(WARNING, "manifest-extensions", "'extensions' is not an object; ignored",
                "plugin.json")
    elif isinstance(extensions, dict):
        for namespace, value in extensions.items():
            if not isinstance(value, dict):
                fatal(f"extensions[{namespace!r}] must be an object")
            if not NAMESPACE.fullmatch(namespace):
                out.add(WARNING, "manifest-extensions", f"extension namespace {namespace!r} is "
                        "not a reverse-domain name", "plugin.json")
    if isinstance(manifest.get("name"), str):
        out.report.name = manifest["name"]
    return manifest


# -- skills --------------------------------------------------------------------------------
def _check_skills(out: _Reporter, root: Path) -> None:
    base = root / "skills"
    if not os.path.lexists(base):
        return
    out.report.skills_component = OK
    if not is_inside(base, root) or not base.is_dir():
        out.report.skills_component = INVALID
        where = "resolves outside the plugin root" if base.is_dir() else "is not a directory"
        out.add(ERROR, "skills-component", f"skills/ {where}; no skill is loaded", "skills")
        return
    for child_name in sorted(os.listdir(base)):
        child, rel = base / child_name, f"skills/{child_name}"
        if not child.is_dir():
            if child_name.lower().endswith(".md"):
                out.add(WARNING, "skill-flat-file", f"{rel} is ignored: a skill is a directory "
                        f"(skills/<name>/SKILL.md), not a flat file", rel)
            continue
        names = os.listdir(child) if is_inside(child, root) else [SKILL_MD]
        if SKILL_MD not in names:
            odd = [n for n in names if n.lower() == SKILL_MD.lower()]
            hint = f"{odd[0]} is not discovered: the name must be exactly SKILL.md" if odd else (
                "no SKILL.md; not a skill")
            out.add(WARNING, "skill-not-found", f"{rel}: {hint}", rel)
            continue
        skill_md = child / SKILL_MD
        if not is_inside(skill_md, root):
            out.report.skills[child_name] = SKIPPED
            out.add(ERROR, "skill-outside", f"{rel}/SKILL.md resolves outside the plugin root; "
                    "skill skipped", rel)
            continue
        if not skill_md.is_file():
            out.add(WARNING, "skill-not-found", f"{rel}/SKILL.md is not a regular file", rel)
            continue
        report = validate_skill(child, root=root)
        out.report.findings.extend(report.findings)
        out.report.skills[child_name] = OK if report.valid else SKIPPED


# -- mcp.json ------------------------------------------------------------------------------
def _expand(text: str, values: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def _check_command(value: object, root: Path) -> list[str]:
    if not isinstance(value, str) or not value:
        return ["'command' must be a non-empty string"]
    if any(c in value for c in " \t\r\n\0"):
        return [f"'command' {value!r} must be one executable token, not a shell command; "
                "pass arguments in 'args'"]
    if value in (".", ".."):
        return [f"'command' {value!r} is not an executable"]
    if ("/" in value or "\\" in value) and not value.startswith("./"):
        return [f"'command' {value!r} must be a bare name or a './' path inside the plugin"]
    if not value.startswith("./"):
        return []
    target = root / value[2:]
    if not is_inside(target, root):
        return [f"'command' {value!r} resolves outside the plugin root"]
    if not target.is_file():
        return [f"'command' {value!r} does not exist in the plugin"]
    return []


def _check_cwd(value: object, root: Path) -> list[str]:
    if not isinstance(value, str):
        return ["'cwd' must be a string"]
    if not CWD_FORM.match(value):
        return [f"'cwd' {value!r} must start with './', '${{PLUGIN_ROOT}}' or '${{PLUGIN_DATA}}'"]
    expanded = _expand(value, {"PLUGIN_ROOT": str(root), "PLUGIN_DATA": DATA_SENTINEL})
    if value.startswith("${PLUGIN_DATA}"):
        inside = posixpath.normpath(expanded).startswith(DATA_SENTINEL)
        return [] if inside else [f"'cwd' {value!r} escapes the plugin data directory"]
    target = Path(expanded) if value.startswith("${") else root / expanded
    return [] if is_inside(target, root) else [f"'cwd' {value!r} resolves outside the plugin root"]


def _string_map(value: object, label: str) -> list[str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return [f"'{label}' must be an object of strings"]
    return []


def _check_env(value: object, _root: Path) -> list[str]:
    problems = _string_map(value, "env")
    if problems or not isinstance(value, dict):
        return problems
    for key, text in value.items():
        if key in RESERVED_ENV:
            problems.append(f"'env' must not set {key}; the client sets it")
        elif not key or "=" in key or "\0" in key or "\0" in text:
            problems.append(f"'env' has an invalid variable {key!r}")
    return problems


def _check_args(value: object, _root: Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and "\0" not in v for v in value):
        return ["'args' must be an array of strings"]
    return []


def _check_url(value: object, _root: Path) -> list[str]:
    if not isinstance(value, str) or not value:
        return ["'url' must be a non-empty string"]
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in value):
        return [f"'url' {value!r} contains whitespace or control characters"]
    try:
        parts = urlsplit(value)
        host, _port = parts.hostname or "", parts.port
    except ValueError as exc:
        return [f"'url' {value!r} is not a valid URL ({exc})"]
    scheme = parts.scheme.lower()
    checks = [
        (scheme not in ("http", "https"), "must be an absolute http or https URL"),
        (not host, "has no host"),
        ("@" in parts.netloc, "must not contain user information"),
        ("#" in value, "must not contain a fragment"),
        (scheme == "http" and host and not _loopback(host),
         "uses http for a non-loopback host; use https (http only for localhost or a "
         "loopback IP)"),
    ]
    return [f"'url' {value!r} {message}" for failed, message in checks if failed]


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_headers(value: object, _root: Path) -> list[str]:
    problems = _string_map(value, "headers")
    if problems or not isinstance(value, dict):
        return problems
    seen: dict[str, str] = {}
    for name, text in value.items():
        if not HEADER_NAME.fullmatch(name):
            problems.append(f"header name {name!r} is not a valid HTTP field name")
        if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in text) or (
            text != text.strip(" \t")
        ):
            problems.append(f"header {name!r} has an invalid value")
        if name.lower() in seen:
            problems.append(f"header {name!r} repeats {seen[name.lower()]!r} in another case")
        seen.setdefault(name.lower(), name)
    return problems


SERVER_CHECKS: dict[str, Callable[[object, Path], list[str]]] = {
    "command": _check_command, "args": _check_args, "env": _check_env, "cwd": _check_cwd,
    "url": _check_url, "headers": _check_headers,
}


def check_server(entry: object, root: Path) -> tuple[list[str], list[str]]:
    """(errors, warnings) for one mcpServers entry; ``root`` is the resolved plugin root."""
    if not isinstance(entry, dict):
        return ["a server entry must be an object"], []
    kind = entry.get("type")
    if not isinstance(kind, str) or kind not in TRANSPORTS:
        hint = TYPE_HINTS.get(str(kind), "use 'stdio', 'streamable-http' or 'sse'")
        return [f"'type' {kind!r} is missing or unknown; {hint}"], []
    allowed = TRANSPORTS[kind]
    problems = [f"unknown key {key!r} for a {kind} server" for key in entry if key not in allowed]
    problems += [f"'{key}' is required" for key in REQUIRED_BY_TRANSPORT[kind] if key not in entry]
    for key, value in entry.items():
        if key in TRANSPORTS[kind] and key in SERVER_CHECKS:
            problems += SERVER_CHECKS[key](value, root)
    notes: list[str] = []
    if kind == "sse":
        notes.append("'sse' is the legacy HTTP+SSE transport; client support is optional")
    env = entry.get("env")
    if isinstance(env, dict):
        notes += [f"'env' key {k!r} differs from {k.upper()} only by case"
                  for k in env if k.upper() in RESERVED_ENV and k not in RESERVED_ENV]
    headers = entry.get("headers")
    if isinstance(headers, dict):
        notes += [f"header {k!r} looks like a credential; plugins must not embed secrets"
                  for k in headers if k.lower() in SECRET_HEADERS]
    texts = [*entry.get("args", []), *(env or {}).values()] if kind == "stdio" else []
    if any(isinstance(t, str) and "${CLAUDE_PLUGIN_" in t for t in texts):
        notes.append("${CLAUDE_PLUGIN_*} is not expanded by Agent Plugins clients; use ${PLUGIN_*}")
    return problems, notes


def _check_mcp(out: _Reporter, root: Path) -> None:
    path = root / "mcp.json"
    if not os.path.lexists(path):
        return
    out.report.mcp_component = OK

    def invalid(message: str) -> None:
        out.report.mcp_component = INVALID
        out.add(ERROR, "mcp-component", message + "; MCP is disabled for this plugin", "mcp.json")

    if not is_inside(path, root):
        return invalid("mcp.json resolves outside the plugin root")
    if not path.is_file():
        return invalid("mcp.json is not a regular file")
    config, problem = _load_json(path, root)
    if problem or not isinstance(config, dict):
        return invalid(f"mcp.json is {problem or 'not a JSON object'}")
    for key in sorted(set(config) - {"$schema", "mcpServers"}):
        invalid(f"unknown top-level key {key!r}")
    if config.get("$schema") != MCP_SCHEMA:
        invalid(f"'$schema' must be {MCP_SCHEMA!r} (the same Agent Plugins version as plugin.json)")
    servers = config.get("mcpServers")
    if not isinstance(servers, dict):
        return invalid("'mcpServers' must be an object")
    for name in sorted(servers):
        problems, notes = check_server(servers[name], root)
        out.report.servers[name] = SKIPPED if problems else OK
        for message in problems:
            out.add(ERROR, "mcp-server", f"server {name!r}: {message}; entry skipped", "mcp.json")
        for message in notes:
            out.add(WARNING, "mcp-server", f"server {name!r}: {message}", "mcp.json")


# -- package walk (kagent) -------------------------------------------------------------------
def _walk(out: _Reporter, root: Path) -> None:
    """kagent's package limits and no symlink that leaves the package (fsutil.scan_tree's walk)."""
    problems = scan_tree(root, dir_links=True, max_entries=MAX_ENTRIES, max_bytes=MAX_BYTES)
    for _rule, rel, message in problems:
        out.report.package = INVALID
        out.add(ERROR, "package", message, "" if rel == "." else rel)


def _check_claude_code(out: _Reporter, root: Path, manifest: dict[str, Any] | None) -> None:
    path = root / ".claude-plugin" / "plugin.json"
    if not path.is_file() or manifest is None:
        return
    claude, problem = _load_json(path, root)
    if problem or not isinstance(claude, dict):
        what = problem or "not an object"
        out.add(WARNING, "claude-code", f".claude-plugin/plugin.json is {what}",
                ".claude-plugin/plugin.json")
        return
    for key in ("name", "version"):
        if claude.get(key) != manifest.get(key):
            out.add(WARNING, "claude-code", f"{key!r} differs from plugin.json",
                    ".claude-plugin/plugin.json")


def validate_plugin(path: Path | str) -> PluginReport:
    """Validate one plugin package directory and return the verdicts and findings."""
    given = Path(path)
    report = PluginReport(str(given))
    out = _Reporter(report, given)
    if not given.is_dir():
        report.plugin = REJECTED
        out.add(ERROR, "manifest", "the plugin root is missing or not a directory", "")
        return report
    root = given.resolve()
    manifest = _check_manifest(out, root)
    _check_skills(out, root)
    _check_mcp(out, root)
    _walk(out, root)
    _check_claude_code(out, root, manifest)
    return report
