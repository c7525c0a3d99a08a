"""acp.agent.agent: the `Agent` object — the agent-side counterpart of the MCP `Server`.

An author imports it from the package (`from mcp_agent_kit.acp.agent import Agent, Turn, updates`).
`agent = Agent("name", "1.0")`, then `@agent.prompt` on a function taking a Turn (acp.agent.turn) and returning
a stop reason (None: "end_turn"), then `agent.run()` serves stdio. Optional handlers
enable optional methods, and the capabilities `initialize` advertises are derived from what is
registered, never written by hand: `@agent.load_session` → `loadSession: true` (history replayed
from the store), `@agent.list_sessions` → `sessionCapabilities.list`, `@agent.close_session` →
`sessionCapabilities.close`, `@agent.fork_session` → `sessionCapabilities.fork` (`session/fork`
copies the session's current history, config and state under a new id), `agent.config_option(...)` → `configOptions` and
`session/set_config_option`. Sessions live in a store (acp.agent.session: in memory, or one JSON
file each so a new process can load them). Handler errors become a JSON-RPC error for that
request; the agent keeps serving. stdout carries protocol JSON only: `run()` points `sys.stdout`
at stderr, so a stray print cannot corrupt the stream.
One Agent serves any number of clients at once: `agent.serve(reader, writer)` serves one connection
over two binary streams and returns when that client closed its end (call it from as many threads
as there are clients; `run()` is `serve` on stdio). The Agent keeps only what its clients share
(registrations, config options, the session store, which sessions have a turn running); each
connection gets its own state (acp.agent.link: the client's capabilities, the sessions open on it,
its turns). A session belongs to the connections that opened it (`session/new`, `session/fork`, or
`session/load`, which may open it on a second connection while it is idle, not while another
connection's turn runs in it); one turn runs in a session at a time, and a turn's updates and
requests go to the connection that sent its prompt, and nowhere else. `session/cancel` and
`session/close` reach only that connection's own turns.
Rules: the method table is built from registrations, one per connection; no protocol field is spelt
outside wire/, acp.agent.updates and this module's handlers; imports `wire`, `logs` and acp siblings only.
"""

from __future__ import annotations

import sys
import threading
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import IO, Any, TypeVar

import mcp_agent_kit.acp.agent.params as check
import mcp_agent_kit.logs as logs
from mcp_agent_kit.acp.agent import updates
from mcp_agent_kit.acp.agent.connection import AgentConnection
from mcp_agent_kit.acp.agent.link import AgentLink, current
from mcp_agent_kit.acp.agent.session import AgentSession, AgentSessionStore, MemorySessionStore, now
from mcp_agent_kit.acp.agent.turn import Cancelled, Turn
from mcp_agent_kit.acp.connection import Connection
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError

PromptHandler = Callable[[Turn], str | None]
SessionHook = Callable[[AgentSession], None]
ListHook = Callable[[list[AgentSession]], list[AgentSession]]
ConfigHook = Callable[[AgentSession, str, str], None]
ForkHook = Callable[[AgentSession, AgentSession], None]
MethodHandler = Callable[[dict[str, Any]], Any]
F = TypeVar("F", bound=Callable[..., Any])
PAGE = 50  # sessions per session/list page


@dataclass(frozen=True)
class ConfigOption:
    """A `select` config option offered in every session (choices: (value, name) pairs)."""

    id: str
    name: str
    choices: tuple[tuple[str, str], ...]
    default: str
    category: str | None = None
    description: str | None = None

    def to_json(self, current: str) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "type": "select", "currentValue": current,
                                "options": [{"value": v, "name": n} for v, n in self.choices]}
        data.update({k: v for k, v in (("category", self.category), ("description", self.description)) if v})
        return data


