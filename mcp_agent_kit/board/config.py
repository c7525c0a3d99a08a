"""board.config: the board's CONFIG file read into one frozen BoardConfig — agents, limits, workspaces, webhooks.

The document is JSON with three sections (every other top-level key is refused):
- `agents`: the gateway's shape (gateway.agents_config: `"name"` or `"namespace/name"` -> `{"acp": {...}}`
  with `approve`, `env`, `mcpServers`, `max_concurrent`, `timeout`). An agent's id on the board is its key
  without the `default/` namespace. An entry that is `{}` names a found agent by its id (acp.known: the
  command is looked up on PATH); so does `board.agent` when no entry has that id. With no agents at all,
  every known agent found on PATH is the board's. A2A entries are refused: a board task's agent works
  in the task's worktree on this machine, which a remote A2A agent cannot ("not supported by the board yet").
- `board`: `max_concurrent` (whole board, default 4), `agent` (the default agent id), `author` (the commit
  author of an accept, "Name <email>"; default git's own), `workspace` {`base`, `copy` [globs], `setup`
  (shell string), `setupTimeout` (s, default 600), `mode` "worktree" | "in-place"}, `webhooks`
  [{`url`, `secretEnv`, `events` [...]}] (board.webhooks.parse_webhooks: the signing secret is read from
  the variable `secretEnv` names when the config is read; events absent or empty: every semantic event).
- `mcpServers`: MCP servers handed to every task's session, as ACP's McpServer list or as an object keyed
  by name in the gateway's shape (converted like an acp entry's `mcpServers`).
- `hosts`: the agent hosts tasks may run on (board.hosts.parse_hosts; their tokens read from the environment
  now), with `board.repoUrl`, where hosts clone the repository from (default: the repository's path). An
  agent a host declares (`agents`) is the board's even without an `agents` entry.
An agent's own `max_concurrent` limits it only when the config sets it (the gateway's default of 4 does not
apply on the board: the board's limit does); its `timeout` (one turn, a question's wait for a person
included) defaults to DEFAULT_TURN_TIMEOUT, an hour, not the gateway's ten minutes. Rules: plain data
in, frozen data out; no I/O beyond reading the file, the webhooks' secrets from the environment and looking
commands up on PATH; every mistake is one
ConfigError line naming the key and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.gateway.config import ConfigError

if TYPE_CHECKING:
    from mcp_agent_kit.board.hosts import HostSpec
    from mcp_agent_kit.board.webhooks import Webhook

__all__ = ["DEFAULT_MAX_CONCURRENT", "BoardConfig", "ConfigError", "WorkspaceSettings", "load_config",
           "parse_config"]

DEFAULT_MAX_CONCURRENT = 4
DEFAULT_SETUP_TIMEOUT = 600.0
DEFAULT_TURN_TIMEOUT = 3600.0  # seconds one turn may take, a question's wait for a person included
MAX_CONFIG_BYTES = 1 << 20
_TOP_KEYS = ("agents", "board", "mcpServers", "hosts")
_BOARD_KEYS = ("max_concurrent", "agent", "author", "workspace", "webhooks", "repoUrl")
_WORKSPACE_KEYS = ("base", "copy", "setup", "setupTimeout", "mode")
_MODES = ("worktree", "in-place")


@dataclass(frozen=True)
class WorkspaceSettings:
    """`board.workspace`: how each task's workspace is made (board.workspaces.Workspaces' arguments)."""

    base: str | None = None
    copy: tuple[str, ...] = ()
    setup: str | None = None
    setup_timeout: float = DEFAULT_SETUP_TIMEOUT
    mode: str = "worktree"


@dataclass(frozen=True)
class BoardConfig:
    """The whole board config. `agents`: id -> the gateway's AgentSpec (ACP only); `agent_limits`: id -> its own
    max_concurrent when the config set one; `mcp_servers`: ACP McpServer objects for every task's session."""

    agents: Mapping[str, Any] = field(default_factory=dict)  # id -> gateway.agents_config.AgentSpec
    agent_limits: Mapping[str, int] = field(default_factory=dict)
    default_agent: str | None = None
    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    author: str | None = None
    workspace: WorkspaceSettings = field(default_factory=WorkspaceSettings)
    webhooks: tuple[Webhook, ...] = ()  # board.webhooks.Webhook: url, secret (read from secretEnv), events
    mcp_servers: tuple[dict[str, Any], ...] = ()
    hosts: Mapping[str, HostSpec] = field(default_factory=dict)  # board.hosts: host id -> its entry
    repo_url: str | None = None  # board.repoUrl: where hosts clone the repository from (None: its path)


