"""board.hosts: the board's agent hosts — their config, their health, and where each task runs (placement).

Config (`"hosts"` in the board's config, `parse_hosts`): `"<host id>": {"url"` (the host's base URL, http:// or
https://; an agent's ACP endpoint is `<url>/agents/<agent>/acp`, reached over ACP's WebSocket profile), `"tokenEnv"`
(the variable holding its bearer token, read when the config is read), `"labels"` [...], `"capacity"` (tasks at
once, default DEFAULT_CAPACITY), `"agents"` [ids] (optional: else the host's `GET /api/v1/agents`, asked each time it
comes up), `"poll"` (seconds between two `/health` checks, default DEFAULT_POLL_S), `"mounted"` (true: the host sees
this machine's worktrees at the same paths, so the board makes each task's worktree as for a local agent and the
agent's fs and terminal requests come back here; false, the default: the host makes and keeps the task's workspace,
board.host_workspaces)`}`. Every mistake is one ConfigError naming the key and the fix.

Health (HostPool): one thread per host asks `/health` every `poll` seconds. A host is live from its first 200 on;
it is down after FAILS_DOWN failed checks in a row, or at once when a run's connection to it dropped and a check
made then fails (`lost`: the dropped-connection signal). Each change is told to `on_change(host id, live)` on a
thread of its own (the board wakes its scheduler, and a host gone down settles its runs: board.runner). A host that
comes back is live again at its next check, and used again.

Placement (`place(task, load)`: board.queue's Place, called by the scheduler's round with the running tasks per
host): PLACEMENT, a table of rules, the first that applies decides. A task whose workspace a host keeps (a
follow-up) goes back to that host, waiting while it is down or full. A live host that serves the task's agent, has
all its labels and room goes first (the least loaded, by share of its capacity); a task without labels whose agent
no host serves runs here when the board has it (so a board without hosts runs everything here, as before); else
the task waits, its `waiting` text (keyword "host") saying what it waits for: labels no live host has, hosts all
full, or hosts all down. Rules: no board state here but the hosts' health; HTTP through urllib, every call bounded.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.gateway.config import ConfigError

__all__ = ["DEFAULT_CAPACITY", "DEFAULT_POLL_S", "PLACEMENT", "HostPool", "HostSpec", "parse_hosts"]

log = logging.getLogger("mcp_agent_kit.board")
DEFAULT_CAPACITY = 4
DEFAULT_POLL_S = 5.0
FAILS_DOWN = 2  # failed checks in a row that make a live host down
CHECK_TIMEOUT_S = 5.0
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # hosts are reached directly, never proxied
_KEYS = ("url", "tokenEnv", "labels", "capacity", "agents", "poll", "mounted")


@dataclass(frozen=True)
class HostSpec:
    """One `hosts` entry as the board uses it (the token already read from `tokenEnv`)."""

    id: str
    url: str
    token: str = ""
    labels: frozenset[str] = frozenset()
    capacity: int = DEFAULT_CAPACITY
    agents: frozenset[str] | None = None  # None: asked from the host
    poll: float = DEFAULT_POLL_S
    mounted: bool = False

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def acp_url(self, agent: str) -> str:
        """The agent's ACP endpoint on this host, WebSocket profile."""
        scheme = "wss" if self.url.startswith("https:") else "ws"
        return f"{scheme}://{self.url.split('://', 1)[1]}/agents/{agent}/acp"


