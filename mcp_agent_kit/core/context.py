"""context: what a running handler can do — report progress, log, ask the user or the model.

A Context is built per request by the dispatcher. Asking for input goes through a broker
chosen by era: the modern broker replays the handler and ends the round with an
InputRequiredResult (MRTR); the legacy broker sends a server→client request through the
transport's outbox and waits. Rules: no sockets, no JSON encoding; the same tool code
works in both eras.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from mcp_agent_kit.core.content import ToolError
from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.jsonrpc import RpcError

if TYPE_CHECKING:
    from mcp_agent_kit.core.elicit_types import Elicited

Notify = Callable[[dict[str, Any]], None]
LISTENER_KINDS = ("cancelled",)  # what Context.add_listener can be told of
FOREIGN_WATCH_S = 1.0  # how often cancel_listener's helper for an Event made elsewhere looks for its removal
T = TypeVar("T")


class CancelFlag(threading.Event):
    """A threading.Event that allocates its lock only when someone waits on it, and calls the listeners added
    with `add_listener` once it is set.

    One is made per request on the hot path; most are never waited on nor listened to.
    """

    _create = threading.Lock()

    def __init__(self) -> None:  # deliberately not Event.__init__: no Condition until needed
        self._is_set = False
        self._waiters: threading.Condition | None = None
        self._listeners: list[Callable[[], None]] | None = None

    def is_set(self) -> bool:
        return self._is_set

    def set(self) -> None:
        with CancelFlag._create:
            self._is_set = True
            listeners, self._listeners = self._listeners, None
        waiters = self._waiters
        if waiters is not None:
            with waiters:
                waiters.notify_all()
        for listener in listeners or ():
            listener()

    def clear(self) -> None:
        self._is_set = False

    def wait(self, timeout: float | None = None) -> bool:
        if self._is_set:
            return True
        with CancelFlag._create:
            if self._waiters is None:
                self._waiters = threading.Condition(threading.Lock())
        waiters = self._waiters
        with waiters:
            return waiters.wait_for(lambda: self._is_set, timeout)

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` once when set (at once if it already is); returns the function that removes it."""
        with CancelFlag._create:
            fire = self._is_set
            if not fire:
                self._listeners = [*(self._listeners or ()), listener]
        if fire:
            listener()

        def remove() -> None:
            with CancelFlag._create:
                if self._listeners and listener in self._listeners:
                    self._listeners = [item for item in self._listeners if item is not listener]

        return remove


def cancel_listener(event: threading.Event, listener: Callable[[], None]) -> Callable[[], None]:
    """`event.add_listener(listener)` for the kit's cancel signals (CancelFlag, a2a's CancelSignal); an Event
    made elsewhere has no listeners, so one helper thread waits on it for this listener, until it is set or
    the listener removed (looked at every FOREIGN_WATCH_S, so a removed one's thread ends soon after)."""
    add = getattr(event, "add_listener", None)
    if callable(add):
        remove: Callable[[], None] = add(listener)
        return remove
    removed = threading.Event()

    def watch() -> None:
        while not removed.is_set():
            if event.wait(FOREIGN_WATCH_S):
                if not removed.is_set():
                    listener()
                return

    threading.Thread(target=watch, name="cancel-listener", daemon=True).start()
    return removed.set


