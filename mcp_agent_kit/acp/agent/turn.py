"""acp.agent.turn: one `session/prompt` turn as an agent author sees it — stream, plan, call tools, ask, use the client.

A Turn is handed to the author's prompt handler. It streams `session/update`s (message and
thought chunks, plans, tool calls and their updates), asks `session/request_permission`, reads
and writes files and runs terminals through the client — each only when the client advertised
it in `initialize` (otherwise ClientCapabilityError, before anything is sent). It records the
user's prompt and the agent's message chunks in the session history. A `session/cancel` sets
`cancelled`: every wait of the turn ends at once (a permission question resolves as cancelled,
other requests raise Cancelled and are withdrawn with `$/cancel_request`) and the prompt ends
with `stopReason: "cancelled"` whatever the handler returns. Every wait is bounded.
Rules: speaks through an `Outbound` (the connection), never touches streams; imports `wire`
and its siblings only.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_agent_kit.acp.agent import updates
from mcp_agent_kit.acp.agent.session import AgentSession, Message
from mcp_agent_kit.acp.connection import RequestTimeout
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError


class Cancelled(Exception):
    """The turn was cancelled by the client (`session/cancel`); raising it ends the turn as cancelled."""


class ClientCapabilityError(Exception):
    """The client did not advertise the capability a helper needs (fs.readTextFile, terminal, ...)."""


class ClientRequestError(Exception):
    """The client answered one of the turn's requests with an error (a refused path, a failed command).

    Not an RpcError on purpose: uncaught, it fails the prompt with -32603 naming the client's error,
    instead of passing the client's code off as the agent's answer to `session/prompt`."""

    def __init__(self, method: str, error: RpcError) -> None:
        super().__init__(f"{method} failed on the client: {error.message} (code {error.code})")
        self.method, self.code, self.message, self.data = method, error.code, error.message, error.data


class Waitable(Protocol):
    """An outgoing request's answer (acp.connection.Pending)."""

    id: int

    def settle(self, result: Any = None, error: BaseException | None = None) -> None: ...

    def wait(self, timeout: float) -> Any: ...


class Outbound(Protocol):
    """What a turn needs of the connection: notifications and requests whose answer can be waited for."""

    def notify(self, method: str, params: Any = None) -> None: ...

    def send_request(self, method: str, params: Any = None) -> Waitable: ...

    def request(self, method: str, params: Any = None, *, timeout: float) -> Any: ...


@dataclass(frozen=True)
class Permission:
    """The client's answer to a permission question: `outcome` "selected" or "cancelled"."""

    outcome: str
    option_id: str | None = None
    kind: str | None = None

    @property
    def allowed(self) -> bool:
        """An allow_once / allow_always option was chosen."""
        return self.kind in wire.ALLOW_KINDS

    @property
    def cancelled(self) -> bool:
        return self.outcome == wire.OUTCOME_CANCELLED


DEFAULT_OPTIONS = (updates.permission_option("allow", "Allow", wire.ALLOW_ONCE),
                   updates.permission_option("reject", "Reject", wire.REJECT_ONCE))


def has_capability(capabilities: dict[str, Any], path: tuple[str, ...]) -> bool:
    """Whether clientCapabilities has a truthy value at `path` (("fs", "writeTextFile"))."""
    value: Any = capabilities
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return bool(value)


class ToolCall:
    """A tool call announced with a `tool_call` update; `update()` sends `tool_call_update`s."""

    def __init__(self, turn: Turn, tool_call_id: str, title: str, kind: str | None) -> None:
        self.turn, self.id, self.title, self.kind = turn, tool_call_id, title, kind
        self.status = "pending"

    def update(self, **changes: Any) -> None:
        """Send the changed fields (status=, title=, content=, locations=, raw_input=, raw_output=)."""
        self.status = changes.get("status") or self.status
        self.title = changes.get("title") or self.title
        self.turn.send(updates.tool_call_update(self.id, **changes))

    def complete(self, content: list[dict[str, Any]] | None = None, raw_output: Any = None) -> None:
        self.update(status="completed", content=content, raw_output=raw_output)

    def fail(self, reason: str | None = None) -> None:
        self.update(status="failed", content=[updates.content_item(reason)] if reason else None)

    def fields(self) -> dict[str, Any]:
        """The ToolCallUpdate that names this call in a permission question."""
        return updates.tool_call_fields(self.id, title=self.title, kind=self.kind, status=self.status)