def _strings(value: Any, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{where} must be a list of non-empty strings")
    return frozenset(value)


def _host(host_id: str, entry: Any, environ: Mapping[str, str]) -> HostSpec:
    where = f'"hosts": {host_id}'
    if not isinstance(entry, dict):
        raise ConfigError(f'{where} must be an object with "url" (and {", ".join(_KEYS[1:])})')
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown} (known: {', '.join(_KEYS)})")
    url = entry.get("url")
    parts = urlsplit(url) if isinstance(url, str) else None
    if not isinstance(url, str) or parts is None or parts.scheme not in ("http", "https") or not parts.netloc \
            or parts.path not in ("", "/"):
        raise ConfigError(f'{where} url must be the host\'s base URL, http(s)://HOST:PORT (not {url!r})')
    token = ""
    if "tokenEnv" in entry:
        name = entry["tokenEnv"]
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{where} tokenEnv must name an environment variable")
        token = environ.get(name, "")
        if not token:
            raise ConfigError(f"{where} tokenEnv {name} is not set: export it, or drop tokenEnv")
    capacity = entry.get("capacity", DEFAULT_CAPACITY)
    if isinstance(capacity, bool) or not isinstance(capacity, int) or not 1 <= capacity <= 1000:
        raise ConfigError(f"{where} capacity must be a whole number from 1 to 1000")
    poll = entry.get("poll", DEFAULT_POLL_S)
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or not 0.05 <= poll <= 3600:
        raise ConfigError(f"{where} poll must be seconds from 0.05 to 3600")
    mounted = entry.get("mounted", False)
    if not isinstance(mounted, bool):
        raise ConfigError(f"{where} mounted must be true or false")
    agents = entry.get("agents")
    return HostSpec(host_id, url.rstrip("/"), token, _strings(entry.get("labels", []), f"{where} labels"), capacity,
                    None if agents is None else _strings(agents, f"{where} agents"), float(poll), mounted)


def parse_hosts(value: Any, environ: Mapping[str, str] | None = None) -> dict[str, HostSpec]:
    """The `hosts` section: host id -> HostSpec; ConfigError names the first mistake."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError('"hosts" must be an object of "<host id>": {"url": "http://HOST:PORT", ...}')
    from mcp_agent_kit.board import task_fields
    from mcp_agent_kit.board.errors import TaskInvalid

    for host_id in value:
        try:
            task_fields.check_id('"hosts" key', host_id)
        except TaskInvalid as exc:
            raise ConfigError(str(exc)) from None
    env = os.environ if environ is None else environ
    return {host_id: _host(host_id, entry, env) for host_id, entry in value.items()}


@dataclass
class HostState:
    """What the board knows of one host now."""

    spec: HostSpec
    live: bool = False
    why: str = "not reached yet"
    fails: int = 0
    agents: frozenset[str] = frozenset()  # declared, else the host's last listing
    wake: threading.Event = field(default_factory=threading.Event)

    def serves(self, agent: str) -> bool:
        return agent in (self.spec.agents if self.spec.agents is not None else self.agents)


@dataclass(frozen=True)
class PlacementAsk:
    """One placement question: the task's agent and labels, and the hosts as they are now."""

    agent: str
    labels: frozenset[str]
    local: bool  # the board has the agent itself
    serving: tuple[HostState, ...]  # hosts that serve the agent, live or not
    load: Mapping[str, int]
    pinned: HostState | None = None  # the host keeping the task's workspace (a follow-up goes back there)

    @property
    def matching(self) -> list[HostState]:
        return [h for h in self.serving if h.live and self.labels <= h.spec.labels]

    @property
    def free(self) -> list[HostState]:
        return [h for h in self.matching if self.load.get(h.spec.id, 0) < h.spec.capacity]

    def room(self, host: HostState) -> bool:
        return host.live and self.load.get(host.spec.id, 0) < host.spec.capacity

    def least_loaded(self) -> str:
        order = {h.spec.id: i for i, h in enumerate(self.serving)}
        best = min(self.free, key=lambda h: (self.load.get(h.spec.id, 0) / h.spec.capacity, order[h.spec.id]))
        return best.spec.id

    def shown_labels(self) -> str:
        return ", ".join(sorted(self.labels))


def _full(ask: PlacementAsk) -> str:
    each = ", ".join(f"{h.spec.id} {ask.load.get(h.spec.id, 0)}/{h.spec.capacity}" for h in ask.matching)
    return f"host: every live host of agent {ask.agent} that fits is full ({each}): starts when one has room"