class InputRequired(Exception):
    """Control flow: the handler needs answers the client has not given yet (modern era)."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__("input required")
        self.requests = requests


class InputBroker(Protocol):
    def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]: ...


def required_capability(request: dict[str, Any]) -> dict[str, Any] | None:
    """The ClientCapabilities fragment an input request needs, or None for an unknown kind."""
    method = request.get("method")
    name = mcp.INPUT_CAPABILITY.get(str(method))
    if name is None:
        return None
    params = request.get("params") or {}
    if method == "elicitation/create" and params.get("mode", "form") == "url":
        return {"elicitation": {"url": {}}}
    if method == "sampling/createMessage" and params.get("tools"):
        return {"sampling": {"tools": {}}}
    return {name: {}}


def capability_declared(declared: dict[str, Any], needed: dict[str, Any]) -> bool:
    """True when every capability (and sub-capability) in `needed` is declared."""
    for name, sub in needed.items():
        have = declared.get(name)
        if not isinstance(have, dict):
            return False
        if name == "elicitation" and not have and "url" not in sub:
            continue  # `elicitation: {}` means form mode
        for key in sub:
            if key not in have:
                return False
    return True


def _check_requests(requests: dict[str, dict[str, Any]], declared: dict[str, Any]) -> dict[str, Any] | None:
    for request in requests.values():
        needed = required_capability(request)
        if needed is None:
            raise ValueError(f"unsupported input request method {request.get('method')!r}")
        if not capability_declared(declared, needed):
            return needed
    return None


def missing_capability(needed: dict[str, Any]) -> RpcError:
    return RpcError(mcp.MISSING_CAPABILITY, "Missing required client capability", {"requiredCapabilities": needed})


class ReplayBroker:
    """Modern era: answer from the responses collected so far, else end the round."""

    def __init__(self, declared: dict[str, Any], answers: dict[str, Any]) -> None:
        self.declared = declared
        self.answers = answers

    def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        needed = _check_requests(requests, self.declared)
        if needed is not None:
            raise missing_capability(needed)
        missing = {key: request for key, request in requests.items() if key not in self.answers}
        if missing:
            raise InputRequired(missing)
        return {key: self.answers[key] for key in requests}


class OutboxRequester(Protocol):
    def __call__(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...


class LegacyBroker:
    """Handshake era: send each request to the client and wait for its reply."""

    def __init__(self, declared: dict[str, Any], send: OutboxRequester | None) -> None:
        self.declared = declared
        self.send = send

    def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        needed = _check_requests(requests, self.declared)
        if needed is not None or self.send is None:
            what = ", ".join(needed or {"server-to-client requests": None})
            raise ToolError(f"this client did not declare the {what} capability this tool needs")
        answers = {}
        for key, req in requests.items():
            method = str(req["method"])
            try:
                answers[key] = self.send(method, dict(req.get("params") or {}))
            except RpcError as exc:  # the client's failure is the tool's, not the tools/call's
                raise ToolError(f"the client could not answer {method}: {exc.message} ({exc.code})") from exc
        return answers


class Context:
    """Per-request facilities for handlers. Declare a parameter of type Context to receive it."""

    def __init__(
        self,
        *,
        method: str,
        request_id: Any,
        era: str,
        version: str,
        client_capabilities: dict[str, Any],
        client_info: dict[str, Any] | None,
        notify: Notify,
        broker: InputBroker,
        progress_token: Any = None,
        log_level: str | None = None,
        principal: str | None = None,
        cancel_event: threading.Event | None = None,
        state: dict[str, Any] | None = None,
        interrupt: Callable[[], bool] | None = None,
        server: Any = None,
    ) -> None:
        self.method = method
        self.request_id = request_id
        self.era = era
        self.protocol_version = version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.progress_token = progress_token
        self.principal = principal
        self.cancel_event = cancel_event or CancelFlag()
        self.state: dict[str, Any] = state if state is not None else {}
        self.server = server
        self._notify = notify
        self._broker = broker
        self._interrupt = interrupt
        self._log_rank = mcp.LOG_LEVEL_RANK[log_level] if log_level else None
        self._last_progress: float | None = None
        self._counters: dict[str, int] = {}

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan function yielded (None when it has none or is not running)."""
        return getattr(self.server, "lifespan_value", None)

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def add_listener(self, kind: str, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` once on `kind` ("cancelled": the request was cancelled; at once if it is already)
        from the thread that cancels it; returns the function that removes it again."""
        if kind not in LISTENER_KINDS:
            raise ValueError(f"unknown listener kind {kind!r}; use one of: {', '.join(LISTENER_KINDS)}")
        return cancel_listener(self.cancel_event, listener)

    def close_stream(self) -> bool:
        """Close this request's SSE connection now and keep working (2025-11-25 SSE polling).

        The client reconnects with `Last-Event-ID` and receives every later notification and the
        result. Useful before a long wait, so no connection is held open meanwhile. True when
        the transport did it: a Streamable HTTP tool call of a 2025-11-25 session that accepts
        SSE; elsewhere (stdio, 2026-07-28, older sessions) it does nothing and returns False.
        """
        return self._interrupt() if self._interrupt is not None else False

    # ---- notifications --------------------------------------------------------------------
    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send notifications/progress if the client asked for it; values must increase."""
        if self.progress_token is None or (self._last_progress is not None and progress <= self._last_progress):
            return
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send notifications/message when the client opted in at this level."""
        rank = mcp.LOG_LEVEL_RANK.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}")
        if self._log_rank is None or rank < self._log_rank:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        self._notify({"jsonrpc": "2.0", "method": "notifications/message", "params": params})

    # ---- input from the client ----------------------------------------------------------------
    def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Ask several things at once: {key: {"method": ..., "params": {...}}} -> {key: response}."""
        return self._broker.ask(requests)

    def _key(self, kind: str, key: str | None) -> str:
        if key is not None:
            return key
        count = self._counters.get(kind, 0) + 1
        self._counters[kind] = count
        return f"{kind}_{count}"

    @overload
    def elicit(
        self, message: str, requested_schema: dict[str, Any] | None = None, *, key: str | None = None,
        url: str | None = None,
    ) -> dict[str, Any]: ...

    @overload
    def elicit(self, message: str, requested_schema: type[T], *, key: str | None = None) -> Elicited[T]: ...

    @overload
    def elicit(self, message: str, requested_schema: Any, *, key: str | None = None) -> Elicited[Any]: ...

    def elicit(
        self, message: str, requested_schema: Any = None, *, key: str | None = None, url: str | None = None
    ) -> Any:
        """Ask the user (form mode, or URL mode when url is given).

        With a schema dict (or nothing) returns the ElicitResult dict. With a type (bool, str,
        int, float, a Literal of strings, an Enum, a dataclass, a TypedDict) asks with the form
        built from it and returns an `Elicited` with `.action` and the typed `.data`."""
        if requested_schema is not None and not isinstance(requested_schema, dict):
            from mcp_agent_kit.core.elicit_types import form

            if url is not None:
                raise ValueError("a typed elicitation is a form: give a type or url=, not both")
            compiled = form(requested_schema)
            return compiled.read(message, self.elicit(message, compiled.schema, key=key))
        params: dict[str, Any] = {"message": message}
        if url is not None:
            params.update(mode="url", url=url)
        else:
            params.update(mode="form", requestedSchema=requested_schema or {"type": "object", "properties": {}})
        name = self._key("elicitation", key)
        answer: dict[str, Any] = self.ask({name: {"method": "elicitation/create", "params": params}})[name]
        return answer

    def sample(
        self, messages: list[dict[str, Any]] | str, max_tokens: int = 256, *, key: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """Ask the client's model; returns the CreateMessageResult."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params = {"messages": messages, "maxTokens": max_tokens, **extra}
        name = self._key("sampling", key)
        answer: dict[str, Any] = self.ask({name: {"method": "sampling/createMessage", "params": params}})[name]
        return answer

    def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        name = self._key("roots", key)
        answer = self.ask({name: {"method": "roots/list", "params": {}}})[name]
        roots = answer.get("roots", []) if isinstance(answer, dict) else []
        return list(roots)

    def forward(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask one input request exactly as given (a gateway relaying its backend's question)."""
        kind = mcp.INPUT_CAPABILITY.get(method)
        if kind is None:
            raise ValueError(f"cannot forward {method!r}: not an input request")
        name = self._key(kind, None)
        answer: dict[str, Any] = self.ask({name: {"method": method, "params": params}})[name]
        return answer

    async def aask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        import asyncio

        return await asyncio.to_thread(self.ask, requests)

    @overload
    async def aelicit(
        self, message: str, requested_schema: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]: ...

    @overload
    async def aelicit(self, message: str, requested_schema: type[T], **kw: Any) -> Elicited[T]: ...

    @overload
    async def aelicit(self, message: str, requested_schema: Any, **kw: Any) -> Elicited[Any]: ...

    async def aelicit(self, message: str, requested_schema: Any = None, **kw: Any) -> Any:
        """`elicit` for async functions (the same schema-or-type forms)."""
        import asyncio

        return await asyncio.to_thread(lambda: self.elicit(message, requested_schema, **kw))

    async def asample(self, messages: list[dict[str, Any]] | str, max_tokens: int = 256, **kw: Any) -> dict[str, Any]:
        import asyncio

        return await asyncio.to_thread(self.sample, messages, max_tokens, **kw)
