"""acp.client.client: spawn an ACP v1 agent and drive it — initialize, authenticate, sessions, and the client side.

`AcpAgent.spawn(cmd, args, env=..., cwd=...)` starts the agent in its own process group and
connects to it; `initialize()` always sends `protocolVersion: 1` and the client capabilities
configured in `ClientOptions`; `new_session(cwd)` always sends `mcpServers` (`[]` when none).
Optional methods (`session/load`, `resume`, `list`, `close`, `fork`, `additionalDirectories`) are gated on
what the agent advertised, never on versions. The agent's own requests are served here:
`session/request_permission` by the policy (a LaterPolicy's open question holds no thread), `fs/*` and
`terminal/*` confined to the session's directories. When the agent dies, the next use of a session
respawns it, re-initializes, re-authenticates, and tries `session/load` before falling back to
`session/new`. With a `sandbox` (sandbox.Sandbox), the agent and the commands it runs through
`terminal/*` run under bubblewrap, its spawn `cwd` (ours when none) the writable workspace.
`AcpAgent.connect(url, headers=...)` reaches a remote agent over ACP's network transport instead
(acp.client.remote: WebSocket or Streamable HTTP, chosen by the URL's scheme); the same line driver reads
and writes it, so everything above is the same, and a dropped connection is opened again (cookies kept)
where a dead process would be respawned. Every wait is bounded (`Timeouts`). Rules: imports `wire`,
`safefile` (through acp.client.files), `process` (the one child-process manager), `sandbox` (bwrap's
command line) and the acp modules.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_agent_kit.logs as logs
from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client import files
from mcp_agent_kit.acp.client.asking import PermissionAsking
from mcp_agent_kit.acp.client.errors import AcpError, AgentCrashed, NotSupported
from mcp_agent_kit.acp.client.network import open_link
from mcp_agent_kit.acp.client.permissions import (
    AnyPolicy,
    DenyAll,
)
from mcp_agent_kit.acp.client.remote import CookieJar, Link, RemoteError
from mcp_agent_kit.acp.client.session import Session
from mcp_agent_kit.acp.client.terminals import Terminals
from mcp_agent_kit.acp.connection import Connection, ConnectionClosed, RequestTimeout
from mcp_agent_kit.process import PeerProcess, SpawnError
from mcp_agent_kit.sandbox import Sandbox, SandboxError
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError

MAX_EARLY = 1000


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("mcp-agent-kit")
    except metadata.PackageNotFoundError:
        return "0"


@dataclass(frozen=True)
class ClientOptions:
    """The client capabilities to advertise (and serve) and the limits of what is served."""

    read_files: bool = True
    write_files: bool = True
    terminal: bool = False
    client_info: Mapping[str, str] = field(default_factory=lambda: {"name": "mcp-agent-kit", "version": _version()})
    max_line: int = 16 << 20
    max_junk_lines: int = 1000
    terminal_output_limit: int = 1 << 20


@dataclass(frozen=True)
class Timeouts:
    """Bounds on every wait, in seconds."""

    initialize: float = 60.0
    request: float = 120.0
    turn: float = 1800.0
    cancel_grace: float = 5.0
    stop_grace: float = 2.0
    permission: float = 600.0


@dataclass(frozen=True)
class AgentInfo:
    """The agent's `initialize` result; `auth_methods` is `[]` when the agent omitted it."""

    protocol_version: int
    agent_info: dict[str, Any] | None
    auth_methods: list[dict[str, Any]]
    agent_capabilities: dict[str, Any]
    raw: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"protocolVersion": self.protocol_version, "agentInfo": self.agent_info,
                "authMethods": self.auth_methods, "agentCapabilities": self.agent_capabilities}


