"""extension: what an extension may contribute to a dispatcher — a closed set, fixed at construction.

An extension (tasks of either era, subscriptions/listen, ...) is a small object; the dispatcher
calls `bind(registry)` once when it is built (an extension gets what it uses, the server's
registry, never the dispatcher: extensions contribute, the dispatcher consumes) and merges the
returned `Contributions` into its own tables: method rows keyed by (method, era), a tools/call
interceptor per era, a tools/list annotator per era, a capabilities hook per era. `close()` runs
at server shutdown. Rules: no contribution is added later, nothing module-level is rewritten; an
extension keeps its state on itself and imports its heavy parts on first use (a `Lazy` holds
each: a task table, a worker pool), so building one costs next to nothing and a server that
never uses it never loads them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from mcp_agent_kit.core.call import Method, ToolAnnotator, ToolInterceptor
from mcp_agent_kit.core.registry import Registry

CapabilityHook = Callable[[str, dict[str, Any]], None]
"""extend(version, capabilities): add to the ServerCapabilities offered at `version` (era in the key)."""
T = TypeVar("T")


class Contributions:
    """Everything one extension adds; each table is keyed by era (mcp.MODERN / mcp.LEGACY) or (method, era)."""

    __slots__ = ("annotators", "capabilities", "interceptors", "methods")

    def __init__(
        self,
        *,
        methods: Mapping[tuple[str, str], Method] | None = None,
        interceptors: Mapping[str, ToolInterceptor] | None = None,
        annotators: Mapping[str, ToolAnnotator] | None = None,
        capabilities: Mapping[str, CapabilityHook] | None = None,
    ) -> None:
        self.methods = dict(methods or {})
        self.interceptors = dict(interceptors or {})
        self.annotators = dict(annotators or {})
        self.capabilities = dict(capabilities or {})


class Extension(Protocol):
    """An optional part of the protocol, composed into a dispatcher when it is built."""

    name: str

    def bind(self, registry: Registry) -> Contributions:
        """Attach to the registry of the one server this extension serves; return what it contributes."""
        ...

    def close(self) -> None:
        """Server shutdown: end what is open (long-lived requests); the dispatcher may serve again."""
        ...


class Lazy(Generic[T]):
    """A part built on its first use, once, whichever thread asks first (an extension's task table
    or worker pool); two extensions given the same Lazy share the one part it builds."""

    __slots__ = ("_build", "_lock", "_value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._value: T | None = None

    @property
    def built(self) -> bool:
        """Has the part been built? (Asking builds nothing: for paths with nothing to do without it.)"""
        return self._value is not None

    def get(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._value = self._build()
        return value
