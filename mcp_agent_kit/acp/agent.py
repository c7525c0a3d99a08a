"""acp.agent: write an ACP v1 agent in plain Python — the agent-side counterpart of the MCP `Server`.

Everything an author needs is importable from here (`from mcp_agent_kit.acp.agent import Agent,
Turn, updates`). `agent = Agent("name", "1.0")`, then `@agent.prompt` on a function taking a Turn (acp.turn) and
returning a stop reason (None: "end_turn"), then `agent.run()` serves stdio. Optional handlers
enable optional methods, and the capabilities `initialize` advertises are derived from what is
registered, never written by hand: `@agent.load_session` → `loadSession: true` (history replayed
from the store), `@agent.list_sessions` → `sessionCapabilities.list`, `@agent.close_session` →
`sessionCapabilities.close`, `@agent.fork_session` → `sessionCapabilities.fork` (`session/fork`
copies the session's current history, config and state under a new id), `agent.config_option(...)` → `configOptions` and
`session/set_config_option`. Sessions live in a store (acp.agent_session: in memory, or one JSON
file each so a new process can load them). Handler errors become a JSON-RPC error for that
request; the agent keeps serving. stdout carries protocol JSON only: `run()` points `sys.stdout`
at stderr, so a stray print cannot corrupt the stream.
Rules: the method table is built from registrations; no protocol field is spelt outside wire/,
acp.updates and this module's handlers; imports `wire`, `logs` and acp siblings only.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, TypeVar

import mcp_agent_kit.logs as logs
from mcp_agent_kit.acp import updates
from mcp_agent_kit.acp.agent_connection import AgentConnection
from mcp_agent_kit.acp.agent_session import AgentSession, AgentSessionStore, JsonSessionStore, MemorySessionStore, now
from mcp_agent_kit.acp.connection import Connection
from mcp_agent_kit.acp.turn import Cancelled, ClientCapabilityError, ClientRequestError, Permission, ToolCall, Turn
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError

__all__ = ["Agent", "AgentSession", "AgentSessionStore", "Cancelled", "ClientCapabilityError", "ClientRequestError",
           "ConfigOption", "JsonSessionStore", "MemorySessionStore", "MemoryStore", "Permission", "RpcError", "Session",
           "ToolCall", "Turn", "updates"]
# The documented names, kept importable; the classes are named AgentSession and MemorySessionStore
# (acp.Session is the client's session, store.memory.MemoryStore the records store).
Session = AgentSession
MemoryStore = MemorySessionStore

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


def _object(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(wire.INVALID_PARAMS, "params must be an object")
    return params


def _string(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(wire.INVALID_PARAMS, f"{key} must be a non-empty string")
    return value


def _absolute(params: dict[str, Any], key: str) -> str:
    value = _string(params, key)
    if not os.path.isabs(value):
        raise RpcError(wire.INVALID_PARAMS, f"{key} must be an absolute path, got {value!r}")
    return value


def _directories(params: dict[str, Any]) -> list[str]:
    value = params.get("additionalDirectories", [])
    if not isinstance(value, list) or not all(isinstance(d, str) and os.path.isabs(d) for d in value):
        raise RpcError(wire.INVALID_PARAMS, "additionalDirectories must be a list of absolute paths")
    if not isinstance(params.get("mcpServers", []), list):
        raise RpcError(wire.INVALID_PARAMS, "mcpServers must be a list")
    return list(value)


def _servers(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The McpServer entries the client handed on (checked to be a list by _directories)."""
    return [server for server in params.get("mcpServers") or [] if isinstance(server, dict)]