class Terminal:
    """A command the client runs (`terminal/create`); release it (or use `with`) when done."""

    def __init__(self, turn: Turn, terminal_id: str) -> None:
        self.turn, self.id = turn, terminal_id
        self.released = False

    def _call(self, method: str, force: bool = False) -> Any:
        params = {"sessionId": self.turn.session.session_id, "terminalId": self.id}
        return self.turn.call(method, params, force=force)

    def output(self) -> dict[str, Any]:
        """`{output, truncated, exitStatus?}` so far."""
        result: dict[str, Any] = self._call(wire.TERMINAL_OUTPUT)
        return result

    def wait_for_exit(self) -> dict[str, Any]:
        """`{exitCode?, signal?}` once the command exits (bounded by the agent's request timeout)."""
        result: dict[str, Any] = self._call(wire.TERMINAL_WAIT_FOR_EXIT)
        return result

    def kill(self) -> None:
        self._call(wire.TERMINAL_KILL)

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._call(wire.TERMINAL_RELEASE, force=True)  # also after a cancel

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Turn:
    """The running `session/prompt`: what the author's handler receives."""

    def __init__(self, session: AgentSession, prompt: list[dict[str, Any]], outbound: Outbound,
                 client_capabilities: dict[str, Any], *, request_timeout: float = 60.0,
                 permission_timeout: float = 600.0) -> None:
        self.session = session
        self.prompt = prompt
        self.client_capabilities = client_capabilities
        self.cancelled = threading.Event()
        self.request_timeout, self.permission_timeout = request_timeout, permission_timeout
        self._out = outbound
        self._lock = threading.Lock()
        self._waiting: dict[int, Waitable] = {}
        self._ids = itertools.count(1)
        self._reply: Message | None = None
        self.terminals: list[Terminal] = []
        session.history.append(Message("user", list(prompt)))

    # -- what the client said ----------------------------------------------------------------
    @property
    def text(self) -> str:
        """The prompt's text blocks joined (resource links shown as their uri)."""
        shown = {"text": lambda b: str(b.get("text", "")), "resource_link": lambda b: str(b.get("uri", ""))}
        return "".join(shown[b["type"]](b) for b in self.prompt if b.get("type") in shown)

    @property
    def is_cancelled(self) -> bool:
        return self.cancelled.is_set()

    def check(self) -> None:
        """Raise Cancelled if the client cancelled the turn (call it between steps)."""
        if self.cancelled.is_set():
            raise Cancelled("the client cancelled this turn")

    def can(self, *path: str) -> bool:
        """Whether the client advertised a capability: `turn.can("fs", "writeTextFile")`, `turn.can("terminal")`."""
        return has_capability(self.client_capabilities, path)

    # -- streaming ---------------------------------------------------------------------------
    def send(self, update: dict[str, Any]) -> None:
        """Send one `session/update` (any update dict, see acp.agent.updates)."""
        self._out.notify(wire.SESSION_UPDATE, {"sessionId": self.session.session_id, "update": update})

    def say(self, content: dict[str, Any] | str) -> None:
        """Stream a chunk of the agent's reply (kept in the history, replayed by `session/load`)."""
        block = updates.text(content) if isinstance(content, str) else content
        if self._reply is None:
            self._reply = Message("agent")
            self.session.history.append(self._reply)
        self._reply.content.append(block)
        self.send(updates.agent_message(block, self._reply.message_id))

    def think(self, content: dict[str, Any] | str) -> None:
        """Stream a chunk of the agent's reasoning (`agent_thought_chunk`, not kept in the history)."""
        self.send(updates.thought(content))

    def plan(self, entries: list[dict[str, Any] | str]) -> None:
        """Send the complete plan (strings become pending, medium-priority entries)."""
        self.send(updates.plan([updates.plan_entry(e) if isinstance(e, str) else e for e in entries]))

    def tool_call(self, title: str, *, kind: str | None = None, tool_call_id: str | None = None,
                  **fields: Any) -> ToolCall:
        """Announce a tool call (`tool_call`, status pending); returns its handle."""
        call = ToolCall(self, tool_call_id or f"call_{next(self._ids)}", title, kind)
        self.send(updates.tool_call(call.id, title, kind=kind, **fields))
        return call

    # -- requests to the client --------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any], timeout: float | None = None, *, force: bool = False) -> Any:
        """Send a request to the client and wait for its result, at most `timeout` s (the agent's
        request timeout by default); raises Cancelled once the turn is cancelled (unless `force`:
        clean-up such as terminal/release goes out and is waited for even then), ClientRequestError
        when the client answers with an error."""
        try:
            return self._call(method, params, self.request_timeout if timeout is None else timeout, force)
        except RpcError as exc:
            raise ClientRequestError(method, exc) from None

    def _call(self, method: str, params: dict[str, Any], wait: float, force: bool) -> Any:
        if force:
            return self._out.request(method, params, timeout=wait)
        self.check()
        pending = self._out.send_request(method, params)
        with self._lock:
            self._waiting[pending.id] = pending
        if self.cancelled.is_set():  # cancelled between the check and the registration
            self._withdraw(pending)
        try:
            return pending.wait(wait)
        except RequestTimeout:
            self._withdraw(pending)
            raise
        finally:
            with self._lock:
                self._waiting.pop(pending.id, None)

    def _withdraw(self, pending: Waitable) -> None:
        pending.settle(error=Cancelled("the client cancelled this turn"))
        with contextlib.suppress(Exception):  # the connection is gone: nothing to withdraw from
            self._out.notify(wire.CANCEL_REQUEST, {"requestId": pending.id})

    def cancel(self) -> None:
        """Mark the turn cancelled and end every wait of it (called on `session/cancel`)."""
        self.cancelled.set()
        with self._lock:
            waiting = list(self._waiting.values())
        for pending in waiting:
            self._withdraw(pending)

    def ask_permission(self, tool_call: ToolCall | dict[str, Any],
                       options: list[dict[str, Any]] | tuple[dict[str, Any], ...] = DEFAULT_OPTIONS) -> Permission:
        """Ask `session/request_permission` about a tool call; the chosen option, or cancelled (also
        when the turn is cancelled or the client does not answer within the permission timeout)."""
        fields = tool_call.fields() if isinstance(tool_call, ToolCall) else tool_call
        params = {"sessionId": self.session.session_id, "toolCall": fields, "options": list(options)}
        try:
            result = self.call(wire.REQUEST_PERMISSION, params, self.permission_timeout)
        except Cancelled:
            return Permission(wire.OUTCOME_CANCELLED)
        except RequestTimeout:
            return Permission(wire.OUTCOME_CANCELLED)
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if not isinstance(outcome, dict) or outcome.get("outcome") != wire.OUTCOME_SELECTED:
            return Permission(wire.OUTCOME_CANCELLED)
        chosen = next((o for o in options if o.get("optionId") == outcome.get("optionId")), None)
        if chosen is None:
            raise ValueError(f"the client chose option {outcome.get('optionId')!r}, which was not offered")
        return Permission(wire.OUTCOME_SELECTED, chosen["optionId"], chosen["kind"])

    def _need(self, *path: str) -> None:
        if not self.can(*path):
            raise ClientCapabilityError(f"the client did not advertise clientCapabilities.{'.'.join(path)}")

    def read_file(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        """The text of `path` (absolute) as the client sees it (`fs/read_text_file`)."""
        self._need("fs", "readTextFile")
        params: dict[str, Any] = {"sessionId": self.session.session_id, "path": path}
        params.update({k: v for k, v in (("line", line), ("limit", limit)) if v is not None})
        result = self.call(wire.FS_READ_TEXT_FILE, params)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise ValueError(f"fs/read_text_file answered without a content string: {result!r}")
        return content

    def write_file(self, path: str, content: str) -> None:
        """Write `content` to `path` (absolute) through the client (`fs/write_text_file`)."""
        self._need("fs", "writeTextFile")
        self.call(wire.FS_WRITE_TEXT_FILE, {"sessionId": self.session.session_id, "path": path, "content": content})

    def terminal(self, command: str, args: list[str] | None = None, *, cwd: str | None = None,
                 env: dict[str, str] | None = None, output_byte_limit: int | None = None) -> Terminal:
        """Start `command` in a client terminal (`terminal/create`); released when the turn ends at the latest."""
        self._need("terminal")
        params: dict[str, Any] = {"sessionId": self.session.session_id, "command": command, "args": list(args or [])}
        if env:
            params["env"] = [{"name": k, "value": v} for k, v in env.items()]
        params.update({k: v for k, v in (("cwd", cwd), ("outputByteLimit", output_byte_limit)) if v is not None})
        result = self.call(wire.TERMINAL_CREATE, params)
        terminal_id = result.get("terminalId") if isinstance(result, dict) else None
        if not isinstance(terminal_id, str):
            raise ValueError(f"terminal/create answered without a terminalId: {result!r}")
        terminal = Terminal(self, terminal_id)
        self.terminals.append(terminal)
        return terminal

    def release_terminals(self, log: Callable[[str], None]) -> None:
        """Release every terminal the handler left open (the agent must release all of them)."""
        for terminal in self.terminals:
            try:
                terminal.release()
            except Exception as exc:
                log(f"releasing terminal {terminal.id} failed: {exc}")
