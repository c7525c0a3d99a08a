"""call: one request as a handler sees it (`Call`), what it may read of its server (`DispatchView`),
and a method table row (`Method`).

A `Call` is immutable: code that needs a variant (a task's worker with its own outbox and cancel
flag) derives one with `call._replace(...)`. It is a typed NamedTuple rather than a frozen
dataclass because it is built once per request: a frozen dataclass sets each field through
`object.__setattr__` (about 1.5 µs for these 14 fields, some 15 % of a whole tools/call), a
NamedTuple is built by the C tuple constructor (about 0.4 µs). A handler reaches its server only
through `call.view`, a frozen DispatchView its dispatcher builds once, after its extensions are
composed: the registry, the extensions' tools/call interceptors and tools/list annotators per
era, and the ServerCapabilities hook — never the dispatcher itself. Rules: a bottom module — it
imports only `core.context` and `wire`; it knows no dispatcher, transport or extension (they are
typed as protocols or `Any` here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from mcp_agent_kit.core.context import Context, InputBroker

if TYPE_CHECKING:
    from mcp_agent_kit.core.registry import Registry


class Outbox(Protocol):
    """What a transport offers a running request."""

    def notify(self, message: dict[str, Any]) -> None: ...

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a server→client request (legacy era only) and wait for its result."""
        ...


class TaskHooks(Protocol):
    """What a call running inside a task (core.tasks, core.legacy_tasks) adds to its Context."""

    def broker(self, inner: InputBroker) -> InputBroker:
        """The broker the tool's questions go to (given the request's own)."""
        ...

    def detach(self) -> None:
        """`start_task(ctx)`: from here on the tool runs as a task."""
        ...


ToolInterceptor = Callable[["Call", Any, dict[str, Any]], "dict[str, Any] | None"]
"""intercept(call, tool, arguments): the result to send for a validated tools/call, or None to run it as usual."""
ToolAnnotator = Callable[["Call", list[dict[str, Any]]], list[dict[str, Any]]]
"""annotate(call, tools): the tools/list page to send (new dicts for changed tools; the given ones are shared)."""


class CapabilitiesOf(Protocol):
    def __call__(self, era: str, version: str | None = None) -> dict[str, Any]:
        """The ServerCapabilities offered now at `era` (and, for the handshake, the negotiated `version`)."""
        ...


@dataclass(frozen=True, slots=True)
class DispatchView:
    """What a handler may read of the server it runs on; built once per dispatcher (its tables are
    fixed at construction; the capabilities are derived from the registry at each ask)."""

    registry: Registry
    interceptors: Mapping[str, tuple[ToolInterceptor, ...]]  # era -> the extensions' tools/call hooks
    annotators: Mapping[str, tuple[ToolAnnotator, ...]]  # era -> the extensions' tools/list hooks
    capabilities: CapabilitiesOf


class Call(NamedTuple):
    """One request: what was asked, in which era, on which connection, and where replies go."""

    view: DispatchView
    conn: Any  # core.dispatcher.Connection
    method: str
    id: Any
    params: dict[str, Any]
    era: str
    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    out: Outbox | None
    cancel: threading.Event | None
    log_level: str | None
    progress_token: Any
    task: TaskHooks | None = None  # set on the call a task's worker runs; None on a request

    @property
    def registry(self) -> Registry:
        return self.view.registry

    def context(self, broker: InputBroker, state: dict[str, Any] | None = None) -> Context:
        out = self.out
        task = self.task
        ctx = Context(
            method=self.method,
            request_id=self.id,
            era=self.era,
            version=self.version,
            client_capabilities=self.capabilities,
            client_info=self.client_info,
            notify=out.notify if out is not None else _drop,
            broker=broker if task is None else task.broker(broker),
            progress_token=self.progress_token,
            log_level=self.log_level,
            principal=self.conn.principal,
            cancel_event=self.cancel,
            state=state,
            interrupt=getattr(out, "interrupt", None),
            server=self.view.registry,
        )
        if task is not None:
            ctx._mcp_task_detach = task.detach  # type: ignore[attr-defined]  # read by start_task()
        return ctx


def _drop(message: dict[str, Any]) -> None:
    return None


class Method:
    """A method table row: the handler and the capabilities it depends on (the era is in the key)."""

    __slots__ = ("client_needs", "fn", "needs")

    def __init__(
        self,
        fn: Callable[[Call], dict[str, Any]],
        needs: str | None = None,
        client_needs: dict[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.needs = needs  # server capability that must be offered
        self.client_needs = client_needs  # client capability that must be declared


MethodTable = dict[tuple[str, str], Method]
"""(method name, era) -> row."""