def _json_checked(handler: MethodHandler) -> MethodHandler:
    """An author's handler whose result must be JSON (else -32603 names the problem, instead of a
    reply that cannot be written)."""

    def checked(params: dict[str, Any]) -> Any:
        result = handler(params)
        try:
            json.dumps(result, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise RpcError(wire.INTERNAL_ERROR, f"the handler's result is not JSON: {exc}") from None
        return result

    return checked


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
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] | None = None
        self.initialized = False
        self.options: dict[str, ConfigOption] = {}
        self._prompt: PromptHandler | None = None
        self._hooks: dict[str, Callable[..., Any] | None] = {}  # enabled optional method -> its hook
        self._methods: dict[str, MethodHandler] = {}  # the author's own `_` methods
        self._turns: dict[str, Turn] = {}
        self._open: set[str] = set()  # sessions opened in this process (session/new, session/load)
        self._arriving: dict[str, threading.Event] = {}  # prompts received, not yet started: their cancel flag
        self._lock = threading.Lock()
        self._log = logs.logger("mcp_agent_kit.acp.agent").warning
        self.connection: Connection | None = None

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

    def handlers(self) -> dict[str, Callable[[Any], Any]]:
        """The request method table: the baseline, the enabled optional methods, the author's own."""
        rows: dict[str, Callable[[dict[str, Any]], Any]] = {
            wire.SESSION_NEW: self._new, wire.SESSION_PROMPT: self._run_prompt,
            wire.SESSION_LOAD: self._load, wire.SESSION_LIST: self._list, wire.SESSION_CLOSE: self._close,
            wire.SESSION_SET_CONFIG_OPTION: self._set_config, wire.SESSION_FORK: self._fork,
        }
        table: dict[str, Callable[[Any], Any]] = {wire.INITIALIZE: self._initialize}
        for method, handler in rows.items():
            if method in (wire.SESSION_NEW, wire.SESSION_PROMPT) or method in self._hooks:
                table[method] = self._after_initialize(handler)
        for method, custom in self._methods.items():
            table[method] = self._after_initialize(_json_checked(custom))
        return table

    def _after_initialize(self, handler: Callable[[dict[str, Any]], Any]) -> Callable[[Any], Any]:
        def guarded(params: Any) -> Any:
            if not self.initialized:
                raise RpcError(wire.INVALID_REQUEST, "call initialize first")
            return handler(_object(params))

        return guarded

    # ---- handlers ---------------------------------------------------------------------------
    def _initialize(self, params: Any) -> dict[str, Any]:
        p = _object(params)
        version = p.get("protocolVersion")
        if type(version) is not int:
            raise RpcError(wire.INVALID_PARAMS, "protocolVersion must be an integer (ACP v1 is 1)")
        capabilities, info = p.get("clientCapabilities", {}), p.get("clientInfo")
        if not isinstance(capabilities, dict):
            raise RpcError(wire.INVALID_PARAMS, "clientCapabilities must be an object")
        self.client_capabilities = capabilities
        self.client_info = info if isinstance(info, dict) else None
        self.initialized = True
        return {"protocolVersion": wire.PROTOCOL_VERSION, "agentCapabilities": self.capabilities(),
                "agentInfo": self.info, "authMethods": []}

    def _config_result(self, session: AgentSession) -> dict[str, Any]:
        if not self.options:
            return {}
        return {"configOptions": [o.to_json(session.config.get(o.id, o.default)) for o in self.options.values()]}

    def _session(self, params: dict[str, Any], *, stored: bool = False) -> AgentSession:
        """The session `params.sessionId` names: one opened in this process (by session/new or
        session/load), or with `stored`, any the store holds. -32002 otherwise."""
        session_id = _string(params, "sessionId")
        session = self.store.get(session_id) if stored or session_id in self._open else None
        if session is None:
            why = "unknown session" if stored else "no open session"
            hint = "" if stored or wire.SESSION_LOAD not in self._hooks else " (call session/load first)"
            raise RpcError(wire.RESOURCE_NOT_FOUND, f"{why} {session_id!r}{hint}", {"sessionId": session_id})
        return session

    def _new(self, params: dict[str, Any]) -> dict[str, Any]:
        session = AgentSession(uuid.uuid4().hex, _absolute(params, "cwd"), _directories(params),
                          mcp_servers=_servers(params))
        session.config = {o.id: o.default for o in self.options.values()}
        hook = self._hooks.get("new")
        if hook is not None:
            hook(session)
        self.store.put(session)
        self._open.add(session.session_id)
        return {"sessionId": session.session_id, **self._config_result(session)}

    def _load(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(params, stored=True)
        session.cwd, session.additional_directories = _absolute(params, "cwd"), _directories(params)
        session.mcp_servers = _servers(params)
        hook = self._hooks.get(wire.SESSION_LOAD)
        if hook is not None:
            hook(session)
        for update in session.replay_updates():
            self._notify_update(session.session_id, update)
        self._open.add(session.session_id)
        return self._config_result(session)

    def _fork(self, params: dict[str, Any]) -> dict[str, Any]:
        source = self._session(params, stored=True)
        fork = source.forked(uuid.uuid4().hex, _absolute(params, "cwd"))
        fork.additional_directories, fork.mcp_servers = _directories(params), _servers(params)
        hook = self._hooks.get(wire.SESSION_FORK)
        if hook is not None:
            hook(source, fork)
        self.store.put(fork)
        self._open.add(fork.session_id)
        return {"sessionId": fork.session_id, **self._config_result(fork)}

    def _list(self, params: dict[str, Any]) -> dict[str, Any]:
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

    def _close(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(params)
        with self._lock:
            turn = self._turns.get(session.session_id)
        if turn is not None:
            turn.cancel()
        hook = self._hooks.get(wire.SESSION_CLOSE)
        if hook is not None:
            hook(session)
        self._open.discard(session.session_id)  # kept in the store: session/load reopens it
        return {}

    def _set_config(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._session(params)
        option_id, value = _string(params, "configId"), params.get("value")
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

    def _arrived(self, method: str, params: Any) -> None:
        """On the reader thread: a prompt arrived; a cancel behind it must reach it (see _cancel)."""
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if method == wire.SESSION_PROMPT and isinstance(session_id, str):
            with self._lock:
                self._arriving.setdefault(session_id, threading.Event())

    def _run_prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        raw_id = params.get("sessionId")
        try:
            turn = self._start_turn(params)
        finally:  # the turn holds the cancel flag now, or the prompt was refused: either way drop it
            with self._lock:
                early = self._arriving.pop(raw_id, None) if isinstance(raw_id, str) else None
        if early is not None and early.is_set():
            turn.cancelled.set()
        session = turn.session
        try:
            assert self._prompt is not None  # checked by _start_turn
            return {"stopReason": self._stop_reason(turn, self._prompt)}
        finally:
            turn.release_terminals(self._log)
            with self._lock:
                del self._turns[session.session_id]
            session.updated_at = now()
            try:
                self.store.put(session)
            except Exception as exc:
                self._log(f"saving session {session.session_id} failed: {type(exc).__name__}: {exc}")

    def _start_turn(self, params: dict[str, Any]) -> Turn:
        session, blocks = self._session(params), self._blocks(params)
        if self._prompt is None or self.connection is None:
            raise RpcError(wire.INTERNAL_ERROR, "this agent has no prompt handler (register one with @agent.prompt)")
        with self._lock:
            if session.session_id in self._turns:
                raise RpcError(wire.INVALID_REQUEST, f"a prompt is already running in session {session.session_id}")
            turn = Turn(session, blocks, self.connection, self.client_capabilities,
                        request_timeout=self.request_timeout, permission_timeout=self.permission_timeout)
            self._turns[session.session_id] = turn
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

    def _cancel(self, params: Any) -> None:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        with self._lock:
            turn = self._turns.get(session_id) if isinstance(session_id, str) else None
            early = self._arriving.get(session_id) if isinstance(session_id, str) else None
        if turn is not None:
            turn.cancel()
        elif early is not None:
            early.set()  # the prompt is on its way to its thread: it starts cancelled
        else:
            self._log(f"session/cancel for {session_id!r}, which has no running prompt: ignored")

    def _notify_update(self, session_id: str, update: dict[str, Any]) -> None:
        if self.connection is not None:
            self.connection.notify(wire.SESSION_UPDATE, {"sessionId": session_id, "update": update})

    def send_update(self, session: AgentSession, update: dict[str, Any]) -> None:
        """Send a `session/update` outside a turn (e.g. `available_commands_update` from a session hook)."""
        self._notify_update(session.session_id, update)

    def send_session_info(self, session: AgentSession) -> None:
        """Tell the client the session's title and update time (`session_info_update`)."""
        self._notify_update(session.session_id, updates.session_info(session.title, session.updated_at))

    # ---- serving ----------------------------------------------------------------------------
    def connect(self, reader: IO[bytes], writer: IO[bytes]) -> AgentConnection:
        """A started connection serving this agent over the two byte streams."""
        connection = self.connection = AgentConnection(reader, writer, handlers=self.handlers(),
                                          notifications={wire.SESSION_CANCEL: self._cancel},
                                          on_request=self._arrived,
                                          max_line=self.max_line, name="client")
        connection.start()
        return connection

    def _cancel_all(self) -> None:
        with self._lock:
            turns = list(self._turns.values())
        for turn in turns:
            turn.cancel()

    def serve(self, reader: IO[bytes], writer: IO[bytes], shutdown_timeout: float = 5.0) -> int:
        """Serve until the client closes its end, then give the requests still being handled
        `shutdown_timeout` s to be answered (their own requests to the client fail at once) before
        cancelling the running turns. Returns 0."""
        connection = self.connect(reader, writer)
        while not connection.join(3600.0):
            pass
        self._wait_for_answers(connection, shutdown_timeout)
        if connection.in_flight:  # still running: cancel the turns, and give them a moment to answer
            self._cancel_all()
            self._wait_for_answers(connection, 1.0)
        return 0

    @staticmethod
    def _wait_for_answers(connection: AgentConnection, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while connection.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)

    def run(self) -> None:
        """Serve on stdin/stdout and exit the process when the client closes stdin."""
        logs.log_to_stderr()
        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
        sys.stdout = sys.stderr  # the protocol owns the real stdout
        sys.exit(self.serve(stdin, stdout))
