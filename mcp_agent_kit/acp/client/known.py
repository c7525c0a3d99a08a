"""acp.client.known: the ACP coding agents the kit knows by id, and which of them are installed here.

KNOWN is a table, one row per agent: its id (the ACP registry's id, agentclientprotocol/registry
`<id>/agent.json`), its name, the program looked up on PATH, the arguments that start it in ACP
mode over stdio, the arguments that make it print its version, an install line and a homepage.
`found_agents()` looks every row up on PATH (shutil.which) and runs the version command of each one
found, all at once on threads, each through the kit's one child-process manager (process.PeerProcess:
own process group, minimal environment, stdin closed at once) and bounded: a version command that
hangs is stopped (SIGTERM, then SIGKILL, the whole group) after `timeout` seconds, one that crashes
gives no version and says why. `agent_entry(id)` is the gateway-shaped config entry
(`{"acp": {"command", "args", "env"}, "description"}`, gateway/agents_config.py) that starts a found
agent, so a board or gateway config can name a found agent by its id alone (`with_found()` adds
the entries a config lacks).

Where each launch comes from (checked 2026-12; docs/agents.md has the table):
- claude-acp: npm @agentclientprotocol/claude-agent-acp, bin `claude-agent-acp`, no arguments
  (registry claude-acp/agent.json); `--version` prints the package version (its src/index.ts).
  It superseded @zed-industries/claude-code-acp and @zed-industries/claude-agent-acp.
- codex-acp: npm @agentclientprotocol/codex-acp, bin `codex-acp`, no arguments; `codex-acp --version`
  (its README). It superseded the Rust @zed-industries/codex-acp.
- gemini: npm @google/gemini-cli, `gemini --acp` (google-gemini/gemini-cli docs/cli/acp-mode.md;
  `--experimental-acp` is the deprecated older spelling), `gemini --version`.
- qwen-code: npm @qwen-code/qwen-code, `qwen --acp` (qwen-code-docs users/integration-zed; the
  registry adds `--experimental-skills`), plus `--approval-mode default` so that edits and shell
  commands reach the client's permission policy (docs/acp-real-agents.md, measured with 0.24.4).
- opencode: npm opencode-ai, `opencode acp` (opencode.ai/docs/acp), `opencode --version`.
- goose: a release binary, `goose acp` (block.github.io/goose/docs/guides/acp-clients), `goose --version`.
- github-copilot-cli: npm @github/copilot, `copilot --acp` (registry github-copilot-cli; measured
  with 1.0.102, shared ACP research notes).
Rules: a table, not a chain of ifs; no network, no install, nothing run but `version_args`;
imports only process of ours.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

VERSION_TIMEOUT_S = 5.0  # how long one agent's version command may take
STOP_GRACE_S = 0.5  # after the timeout: SIGTERM, this long, then SIGKILL (the whole group)
OUTPUT_LIMIT = 16 * 1024  # bytes of a version command's stdout kept
MAX_PROBES = 8  # version commands run at once
_VERSION = re.compile(r"\bv?(\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.]+)?(?:\+[0-9A-Za-z.]+)?)")


@dataclass(frozen=True)
class KnownAgent:
    """One ACP agent the kit knows: how to find it, start it in ACP mode, ask its version, install it."""

    id: str
    name: str
    program: str  # looked up on PATH
    args: tuple[str, ...]  # after the program: start in ACP mode over stdio
    install: str  # one shell line that installs it
    homepage: str
    version_args: tuple[str, ...] = ("--version",)


KNOWN: tuple[KnownAgent, ...] = (
    KnownAgent("claude-acp", "Claude Agent (Claude Code's ACP adapter)", "claude-agent-acp", (),
               "npm install -g @agentclientprotocol/claude-agent-acp",
               "https://github.com/agentclientprotocol/claude-agent-acp"),
    KnownAgent("codex-acp", "Codex (ACP adapter)", "codex-acp", (),
               "npm install -g @agentclientprotocol/codex-acp", "https://github.com/agentclientprotocol/codex-acp"),
    KnownAgent("gemini", "Gemini CLI", "gemini", ("--acp",),
               "npm install -g @google/gemini-cli", "https://github.com/google-gemini/gemini-cli"),
    KnownAgent("qwen-code", "Qwen Code", "qwen", ("--acp", "--approval-mode", "default"),
               "npm install -g @qwen-code/qwen-code", "https://github.com/QwenLM/qwen-code"),
    KnownAgent("opencode", "OpenCode", "opencode", ("acp",), "npm install -g opencode-ai", "https://opencode.ai"),
    KnownAgent("goose", "goose", "goose", ("acp",),
               "curl -fsSL https://github.com/aaif-goose/goose/releases/download/stable/download_cli.sh | bash",
               "https://block.github.io/goose/"),
    KnownAgent("github-copilot-cli", "GitHub Copilot CLI", "copilot", ("--acp",),
               "npm install -g @github/copilot", "https://github.com/github/copilot-cli"),
)
BY_ID: dict[str, KnownAgent] = {agent.id: agent for agent in KNOWN}


class UnknownAgent(LookupError):
    """An id no row of KNOWN has; the message lists the ids there are."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(f"no known ACP agent {agent_id!r} (known: {', '.join(BY_ID)})")
        self.agent_id = agent_id