def load_config(path: str | Path | None) -> BoardConfig:
    """The config in the JSON file at `path` (None: no file, the defaults and the agents found on PATH)."""
    if path is None:
        return parse_config({})
    from mcp_agent_kit.safefile import read_bytes

    try:
        data = json.loads(read_bytes(path, limit=MAX_CONFIG_BYTES).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the board config {path}: {exc}") from None
    except ValueError as exc:
        raise ConfigError(f"the board config {path} is not JSON ({exc}): fix the file") from None
    return parse_config(data)


def _object(value: Any, where: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object with {', '.join(keys)}")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown} (known: {', '.join(keys)})")
    return value


def _whole(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{where} must be a whole number from {low} to {high}")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be a non-empty string")
    return value


def parse_config(data: Any) -> BoardConfig:
    """The BoardConfig of a parsed document (see the module docstring); ConfigError names the first mistake."""
    top = _object(data, "the board config", _TOP_KEYS)
    board = _object(top.get("board", {}), '"board"', _BOARD_KEYS)
    default = board.get("agent")
    if default is not None:
        default = _text(default, '"board": agent')
    from mcp_agent_kit.board.hosts import parse_hosts

    hosts = parse_hosts(top.get("hosts"))
    remote = {agent for host in hosts.values() for agent in host.agents or ()}
    agents, limits = _agents(top.get("agents"), default if default not in remote else None)
    everyone = set(agents) | remote
    if default is None and len(everyone) == 1:
        default = next(iter(everyone))
    if default is not None and default not in agents and default not in remote:  # pragma: no cover
        raise ConfigError(f'"board": agent {default!r} is not configured: add it to "agents"')
    author = board.get("author")
    if author is not None:
        from mcp_agent_kit.board.changes import parse_author
        from mcp_agent_kit.board.git import WorkspaceError

        try:
            parse_author(_text(author, '"board": author'))
        except WorkspaceError as exc:
            raise ConfigError(f'"board": {exc}') from None
    return BoardConfig(
        agents=agents, agent_limits=limits, default_agent=default, author=author,
        max_concurrent=_whole(board.get("max_concurrent", DEFAULT_MAX_CONCURRENT), '"board": max_concurrent', 1,
                              1000),
        workspace=_workspace(board.get("workspace", {})), webhooks=_webhooks(board.get("webhooks")),
        mcp_servers=_servers(top.get("mcpServers", [])), hosts=hosts,
        repo_url=None if board.get("repoUrl") is None else _text(board["repoUrl"], '"board": repoUrl'))


def _agent_id(ref: str) -> str:
    return ref.removeprefix("default/")


def _agents(section: Any, default: str | None) -> tuple[dict[str, Any], dict[str, int]]:
    """id -> AgentSpec and id -> its own limit, found agents resolved, A2A refused."""
    from mcp_agent_kit.acp.client import known
    from mcp_agent_kit.gateway.agents_config import parse_agents

    if section is None:
        section = {}
    if not isinstance(section, dict):
        raise ConfigError('"agents" must be an object of "name": {"acp": {...}} (or {} for a found agent)')
    entries = dict(section)
    found = [name for name, entry in entries.items() if entry == {}]
    if default is not None and default not in entries and f"default/{default}" not in entries:
        found.append(default)
    if not entries and default is None:  # no agents named: every known agent on PATH
        entries = {agent.id: known.agent_entry(agent.id) for agent in known.KNOWN if known.locate(agent) is not None}
    for name in found:
        try:
            entries[name] = known.agent_entry(name)
        except (known.UnknownAgent, known.AgentNotFound) as exc:
            raise ConfigError(f"agent {name!r}: {exc}") from None
    for name, entry in entries.items():
        if isinstance(entry, dict) and "a2a" in entry:
            raise ConfigError(f"agent {name!r}: A2A agents are not supported by the board yet (a task's agent works "
                              "in the task's worktree on this machine): give an ACP agent")
    specs = parse_agents({"agents": entries})
    agents = {_agent_id(ref): spec for ref, spec in specs.items()}
    for name, entry in entries.items():  # a turn may wait for a person's answer: the board's default is longer
        if "timeout" not in entry:
            agent_id = _agent_id(specs_key(name))
            agents[agent_id] = replace(agents[agent_id], timeout=DEFAULT_TURN_TIMEOUT)
    limits: dict[str, int] = {}
    for name, entry in entries.items():
        own = entry.get("max_concurrent", (entry.get("acp") or {}).get("max_concurrent"))
        if own is not None:
            limits[_agent_id(specs_key(name))] = int(own)
    return agents, limits


def specs_key(name: str) -> str:
    """An `agents` key as the gateway's parser names it (`name` -> `default/name`)."""
    return name if "/" in name else f"default/{name}"


def _workspace(value: Any) -> WorkspaceSettings:
    section = _object(value, '"board": workspace', _WORKSPACE_KEYS)
    base = section.get("base")
    if base is not None:
        from mcp_agent_kit.board import task_fields
        from mcp_agent_kit.board.errors import TaskInvalid

        try:
            task_fields.check_ref('"board": workspace base', base)
        except TaskInvalid as exc:
            raise ConfigError(str(exc)) from None
    copy = section.get("copy", [])
    if not isinstance(copy, list) or not all(isinstance(item, str) for item in copy):
        raise ConfigError('"board": workspace copy must be a list of globs (e.g. [".env"])')
    from mcp_agent_kit.board.git import WorkspaceError
    from mcp_agent_kit.board.prepare import check_copy_globs

    try:
        globs = check_copy_globs(copy)
    except WorkspaceError as exc:
        raise ConfigError(f'"board": workspace {exc}') from None
    setup = section.get("setup")
    if setup is not None:
        setup = _text(setup, '"board": workspace setup (a shell command)')
    timeout = section.get("setupTimeout", DEFAULT_SETUP_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 86400:
        raise ConfigError('"board": workspace setupTimeout must be seconds above 0, at most 86400')
    mode = section.get("mode", "worktree")
    if mode not in _MODES:
        raise ConfigError(f'"board": workspace mode must be one of {", ".join(_MODES)}, not {mode!r}')
    return WorkspaceSettings(base, globs, setup, float(timeout), mode)


def _webhooks(value: Any) -> tuple[Webhook, ...]:
    """`board.webhooks` through board.webhooks' one parser (the secret read from `secretEnv` now)."""
    from mcp_agent_kit.board.webhooks import WebhookInvalid, parse_webhooks

    try:
        return parse_webhooks(value, where='"board": webhooks')
    except WebhookInvalid as exc:
        raise ConfigError(str(exc)) from None


def _servers(value: Any) -> tuple[dict[str, Any], ...]:
    """Top-level mcpServers: ACP McpServer objects (a list) or the gateway's object keyed by name."""
    if isinstance(value, dict):
        from mcp_agent_kit.gateway.agents_config import _mcp_server

        return tuple(_mcp_server(f'"mcpServers" {name!r}', str(name), entry) for name, entry in value.items())
    if not isinstance(value, list):
        raise ConfigError('"mcpServers" must be a list of ACP McpServer objects or an object of '
                          '"name": {"command": ...} | {"url": ...}')
    out = []
    for index, server in enumerate(value):
        where = f'"mcpServers"[{index}]'
        if not isinstance(server, dict) or not isinstance(server.get("name"), str):
            raise ConfigError(f'{where} must be an ACP McpServer object with a "name"')
        stdio = isinstance(server.get("command"), str) and server.get("type") is None
        remote = server.get("type") in ("http", "sse") and isinstance(server.get("url"), str)
        if not (stdio or remote):
            raise ConfigError(f'{where} ({server["name"]}): give "command" (stdio) or "type" http|sse with a "url"')
        listed = ("args", "env") if stdio else ("headers",)
        if any(not isinstance(server.get(key, []), list) for key in listed):
            raise ConfigError(f"{where} ({server['name']}): {' and '.join(listed)} must be lists")
        out.append({**server, **{key: list(server.get(key, [])) for key in listed}})
    return tuple(out)