def _down(ask: PlacementAsk) -> str:
    each = ", ".join(f"{h.spec.id} ({h.why})" for h in ask.serving)
    return f"host: no host of agent {ask.agent} is live ({each}): starts when one comes back"


def _pinned(ask: PlacementAsk) -> str:
    host = ask.pinned
    assert host is not None
    now = host.why if not host.live else f"full, {ask.load.get(host.spec.id, 0)}/{host.spec.capacity}"
    return f"host: host {host.spec.id} keeps this task's workspace and is {now}: starts when it has room"


def _no_labels(ask: PlacementAsk) -> str:
    others = [h.spec.id for h in ask.serving if not ask.labels <= h.spec.labels]
    which = f" (hosts of agent {ask.agent} without them: {', '.join(others)})" if others else ""
    return (f"host: no live host of agent {ask.agent} has the labels {ask.shown_labels()}{which}: starts when one "
            "does (a host's labels are in the board's config)")


# (what the rule is, whether it applies, its outcome: (the host, None: here; why the task waits, None: it starts))
Outcome = Callable[[PlacementAsk], tuple[str | None, str | None]]
PLACEMENT: tuple[tuple[str, Callable[[PlacementAsk], bool], Outcome], ...] = (
    ("a host keeps its workspace and has room: there", lambda a: a.pinned is not None and a.room(a.pinned),
     lambda a: (a.pinned.spec.id if a.pinned else None, None)),
    ("a host keeps its workspace: wait for it", lambda a: a.pinned is not None, lambda a: (None, _pinned(a))),
    ("a live host with the agent, the labels and room: the least loaded",
     lambda a: bool(a.free), lambda a: (a.least_loaded(), None)),
    ("no labels, and no host serves the agent: here, when the board has it",
     lambda a: not a.labels and not a.serving and a.local, lambda a: (None, None)),
    ("labels no live host of the agent has", lambda a: bool(a.labels) and not a.matching,
     lambda a: (None, _no_labels(a))),
    ("every fitting live host is full", lambda a: bool(a.matching), lambda a: (None, _full(a))),
    ("every host of the agent is down", lambda a: bool(a.serving), lambda a: (None, _down(a))),
    ("nothing runs the agent", lambda a: True,
     lambda a: (None, f"host: no host serves agent {a.agent} and this board does not run it itself")),
)