class AgentNotFound(LookupError):
    """A known agent that is not on PATH; the message says how to install it."""

    def __init__(self, agent: KnownAgent) -> None:
        super().__init__(f"ACP agent {agent.id!r} ({agent.name}) is not installed: {agent.program!r} is not on "
                         f"PATH; install it with: {agent.install}")
        self.agent = agent


@dataclass(frozen=True)
class FoundAgent:
    """What the lookup found for one known agent: its path (None: not on PATH) and version (None: it did not say)."""

    agent: KnownAgent
    path: str | None = None
    version: str | None = None
    version_error: str | None = None  # why there is no version, for an agent that was found

    @property
    def found(self) -> bool:
        return self.path is not None

    @property
    def command(self) -> list[str]:
        """The argv that starts it in ACP mode: the resolved path when found, else the bare program name."""
        return [self.path or self.agent.program, *self.agent.args]

    def as_json(self) -> dict[str, Any]:
        """The stable JSON shape of `mcp-agent-kit agents --json` (docs/agents.md)."""
        return {"id": self.agent.id, "name": self.agent.name, "found": self.found, "path": self.path,
                "version": self.version, "version_error": self.version_error, "command": self.command,
                "install": self.agent.install, "homepage": self.agent.homepage}


def known(agent_id: str) -> KnownAgent:
    """The row for `agent_id`; UnknownAgent (naming the known ids) when there is none."""
    try:
        return BY_ID[agent_id]
    except KeyError:
        raise UnknownAgent(agent_id) from None


def locate(agent: KnownAgent, path: str | None = None) -> str | None:
    """The agent's program resolved on `path` (default: our PATH), or None."""
    return shutil.which(agent.program, path=path)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def version_of(output: str) -> str | None:
    """The version a version command printed: the first version number on its first line (`qwen 0.24.4`,
    `v1.2.3` -> `0.24.4`, `1.2.3`), else that line itself (at most 80 characters); None for no output."""
    line = _first_line(output)
    if not line:
        return None
    number = _VERSION.search(line)
    return number.group(1) if number else line[:80]


def _drain(stream: Any, into: bytearray) -> None:
    """Read a pipe to its end, keeping the first OUTPUT_LIMIT bytes."""
    with contextlib.suppress(OSError, ValueError):
        while chunk := stream.read1(8192):
            if len(into) < OUTPUT_LIMIT:
                into.extend(chunk[:OUTPUT_LIMIT - len(into)])