class Agent:
    """An ACP agent: register handlers, then `run()` (stdio) or `serve(reader, writer)`."""

    def __init__(self, name: str, version: str = "0.1.0", *, title: str | None = None,
                 store: AgentSessionStore | None = None, prompt_capabilities: dict[str, bool] | None = None,
                 mcp_capabilities: dict[str, bool] | None = None, request_timeout: float = 60.0,
                 permission_timeout: float = 600.0, max_line: int = 16 << 20) -> None:
        """prompt_capabilities: which extra content blocks prompts may carry ({"image": True, ...});
        mcp_capabilities: which MCP server transports besides stdio sessions may be handed ({"http": True});
        request_timeout / permission_timeout bound every wait for the client (seconds)."""
        self.info: dict[str, Any] = {"name": name, "version": version, **({"title": title} if title else {})}
        self.store: AgentSessionStore = store if store is not None else MemorySessionStore()
        self.prompt_capabilities = dict(prompt_capabilities or {})
        self.mcp_capabilities = dict(mcp_capabilities or {})
        self.request_timeout, self.permission_timeout, self.max_line = request_timeout, permission_timeout, max_line
        self.options: dict[str, ConfigOption] = {}
        self._prompt: PromptHandler | None = None
        self._hooks: dict[str, Callable[..., Any] | None] = {}  # enabled optional method -> its hook
        self._methods: dict[str, MethodHandler] = {}  # the author's own `_` methods
        self._running: dict[str, AgentLink] = {}  # session id -> the connection whose turn runs in it
        self._links: weakref.WeakSet[AgentLink] = weakref.WeakSet()  # the connections being served
        self._latest: AgentLink | None = None
        self._lock = threading.Lock()
        self._log = logs.logger("mcp_agent_kit.acp.agent").warning

    # ---- the connection at hand (per-connection state lives in acp.agent.link) ---------------
    def _here(self) -> AgentLink | None:
        """The connection whose request runs on this thread, else the latest one made."""
        return current() or self._latest

    @property
    def connection(self) -> Connection | None:
        """The connection whose request is being handled on this thread, else the latest one made."""
        link = self._here()
        return link.connection if link is not None else None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client of `connection` advertised in `initialize`."""
        link = self._here()
        return link.client_capabilities if link is not None else {}

    # ---- registration -----------------------------------------------------------------------
    def prompt(self, fn: PromptHandler) -> PromptHandler:
        """The turn handler (required): `fn(turn) -> stop reason | None`."""
        self._prompt = fn
        return fn

    def new_session(self, fn: SessionHook) -> SessionHook:
        """A hook run on each new session before it is answered (raise to refuse it)."""
        self._hooks["new"] = fn
        return fn

    def load_session(self, fn: SessionHook | None = None) -> SessionHook | None:
        """Enable `session/load` (history replayed from the store); `fn(session)` runs before the replay."""
        self._hooks[wire.SESSION_LOAD] = fn
        return fn

    def list_sessions(self, fn: ListHook | None = None) -> ListHook | None:
        """Enable `session/list`; `fn(sessions) -> sessions` may filter or reorder them."""
        self._hooks[wire.SESSION_LIST] = fn
        return fn

    def close_session(self, fn: SessionHook | None = None) -> SessionHook | None:
        """Enable `session/close` (cancels a running turn); `fn(session)` runs on close."""
        self._hooks[wire.SESSION_CLOSE] = fn
        return fn

    def fork_session(self, fn: ForkHook | None = None) -> ForkHook | None:
        """Enable `session/fork` (the fork copies the source's current state); `fn(source, fork)` runs before
        the fork is stored."""
        self._hooks[wire.SESSION_FORK] = fn
        return fn

    def config_option(self, option_id: str, name: str, choices: list[tuple[str, str]], *, default: str | None = None,
                      category: str | None = None, description: str | None = None) -> ConfigOption:
        """Offer a select option in every session; enables `session/set_config_option`."""
        if not choices:
            raise ValueError(f"config option {option_id!r} needs at least one choice")
        chosen = default if default is not None else choices[0][0]
        if chosen not in {value for value, _ in choices}:
            raise ValueError(f"default {chosen!r} is not a choice of config option {option_id!r}")
        option = ConfigOption(option_id, name, tuple(choices), chosen, category, description)
        self.options[option_id] = option
        self._hooks.setdefault(wire.SESSION_SET_CONFIG_OPTION, None)
        return option

    def on_config_change(self, fn: ConfigHook) -> ConfigHook:
        """`fn(session, option_id, value)` after a client changed a config option."""
        self._hooks[wire.SESSION_SET_CONFIG_OPTION] = fn
        return fn

    def method(self, name: str) -> Callable[[F], F]:
        """An extension request `fn(params) -> result` (its name must start with `_`)."""
        if not name.startswith("_"):
            raise ValueError(f"custom ACP methods must start with '_', got {name!r}")

        def register(fn: F) -> F:
            self._methods[name] = fn
            return fn

        return register

    # ---- what is advertised ------------------------------------------------------------------
    def capabilities(self) -> dict[str, Any]:
        """agentCapabilities, derived from the registered handlers."""
        methods = wire.SESSION_CAPABILITY_METHODS.items()
        table: dict[str, Any] = {key: {} for key, method in methods if method in self._hooks}
        found: dict[str, Any] = {"loadSession": wire.SESSION_LOAD in self._hooks,
                                 "promptCapabilities": {k: bool(v) for k, v in self.prompt_capabilities.items()}}
        if self.mcp_capabilities:
            found["mcpCapabilities"] = {k: bool(v) for k, v in self.mcp_capabilities.items()}
        if table:
            found["sessionCapabilities"] = table
        return found

    def handlers(self, link: AgentLink) -> dict[str, Callable[[Any], Any]]:
        """One connection's request method table: the baseline, the enabled optional methods, the author's own."""
        rows: dict[str, Callable[[AgentLink, dict[str, Any]], Any]] = {
            wire.SESSION_NEW: self._new, wire.SESSION_PROMPT: self._run_prompt,
            wire.SESSION_LOAD: self._load, wire.SESSION_LIST: self._list, wire.SESSION_CLOSE: self._close,
            wire.SESSION_SET_CONFIG_OPTION: self._set_config, wire.SESSION_FORK: self._fork,
        }
        table: dict[str, Callable[[Any], Any]] = {wire.INITIALIZE: link.bind(partial(self._initialize, link))}
        for method, handler in rows.items():
            if method in (wire.SESSION_NEW, wire.SESSION_PROMPT) or method in self._hooks:
                table[method] = self._after_initialize(link, partial(handler, link))
        for method, custom in self._methods.items():
            table[method] = self._after_initialize(link, check.json_checked(custom))
        return table

    @staticmethod
    def _after_initialize(link: AgentLink, handler: Callable[[dict[str, Any]], Any]) -> Callable[[Any], Any]:
        def guarded(params: Any) -> Any:
            if not link.initialized:
                raise RpcError(wire.INVALID_REQUEST, "call initialize first")
            return handler(check.as_object(params))

        return link.bind(guarded)

    # ---- handlers (each gets the connection's link) -----------------------------------------
    def _initialize(self, link: AgentLink, params: Any) -> dict[str, Any]:
        p = check.as_object(params)
        version = p.get("protocolVersion")
        if type(version) is not int:
            raise RpcError(wire.INVALID_PARAMS, "protocolVersion must be an integer (ACP v1 is 1)")
        capabilities, info = p.get("clientCapabilities", {}), p.get("clientInfo")
        if not isinstance(capabilities, dict):
            raise RpcError(wire.INVALID_PARAMS, "clientCapabilities must be an object")
        link.client_capabilities = capabilities
        link.client_info = info if isinstance(info, dict) else None
        link.initialized = True
        return {"protocolVersion": wire.PROTOCOL_VERSION, "agentCapabilities": self.capabilities(),
                "agentInfo": self.info, "authMethods": []}

    def _config_result(self, session: AgentSession) -> dict[str, Any]:
        if not self.options:
            return {}
        return {"configOptions": [o.to_json(session.config.get(o.id, o.default)) for o in self.options.values()]}

    def _session(self, link: AgentLink, params: dict[str, Any], *, stored: bool = False) -> AgentSession:
        """The session `params.sessionId` names: one opened on this connection (by session/new,
        session/load or session/fork), or with `stored`, any the store holds. -32002 otherwise."""
        session_id = check.nonempty_string(params, "sessionId")
        session = self.store.get(session_id) if stored or session_id in link.open else None
        if session is None:
            why = "unknown session" if stored else "no open session"
            hint = "" if stored or wire.SESSION_LOAD not in self._hooks else " (call session/load first)"
            raise RpcError(wire.RESOURCE_NOT_FOUND, f"{why} {session_id!r}{hint}", {"sessionId": session_id})
        return session

    def _new(self, link: AgentLink, params: dict[str, Any]) -> dict[str, Any]:
        session = AgentSession(uuid.uuid4().hex, check.absolute_path(params, "cwd"), check.directories(params),
                               mcp_servers=check.servers(params))
        session.config = {o.id: o.default for o in self.options.values()}
        hook = self._hooks.get("new")
        if hook is not None:
            hook(session)
        self.store.put(session)
        link.open.add(session.session_id)
        return {"sessionId": session.session_id, **self._config_result(session)}

    def _load(self, link: AgentLink, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(link, params, stored=True)
        with self._lock:
            elsewhere = self._running.get(session.session_id) not in (None, link)
        if elsewhere:  # its cwd, servers and history belong to that turn until it ends
            raise RpcError(wire.INVALID_REQUEST, f"a prompt of another connection is running in session "
                           f"{session.session_id}; load it once that turn ended", {"sessionId": session.session_id})
        session.cwd, session.additional_directories = check.absolute_path(params, "cwd"), check.directories(params)
        session.mcp_servers = check.servers(params)
        hook = self._hooks.get(wire.SESSION_LOAD)
        if hook is not None:
            hook(session)
        for update in session.replay_updates():
            link.notify_update(session.session_id, update)
        link.open.add(session.session_id)
        return self._config_result(session)

    def _fork(self, link: AgentLink, params: dict[str, Any]) -> dict[str, Any]:
        source = self._session(link, params, stored=True)
        fork = source.forked(uuid.uuid4().hex, check.absolute_path(params, "cwd"))
        fork.additional_directories, fork.mcp_servers = check.directories(params), check.servers(params)
        hook = self._hooks.get(wire.SESSION_FORK)
        if hook is not None:
            hook(source, fork)
        self.store.put(fork)
        link.open.add(fork.session_id)
        return {"sessionId": fork.session_id, **self._config_result(fork)}

    def _list(self, link: AgentLink, params: dict[str, Any]) -> dict[str, Any]:
        cwd, cursor = params.get("cwd"), params.get("cursor")
        if cwd is not None and not isinstance(cwd, str):
            raise RpcError(wire.INVALID_PARAMS, "cwd must be a string")
        if cursor is not None and not (isinstance(cursor, str) and cursor.isdigit()):
            raise RpcError(wire.INVALID_PARAMS, "cursor must be a nextCursor this agent returned")
        found = [s for s in self.store.all() if cwd is None or s.cwd == cwd]
        found.sort(key=lambda s: s.updated_at, reverse=True)
        hook = self._hooks.get(wire.SESSION_LIST)
        if hook is not None:
            found = hook(found)
        start = int(cursor or 0)
        result: dict[str, Any] = {"sessions": [s.info() for s in found[start:start + PAGE]]}
        if start + PAGE < len(found):
            result["nextCursor"] = str(start + PAGE)
        return result

    def _close(self, link: AgentLink, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(link, params)
        with link.lock:
            turn = link.turns.get(session.session_id)  # only this connection's own turn
        if turn is not None:
            turn.cancel()
        hook = self._hooks.get(wire.SESSION_CLOSE)
        if hook is not None:
            hook(session)
        link.open.discard(session.session_id)  # kept in the store: session/load reopens it
        return {}

    def _set_config(self, link: AgentLink, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(link, params)
        option_id, value = check.nonempty_string(params, "configId"), params.get("value")
        option = self.options.get(option_id)
        if option is None:
            raise RpcError(wire.INVALID_PARAMS, f"unknown config option {option_id!r}")
        if value not in {v for v, _ in option.choices}:
            raise RpcError(wire.INVALID_PARAMS, f"{value!r} is not a value of config option {option_id!r}")
        session.config[option_id] = str(value)
        hook = self._hooks.get(wire.SESSION_SET_CONFIG_OPTION)
        if hook is not None:
            hook(session, option_id, str(value))
        self.store.put(session)
        return self._config_result(session)

    def _blocks(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        prompt = params.get("prompt")
        if not isinstance(prompt, list) or not all(isinstance(b, dict) for b in prompt):
            raise RpcError(wire.INVALID_PARAMS, "prompt must be a list of content blocks")
        for block in prompt:
            kind = block.get("type")
            if kind not in wire.CONTENT_CAPABILITY:
                raise RpcError(wire.INVALID_PARAMS, f"unknown content block type {kind!r}")
            needed = wire.CONTENT_CAPABILITY[kind]
            if needed is not None and not self.prompt_capabilities.get(needed):
                raise RpcError(wire.INVALID_PARAMS, f"{kind} blocks need promptCapabilities.{needed}, not advertised")
        return prompt

    def _run_prompt(self, link: AgentLink, params: dict[str, Any]) -> dict[str, Any]:
        try:
            turn = self._start_turn(link, params)
        finally:  # the turn holds the cancel flag now, or the prompt was refused: either way drop it
            early = link.take_arrival(params.get("sessionId"))
        if early is not None and early.is_set():
            turn.cancelled.set()
        session = turn.session
        try:
            assert self._prompt is not None  # checked by _start_turn
            return {"stopReason": self._stop_reason(turn, self._prompt)}
        finally:
            turn.release_terminals(self._log)
            with link.lock:
                del link.turns[session.session_id]
            with self._lock:
                del self._running[session.session_id]
            session.updated_at = now()
            try:
                self.store.put(session)
            except Exception as exc:
                self._log(f"saving session {session.session_id} failed: {type(exc).__name__}: {exc}")

    def _start_turn(self, link: AgentLink, params: dict[str, Any]) -> Turn:
        session, blocks = self._session(link, params), self._blocks(params)
        if self._prompt is None or link.connection is None:
            raise RpcError(wire.INTERNAL_ERROR, "this agent has no prompt handler (register one with @agent.prompt)")
        with self._lock:  # one turn per session, whichever connection sent it
            if session.session_id in self._running:
                raise RpcError(wire.INVALID_REQUEST, f"a prompt is already running in session {session.session_id}")
            self._running[session.session_id] = link
        try:
            turn = Turn(session, blocks, link.connection, link.client_capabilities,
                        request_timeout=self.request_timeout, permission_timeout=self.permission_timeout)
        except BaseException:
            with self._lock:
                del self._running[session.session_id]
            raise
        with link.lock:
            link.turns[session.session_id] = turn
        return turn

    def _stop_reason(self, turn: Turn, handler: PromptHandler) -> str:
        try:
            returned = handler(turn)
        except Cancelled:
            return wire.CANCELLED
        except Exception as exc:
            if not turn.is_cancelled:
                raise
            self._log(f"the prompt handler raised after a cancel ({type(exc).__name__}: {exc}); answered cancelled")
            return wire.CANCELLED
        if turn.is_cancelled:
            return wire.CANCELLED
        stop = returned or wire.END_TURN
        if stop not in wire.STOP_REASONS:
            raise RpcError(wire.INTERNAL_ERROR, f"the prompt handler returned {stop!r}, not a stop reason")
        return stop

    def send_update(self, session: AgentSession, update: dict[str, Any]) -> None:
        """Send a `session/update` outside a turn (e.g. `available_commands_update` from a session hook):
        from a handler, to the connection it serves; from any other thread, to every connection the
        session is open on."""
        here = current()
        with self._lock:
            links = [here] if here is not None else [k for k in self._links if session.session_id in k.open]
        for link in links:
            link.notify_update(session.session_id, update)

    def send_session_info(self, session: AgentSession) -> None:
        """Tell the client the session's title and update time (`session_info_update`)."""
        self.send_update(session, updates.session_info(session.title, session.updated_at))

    # ---- serving ----------------------------------------------------------------------------
    def _link(self, reader: IO[bytes], writer: IO[bytes]) -> AgentLink:
        """A new connection's state, its connection started over the two byte streams."""
        link = AgentLink(self._log)
        link.connection = AgentConnection(reader, writer, handlers=self.handlers(link),
                                          notifications={wire.SESSION_CANCEL: link.cancel},
                                          on_request=link.arrived, max_line=self.max_line, name="client")
        with self._lock:
            self._links.add(link)
            self._latest = link
        link.connection.start()
        return link

    def connect(self, reader: IO[bytes], writer: IO[bytes]) -> AgentConnection:
        """A started connection serving this agent over the two byte streams (one more client; see serve)."""
        connection = self._link(reader, writer).connection
        assert connection is not None
        return connection

    def serve(self, reader: IO[bytes], writer: IO[bytes], shutdown_timeout: float = 5.0) -> int:
        """Serve one client over two binary streams until it closes its end, then give its requests
        still being handled `shutdown_timeout` s to be answered (their own requests to the client fail
        at once) before cancelling its running turns. Returns 0. Blocking; call it from one thread
        per client to serve several at once (other clients' turns are never touched)."""
        link = self._link(reader, writer)
        try:
            link.finish(shutdown_timeout)
        finally:
            with self._lock:
                self._links.discard(link)
        return 0

    def run(self) -> None:
        """Serve on stdin/stdout and exit the process when the client closes stdin."""
        logs.log_to_stderr()
        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
        sys.stdout = sys.stderr  # the protocol owns the real stdout
        sys.exit(self.serve(stdin, stdout))