class HostPool:
    """The board's hosts and their health (see the module's doc); `local` are the agents the board runs itself."""

    def __init__(self, specs: Mapping[str, HostSpec], local: Collection[str],
                 on_change: Callable[[str, bool], None] | None = None) -> None:
        self.hosts = {host_id: HostState(spec) for host_id, spec in specs.items()}
        self.local = frozenset(local)
        self.on_change = on_change
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []

    def declared_agents(self) -> frozenset[str]:
        """The agents the config says the hosts serve (tasks may name them even when the board lacks them)."""
        return frozenset(a for h in self.hosts.values() if h.spec.agents is not None for a in h.spec.agents)

    def spec(self, host_id: str) -> HostSpec:
        return self.hosts[host_id].spec

    # ---- health ----------------------------------------------------------------------------------------
    def start(self) -> None:
        for state in self.hosts.values():
            thread = threading.Thread(target=self._watch, args=(state,), name=f"board-host-{state.spec.id}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        self._closed.set()
        for state in self.hosts.values():
            state.wake.set()
        for thread in self._threads:
            thread.join(CHECK_TIMEOUT_S + 1)

    def _watch(self, state: HostState) -> None:
        while not self._closed.is_set():
            self.check(state.spec.id)
            state.wake.wait(state.spec.poll)
            state.wake.clear()

    def check(self, host_id: str, *, at_once: bool = False) -> bool:
        """Ask the host's /health now (and, when it comes up, its agents); whether it is live. A failure makes a
        live host down after FAILS_DOWN in a row, or at once with `at_once`."""
        state = self.hosts[host_id]
        spec = state.spec
        try:
            request(spec, "/health", timeout=min(CHECK_TIMEOUT_S, max(1.0, spec.poll)))
            agents = state.agents if spec.agents is not None or state.live else self._listed(spec)
        except (OSError, ValueError) as exc:
            self._failed(state, _reason(exc), at_once)
            return False
        with self._lock:
            came = not state.live
            state.live, state.why, state.fails, state.agents = True, "live", 0, agents
        if came:
            log.info("board: host %s is live (%s)", host_id, spec.url)
            self._tell(host_id, True)
        return True

    def _listed(self, spec: HostSpec) -> frozenset[str]:
        listing = request(spec, "/api/v1/agents")
        agents = listing.get("agents") if isinstance(listing, dict) else None
        if not isinstance(agents, list):
            raise ValueError("its /api/v1/agents has no agents list")
        return frozenset(str(a["id"]) for a in agents if isinstance(a, dict) and "id" in a)

    def _failed(self, state: HostState, why: str, at_once: bool) -> None:
        with self._lock:
            state.fails += 1
            went = state.live and (at_once or state.fails >= FAILS_DOWN)
            if went or not state.live:
                state.live, state.why = False, f"down: {why}"
        if went:
            log.warning("board: host %s is down: %s", state.spec.id, why)
            self._tell(state.spec.id, False)

    def lost(self, host_id: str) -> bool:
        """A run's connection to the host dropped: is the host gone (a check now fails)? It is then down."""
        return host_id in self.hosts and not self.check(host_id, at_once=True)

    def live(self, host_id: str) -> bool:
        state = self.hosts.get(host_id)
        return state is not None and state.live

    def _tell(self, host_id: str, live: bool) -> None:
        if self.on_change is not None and not self._closed.is_set():
            threading.Thread(target=self.on_change, args=(host_id, live), name=f"board-host-{host_id}-change",
                             daemon=True).start()

    # ---- placement ---------------------------------------------------------------------------------------
    def serves(self, agent: str) -> bool:
        """Does any host serve the agent (as far as the board knows)?"""
        with self._lock:
            return any(state.serves(agent) for state in self.hosts.values())

    def place(self, task: Mapping[str, Any], load: Mapping[str, int]) -> tuple[str | None, str | None]:
        """Where the task runs now (a host id, None: here) and why it waits (None: it can start): PLACEMENT."""
        agent, kept = str(task.get("agent")), self.hosts.get(str(task.get("host")))
        with self._lock:
            serving = tuple(HostState(s.spec, s.live, s.why, s.fails, s.agents) for s in self.hosts.values()
                            if s.serves(agent))
            pinned = None
            if kept is not None and not kept.spec.mounted and task.get("workspace"):
                pinned = HostState(kept.spec, kept.live, kept.why, kept.fails, kept.agents)
        ask = PlacementAsk(agent, frozenset(task.get("labels") or ()), agent in self.local, serving, load, pinned)
        outcome = next(decide for _, applies, decide in PLACEMENT if applies(ask))
        return outcome(ask)

    def describe(self) -> list[dict[str, Any]]:
        """The hosts as Board.status shows them."""
        with self._lock:
            return [{"id": s.spec.id, "url": s.spec.url, "live": s.live, "why": s.why, "capacity": s.spec.capacity,
                     "labels": sorted(s.spec.labels), "agents": sorted(s.spec.agents or s.agents),
                     "mounted": s.spec.mounted} for s in self.hosts.values()]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__


def request(spec: HostSpec, path: str, method: str = "GET", body: Any = None, *, timeout: float = CHECK_TIMEOUT_S,
            raw: bool = False) -> Any:
    """One call to the host (its token sent): the JSON answer (None for an empty one; bytes and the headers
    with `raw`); urllib's errors (OSError) for a refusal, an HTTP error status or no answer in time."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {**spec.headers, **({"Content-Type": "application/json"} if data is not None else {})}
    call = urllib.request.Request(spec.url + path, data=data, method=method, headers=headers)
    with _DIRECT.open(call, timeout=timeout) as answer:
        payload = answer.read()
        if raw:
            return payload, dict(answer.headers)
    return json.loads(payload) if payload else None