class AcpAgent(PermissionAsking):
    """One ACP agent process and the client side of its connection (use `AcpAgent.spawn`)."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
                 options: ClientOptions | None = None, policy: AnyPolicy | None = None,
                 timeouts: Timeouts | None = None, log: Callable[[str], None] | None = None,
                 on_notification: Callable[[str, Any], None] | None = None, sandbox: Sandbox | None = None,
                 sandbox_binds: Sequence[str] = (), url: str | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.argv, self.env, self.cwd = list(argv), dict(env or {}), cwd
        self.url, self.headers = url, dict(headers or {})  # a remote agent (argv unused); headers never logged
        self.link: Link | None = None
        self.cookies = CookieJar()
        self.sandbox, self.sandbox_binds = sandbox, tuple(sandbox_binds)  # binds: read-only, where present
        self.options = options or ClientOptions()
        self.policy: AnyPolicy = policy or DenyAll()
        self.timeouts: Timeouts = timeouts or Timeouts()
        self._log = log or logs.logger("mcp_agent_kit.acp").warning
        self.on_notification = on_notification
        self.info: AgentInfo | None = None
        self.auth_method: str | None = None
        self.sessions: dict[str, Session] = {}
        self.generation = 0
        self.process: PeerProcess | None = None
        self._connection: Connection | None = None
        self._early: dict[str, list[ev.Event]] = {}
        self._lock = threading.Lock()  # guards sessions and early updates (the reader thread takes it)
        self._respawn_lock = threading.Lock()  # held across the requests of a respawn, never by the reader
        self.terminals = Terminals(self.options.terminal_output_limit,
                                   wrap=None if sandbox is None else self._sandboxed)

    @classmethod
    def spawn(cls, command: str | Sequence[str], args: Sequence[str] = (), **kwargs: Any) -> AcpAgent:
        """Start `command args...` as an agent (see __init__ for the keywords); the caller closes it."""
        argv = [command, *args] if isinstance(command, str) else [*command, *args]
        agent = cls(argv, **kwargs)
        agent.start()
        return agent

    @classmethod
    def connect(cls, url: str, headers: Mapping[str, str] | None = None, **kwargs: Any) -> AcpAgent:
        """Connect to the remote agent at `url` (ws://, wss://, http://, https://; see __init__ for the
        keywords; `sandbox` does not apply); RemoteError (an AcpError) when it cannot be reached."""
        agent = cls([], url=url, headers=headers, **kwargs)
        agent.start()
        return agent

    def __enter__(self) -> AcpAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log(self, message: str) -> None:
        self._log(message)

    # -- the process ---------------------------------------------------------------------------
    @property
    def connection(self) -> Connection:
        if self._connection is None:
            raise AcpError("the agent is not started")
        return self._connection

    @property
    def running(self) -> bool:
        """Whether the agent process lives (a remote agent: its connection) and its output is still open."""
        return (self._connection is not None and not self._connection.closed.is_set()
                and (self.link is not None or (self.process is not None and self.process.returncode() is None)))

    def start(self) -> None:
        """Spawn the agent process (or connect to the remote agent) and start reading it (a new generation:
        old sessions need restoring)."""
        if self.url is not None:
            self.link = open_link(self.url, headers=self.headers, jar=self.cookies, timeout=self.timeouts.initialize,
                                  max_in=self.options.max_line, log=self._log)
            self.generation += 1
            link = self.link
            self._connection = self._connect(link.reader, link.writer, lambda: link.end_reason)
            return
        try:
            argv = self.argv if self.sandbox is None else self._sandboxed(self.argv, None)
            self.process = process = PeerProcess(argv, env=self.env, cwd=self.cwd, lasting=self.sandbox is not None)
        except (SpawnError, SandboxError) as exc:
            raise AcpError(str(exc)) from None
        self.generation += 1
        self._connection = self._connect(process.stdout, process.stdin, lambda: self._exit_reason(process))
        threading.Thread(target=self._watch_exit, args=(process, self._connection), name="acp-agent-exit",
                         daemon=True).start()

    def _connect(self, reader: Any, writer: Any, close_reason: Callable[[], str]) -> Connection:
        """The connection over the agent's output (`reader`) and input (`writer`), its handlers in place."""
        handlers: dict[str, Callable[[Any], Any]] = {wire.REQUEST_PERMISSION: self._permission}
        if self.options.read_files:
            handlers[wire.FS_READ_TEXT_FILE] = lambda p: files.read_text_file(self._session_of(p).roots, p)
        if self.options.write_files:
            handlers[wire.FS_WRITE_TEXT_FILE] = self._write_file
        if self.options.terminal:
            handlers.update({
                wire.TERMINAL_CREATE: lambda p: self.terminals.create(self._session_of(p).roots, p),
                wire.TERMINAL_OUTPUT: self.terminals.output,
                wire.TERMINAL_WAIT_FOR_EXIT: self.terminals.wait_for_exit,
                wire.TERMINAL_KILL: self.terminals.kill,
                wire.TERMINAL_RELEASE: self.terminals.release,
            })
        return Connection(
            reader, writer, handlers=handlers, notifications={wire.SESSION_UPDATE: self._update},
            fallback=self._unknown_notification, log=self._log, close_reason=close_reason,
            max_line=self.options.max_line, max_junk=self.options.max_junk_lines, name="agent").start()

    @staticmethod
    def _exit_reason(process: PeerProcess) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.popen.wait(1.0)
        return "the agent " + process.describe_exit()

    def _watch_exit(self, process: PeerProcess, connection: Connection) -> None:
        """When the agent exits but something of its group keeps stdout open, end the group."""
        process.popen.wait()
        if connection.join(1.0):
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            process.signal_group(sig)
            if connection.join(self.timeouts.stop_grace):
                return
        connection.fail_pending(ConnectionClosed(f"the agent {process.describe_exit()}, but its output stayed open"))

    def stop_process(self, reason: str, quiet: bool = False) -> None:
        """Stop the agent process now (stdin closed, SIGTERM, SIGKILL of the group; a remote agent: its
        connection closed); pending requests fail."""
        process, connection, link = self.process, self._connection, self.link
        if link is not None and connection is not None:
            connection.close(f"the connection was closed: {reason}")
            link.stop(self.timeouts.stop_grace)
            connection.join(2.0)
            connection.fail_pending(ConnectionClosed(f"the connection was closed: {reason}"))
            return
        if process is None or connection is None:
            return
        if not quiet:
            self._log(f"stopping the agent (pid {process.pid}): {reason}")
        connection.close(f"the agent was stopped: {reason}")
        process.stop(self.timeouts.stop_grace)
        reader_done = connection.join(2.0)
        connection.fail_pending(ConnectionClosed(f"the agent was stopped: {reason}"))
        if reader_done:  # never close a stream another thread is still reading
            with contextlib.suppress(OSError, ValueError):
                process.stdout.close()

    def _sandboxed(self, argv: Sequence[str], cwd: str | None) -> list[str]:
        """`argv` as run in the agent's sandbox (the agent itself, or a terminal's command started in `cwd`)."""
        assert self.sandbox is not None
        return self.sandbox.wrap(argv, workspace=self.cwd or os.getcwd(), cwd=cwd, env=self.env,
                                 optional=self.sandbox_binds)

    def close(self) -> None:
        """End every terminal and the agent process (bounded)."""
        self.terminals.close_all()
        if self.running or (self.process is not None and self.process.returncode() is None) or (
                self.link is not None and self._connection is not None and not self._connection.closed.is_set()):
            self.stop_process("the client closed it", quiet=True)

    def stderr_text(self) -> str:
        return self.process.stderr_text() if self.process is not None else ""

    # -- requests --------------------------------------------------------------------------------
    def call(self, method: str, params: Any, timeout: float | None = None) -> Any:
        """One request to the agent; AgentCrashed when it is gone, AcpError on an error answer or no answer."""
        if self._connection is None:
            raise AcpError("the agent is not started")
        try:
            return self._connection.request(method, params, timeout=timeout or self.timeouts.request)
        except ConnectionClosed as exc:
            raise self._refusal() or AgentCrashed(f"{method} failed: {exc}") from None
        except RequestTimeout as exc:
            if self.link is not None:
                raise AcpError(str(exc)) from None
            raise AcpError(f"{exc}; stderr: {self.stderr_text()[-300:] or '(empty)'}") from None
        except RpcError as exc:
            raise self._refusal() or AcpError(f"{method} failed: {exc}", exc.code) from exc

    def _refusal(self) -> RemoteError | None:
        """Why the remote agent's connection could not be set up, when that is why a call failed."""
        return self.link.failure if self.link is not None else None

    def initialize(self) -> AgentInfo:
        """`initialize` with protocolVersion 1; AcpError when the agent answers with another version."""
        caps: dict[str, Any] = {"fs": {"readTextFile": self.options.read_files,
                                       "writeTextFile": self.options.write_files},
                                "terminal": self.options.terminal}
        result = self.call(wire.INITIALIZE, {"protocolVersion": wire.PROTOCOL_VERSION, "clientCapabilities": caps,
                                             "clientInfo": dict(self.options.client_info)}, self.timeouts.initialize)
        if not isinstance(result, dict):
            raise AcpError(f"initialize answered {str(result)[:200]}, not an object")
        version = result.get("protocolVersion")
        if version != wire.PROTOCOL_VERSION or isinstance(version, bool):
            raise AcpError(f"the agent answered protocolVersion {version!r}; this client speaks only "
                           f"{wire.PROTOCOL_VERSION}")
        methods = result.get("authMethods")
        info = result.get("agentInfo")
        caps_of_agent = result.get("agentCapabilities")
        self.info = AgentInfo(version, info if isinstance(info, dict) else None,
                              methods if isinstance(methods, list) else [],
                              caps_of_agent if isinstance(caps_of_agent, dict) else {}, result)
        return self.info

    def authenticate(self, method_id: str) -> None:
        """`authenticate` with one of the agent's authMethods (keys it needs come from the spawn env)."""
        known = [m.get("id") for m in (self.info.auth_methods if self.info else []) if isinstance(m, dict)]
        if self.info is not None and method_id not in known:
            raise AcpError(f"the agent offers no auth method {method_id!r} (it offers {known or 'none'})")
        self.call(wire.AUTHENTICATE, {"methodId": method_id})
        self.auth_method = method_id

    def capability(self, *path: str) -> Any:
        """The advertised agentCapabilities value at `path` (None when absent)."""
        value: Any = self.info.agent_capabilities if self.info else {}
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def session_capability(self, name: str) -> bool:
        """Whether `agentCapabilities.sessionCapabilities.<name>` is present (`{}` means supported)."""
        return self.capability("sessionCapabilities", name) not in (None, False)

    def check_prompt(self, blocks: Sequence[dict[str, Any]]) -> None:
        """NotSupported for a content block the agent's promptCapabilities do not allow (text and
        resource_link always are)."""
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in wire.CONTENT_CAPABILITY:
                raise NotSupported(f"unknown content block type {kind!r}")
            flag = wire.CONTENT_CAPABILITY[kind]
            if flag is not None:
                self._require(self.capability("promptCapabilities", flag) is True, f"promptCapabilities.{flag}")

    def _require(self, present: bool, what: str) -> None:
        if not present:
            raise NotSupported(f"the agent does not advertise {what}")

    def _session_params(self, cwd: str, mcp_servers: Sequence[dict[str, Any]] | None,
                        additional: Sequence[str]) -> dict[str, Any]:
        params: dict[str, Any] = {"cwd": _absolute(cwd), "mcpServers": list(mcp_servers or [])}
        for server in params["mcpServers"]:
            kind = server.get("type") if isinstance(server, dict) else None
            if kind is not None:  # stdio servers have no type and every agent supports them
                self._require(self.capability("mcpCapabilities", str(kind)) is True, f"mcpCapabilities.{kind}")
        if additional:
            self._require(self.session_capability("additionalDirectories"),
                          "sessionCapabilities.additionalDirectories")
            params["additionalDirectories"] = [_absolute(d) for d in additional]
        return params

    def new_session(self, cwd: str, mcp_servers: Sequence[dict[str, Any]] | None = None,
                    additional_directories: Sequence[str] = ()) -> Session:
        """`session/new` (mcpServers always sent); the Session also gets updates that came before the reply."""
        return self._opened(wire.SESSION_NEW, self._session_params(cwd, mcp_servers, additional_directories))

    def _opened(self, method: str, params: dict[str, Any]) -> Session:
        """Send session/new or session/fork; the new session it answers (adopted: its updates reach it)."""
        result = self.call(method, params)
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(session_id, str):
            raise AcpError(f"{method} answered without a sessionId: {str(result)[:200]}")
        session = Session(self, session_id, params["cwd"], mcp_servers=params["mcpServers"],
                          additional_directories=params.get("additionalDirectories", ()))
        session.apply_setup(result)
        self._adopt(session)
        return session

    def load_session(self, session_id: str, cwd: str, mcp_servers: Sequence[dict[str, Any]] | None = None,
                     additional_directories: Sequence[str] = (), into: Session | None = None) -> Session:
        """`session/load` (needs `loadSession`); the replayed history lands in `session.replayed`."""
        self._require(self.capability("loadSession") is True, "loadSession")
        return self._restore(wire.SESSION_LOAD, session_id, cwd, mcp_servers, additional_directories, into)

    def resume_session(self, session_id: str, cwd: str, mcp_servers: Sequence[dict[str, Any]] | None = None,
                       additional_directories: Sequence[str] = ()) -> Session:
        """`session/resume` (needs sessionCapabilities.resume): like load, without a replay."""
        self._require(self.session_capability("resume"), "sessionCapabilities.resume")
        return self._restore(wire.SESSION_RESUME, session_id, cwd, mcp_servers, additional_directories, None)

    def fork_session(self, source: Session) -> Session:
        """`session/fork` (needs sessionCapabilities.fork): a new open session with `source`'s current history,
        the same cwd, MCP servers and directories."""
        self._require(self.session_capability("fork"), "sessionCapabilities.fork")
        params = {"sessionId": source.id, **self._session_params(source.cwd, source.mcp_servers,
                                                                 source.additional_directories)}
        return self._opened(wire.SESSION_FORK, params)

    def _restore(self, method: str, session_id: str, cwd: str, mcp_servers: Sequence[dict[str, Any]] | None,
                 additional: Sequence[str], into: Session | None) -> Session:
        params = {"sessionId": session_id, **self._session_params(cwd, mcp_servers, additional)}
        session = into or Session(self, session_id, params["cwd"], mcp_servers=params["mcpServers"],
                                  additional_directories=params.get("additionalDirectories", ()))
        session.id, session.generation = session_id, self.generation
        session.replayed = []
        session._loading = True
        self._adopt(session)
        try:
            session.apply_setup(self.call(method, params))
        except AcpError:
            self.forget(session)
            raise
        finally:
            session._loading = False
        return session

    def list_sessions(self, cwd: str | None = None, cursor: str | None = None) -> dict[str, Any]:
        """`session/list` (needs sessionCapabilities.list): `{sessions: [...], nextCursor?}`."""
        self._require(self.session_capability("list"), "sessionCapabilities.list")
        params = {key: value for key, value in (("cwd", cwd and _absolute(cwd)), ("cursor", cursor)) if value}
        result = self.call(wire.SESSION_LIST, params)
        return result if isinstance(result, dict) else {"sessions": []}

    def _adopt(self, session: Session) -> None:
        with self._lock:
            self.sessions[session.id] = session
            early = self._early.pop(session.id, [])
        for event in early:
            session.deliver(event)

    def forget(self, session: Session) -> None:
        with self._lock:
            if self.sessions.get(session.id) is session:
                del self.sessions[session.id]

    # -- respawn ---------------------------------------------------------------------------------
    def ensure_running(self, session: Session) -> None:
        """Respawn a dead agent and restore `session` in it: session/load, else session/new (a new id)."""
        with self._respawn_lock:
            if self.running and session.generation == self.generation:
                return
            if not self.running:
                reason = (self.link.end_reason if self.link else self.process.describe_exit() if self.process
                          else "it was not started")
                self._log(f"the agent is gone ({reason}); " + ("connecting again" if self.url else "starting it again"))
                self.close()
                self.start()
                self.initialize()
                if self.auth_method:
                    self.authenticate(self.auth_method)
            old_id = session.id
            self.forget(session)
            if self.capability("loadSession") is True:
                try:
                    self.load_session(old_id, session.cwd, session.mcp_servers, session.additional_directories,
                                      into=session)
                    session.respawned = "loaded"
                    return
                except AcpError as exc:
                    self._log(f"session/load of {old_id} failed after the restart ({exc}); starting a new session")
            fresh = self.new_session(session.cwd, session.mcp_servers, session.additional_directories)
            self.forget(fresh)
            session.id, session.generation, session.respawned = fresh.id, self.generation, "new"
            session.apply_setup({"modes": fresh.modes, "configOptions": fresh.config_options, "models": fresh.models})
            self._adopt(session)

    # -- what the agent sends us ---------------------------------------------------------------
    def _update(self, params: Any) -> None:
        event = ev.parse_update(params)
        if isinstance(event, ev.UnknownUpdate):
            self._log(f"agent sent an update this client does not know: {event.problem}")
        with self._lock:
            session = self.sessions.get(event.session_id)
            if session is None:  # e.g. available_commands_update before the session/new reply
                early = self._early.setdefault(event.session_id, [])
                if len(early) < MAX_EARLY:
                    early.append(event)
                else:
                    self._log(f"dropped an update for unknown session {event.session_id!r}")
                return
        session.deliver(event)

    def _unknown_notification(self, method: str, params: Any) -> None:
        if self.on_notification is not None:
            self.on_notification(method, params)
        else:
            self._log(f"agent sent a notification this client ignores: {method}")

    def _session_of(self, params: Any) -> Session:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise RpcError(wire.INVALID_PARAMS, f"unknown sessionId {session_id!r}")
        return session

    def _write_file(self, params: Any) -> None:
        session = self._session_of(params)
        path = params.get("path") if isinstance(params, dict) else None
        try:
            files.write_text_file(session.roots, params)
        except RpcError as exc:
            session.deliver(ev.FileWritten(session.id, "file_written", {"params": params}, str(path), exc.message))
            raise
        session.deliver(ev.FileWritten(session.id, "file_written", {"path": path}, str(path), None))



def _absolute(path: str) -> str:
    import os

    return os.path.abspath(path)