def probe_version(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                  timeout: float = VERSION_TIMEOUT_S) -> tuple[str | None, str | None]:
    """Run a version command (stdin closed, minimal environment plus `env`, own process group) for at
    most `timeout` seconds; (version, None), or (None, why there is none). Never raises for the
    command's own failures. Bounded: past `timeout` the whole group gets SIGTERM, then SIGKILL
    STOP_GRACE_S later (process.PeerProcess.stop); a pipe that a process outside the group still
    holds open is waited on for at most a few seconds."""
    from mcp_agent_kit.process import PeerProcess, SpawnError

    shown = " ".join(argv)
    try:
        peer = PeerProcess(argv, env=env, label="version")
    except SpawnError as exc:
        return None, f"`{shown}` could not start: {exc.why}"
    out = bytearray()
    reader = threading.Thread(target=_drain, args=(peer.stdout, out), name="version-stdout", daemon=True)
    reader.start()
    with contextlib.suppress(OSError, ValueError):
        peer.stdin.close()
    code = peer.ended(timeout)
    if code is None:
        peer.stop(grace=min(STOP_GRACE_S, timeout))
        reader.join(STOP_GRACE_S)
        if not reader.is_alive():
            with contextlib.suppress(OSError, ValueError):
                peer.stdout.close()
        return None, f"`{shown}` did not answer within {timeout:g} s (stopped)"
    peer.stop(grace=min(STOP_GRACE_S, timeout))  # what it left behind in its group goes too
    reader.join(STOP_GRACE_S)  # a grandchild that left the group may hold stdout open: do not wait long
    if not reader.is_alive():
        with contextlib.suppress(OSError, ValueError):
            peer.stdout.close()
    if code != 0:
        tail = _last_line(peer.stderr_text(300)) or "no message on stderr"
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return None, f"`{shown}` {how}: {tail}"
    version = version_of(out.decode("utf-8", "replace")) or version_of(peer.stderr_text(2000))
    return (version, None) if version else (None, f"`{shown}` printed nothing")


def _look(agent: KnownAgent, path: str | None, env: Mapping[str, str], timeout: float) -> FoundAgent:
    where = locate(agent, path)
    if where is None:
        return FoundAgent(agent)
    version, error = probe_version([where, *agent.version_args], env=env, timeout=timeout)
    return FoundAgent(agent, where, version, error)


def found_agents(path: str | None = None, env: Mapping[str, str] | None = None, *,
                 timeout: float = VERSION_TIMEOUT_S, agents: Iterable[KnownAgent] = KNOWN) -> list[FoundAgent]:
    """Every known agent (in KNOWN's order), looked up on `path` (default: our PATH), with the version
    of each one found. Version commands run in parallel, each bounded by `timeout` seconds; they get
    the minimal environment plus `env` (and PATH = `path` when given, so `#!/usr/bin/env node` finds
    what the lookup found)."""
    rows = list(agents)
    extra = dict(env or {})
    if path is not None:
        extra["PATH"] = path
    if not rows:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_PROBES, len(rows)), thread_name_prefix="agents") as pool:
        return list(pool.map(lambda agent: _look(agent, path, extra, timeout), rows))


def agent_entry(agent_id: str, *, path: str | None = None) -> dict[str, Any]:
    """The gateway-shaped config entry that starts a found agent in ACP mode (gateway/agents_config.py):
    `{"acp": {"command": <resolved path>, "args": [...], "env": {}}, "description": <name>}`.
    UnknownAgent for an id KNOWN lacks, AgentNotFound (with the install line) when it is not on `path`."""
    agent = known(agent_id)
    where = locate(agent, path)
    if where is None:
        raise AgentNotFound(agent)
    return {"acp": {"command": where, "args": list(agent.args), "env": {}}, "description": agent.name}


def with_found(agents: Mapping[str, Any], names: Iterable[str], *, path: str | None = None) -> dict[str, Any]:
    """A config's `agents` section plus, for each name it lacks (as `name` or `default/name`), the entry of
    the found agent with that id: what lets a board config name a found agent without an `agents` entry.
    UnknownAgent or AgentNotFound for a name that is neither configured nor a found known agent."""
    out = dict(agents)
    for name in names:
        if name not in out and f"default/{name}" not in out:
            out[name] = agent_entry(name, path=path)
    return out


__all__ = ["KNOWN", "AgentNotFound", "FoundAgent", "KnownAgent", "UnknownAgent", "agent_entry", "found_agents",
           "known", "locate", "probe_version", "version_of", "with_found"]
