"""listeners: the one fan-out behind every backend's `subscribe` and the delivery of its `notify`.

A backend keeps a Listeners; `subscribe` is `add` (the unsubscribe function comes back), and a
notification, on whatever thread the backend delivers it (the notifier's in memory, the poller's
in sqlite, the LISTEN thread in PostgreSQL), is `deliver(channel, payload)`. Every listener is
called, in the order they subscribed, outside every lock; one that raises is logged (once per
listener and failure text, so a broken one cannot flood the log) and neither stops the others nor
the delivering thread. Rules: standard library only; knows no backend and no protocol.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mcp_agent_kit.store.base import Listener

log = logging.getLogger("mcp_agent_kit.store")


class Listeners:
    """The subscribed listeners of one store, and their guarded fan-out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[int, Listener] = {}
        self._next = 0
        self._reported: set[tuple[int, str]] = set()  # (listener, failure) already logged

    def add(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` on every delivery from now on; returns the function that stops it."""
        with self._lock:
            token = self._next
            self._next += 1
            self._listeners[token] = listener

        def remove() -> None:
            with self._lock:
                self._listeners.pop(token, None)
        return remove

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._listeners)

    def clear(self) -> None:
        with self._lock:
            self._listeners.clear()

    def deliver(self, channel: str, payload: str) -> None:
        """Call every listener with (channel, payload); one that raises is logged and skipped."""
        with self._lock:
            listeners = list(self._listeners.items())
        for token, listener in listeners:
            try:
                listener(channel, payload)
            except Exception as exc:  # one broken listener must not stop the others' wake-ups
                self._failed(token, listener, channel, exc)

    def _failed(self, token: int, listener: Listener, channel: str, exc: Exception) -> None:
        failure = f"{type(exc).__name__}: {exc}"
        with self._lock:
            if (token, failure) in self._reported:
                return
            if len(self._reported) > 1000:
                self._reported.clear()
            self._reported.add((token, failure))
        log.error("store listener %s failed on a notification of %s: %s", getattr(listener, "__qualname__", listener),
                  channel, failure, exc_info=exc)
