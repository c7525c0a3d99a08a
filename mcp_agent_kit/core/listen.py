"""listen: `subscriptions/listen` — a long-lived request that streams list-changed and
resource-updated notifications to one subscriber (digest §4.4).

The handler acknowledges the subset of notifications it honours, then forwards registry
changes (and task status pushes from core.tasks) tagged with the subscription id until the
client goes away (HTTP: stream closed; stdio: notifications/cancelled) or the server closes.
Back-pressure: each subscription queues at most MAX_QUEUED notifications; the notifying thread
only ever enqueues (it never waits for a socket). A subscriber that falls that far behind is
dropped: its listen ends at once (the Outbox's `abort()`, if it has one, cuts the connection;
a listen stream is not resumable, the client listens again and re-reads the lists).
Rules: sans-IO — it talks only to the request's Outbox and cancel flag; its state (open
subscriptions, the shutdown flag) lives on the ListenExtension its dispatcher was built with;
`queue` is imported by the first listen (a server start does without it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.core.call import Call, Method
from mcp_agent_kit.core.extension import Contributions
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import RpcError
from mcp_agent_kit.wire.mcp import MODERN

if TYPE_CHECKING:
    from mcp_agent_kit.core.registry import Registry

HEARTBEAT_S = 15.0
POLL_S = 0.25
MAX_QUEUED = 1024  # notifications waiting for one subscriber; one more and the subscriber is dropped
# Request flag -> (registry kind(s) that trigger it, capability that must be offered, notification).
LIST_FLAGS: dict[str, tuple[frozenset[str], str, str]] = {
    "toolsListChanged": (frozenset({"tools"}), "tools", mcp.LIST_CHANGED["tools"]),
    "promptsListChanged": (frozenset({"prompts"}), "prompts", mcp.LIST_CHANGED["prompts"]),
    "resourcesListChanged": (
        frozenset({"resources", "resourceTemplates"}), "resources", mcp.LIST_CHANGED["resources"]
    ),
}


class Subscription:
    """One open listen request."""

    def __init__(self, id_: Any, principal: str | None, on_overflow: Callable[[], None] | None = None) -> None:
        """on_overflow: called once the subscriber fell MAX_QUEUED behind (the transport aborts its stream)."""
        import queue

        self.id = id_
        self.principal = principal
        self.kinds: set[str] = set()
        self.uris: set[str] = set()
        self.task_ids: set[str] = set()
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue(MAX_QUEUED)
        self.overflowed = threading.Event()  # fell MAX_QUEUED behind: the listen ends
        self.on_overflow = on_overflow

    def send(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Queue one notification; never blocks. A full queue drops the subscriber."""
        import queue

        if self.overflowed.is_set():
            return
        body = dict(params or {})
        body["_meta"] = {**(body.get("_meta") or {}), mcp.META_SUBSCRIPTION_ID: self.id}
        try:
            self.queue.put_nowait(jsonrpc.notification(method, body))
        except queue.Full:
            self.overflowed.set()
            drop = self.on_overflow
            if drop is not None:
                drop()


class ListenExtension:
    """subscriptions/listen on one dispatcher: the open subscriptions and registry change fan-out."""

    name = "listen"

    def __init__(self) -> None:
        self.closing = threading.Event()  # replaced by a fresh one when close() ends the open listens
        self._subs: list[Subscription] = []
        self._lock = threading.Lock()
        # Extra acknowledgement fields contributed by other extensions (e.g. tasks: taskIds).
        self.extras: dict[str, Callable[[Call, Subscription, Any], Any]] = {}

    def bind(self, registry: Registry) -> Contributions:
        registry.on_change(self._changed)
        return Contributions(
            methods={("subscriptions/listen", MODERN): Method(self.subscriptions_listen)},
            capabilities={MODERN: _lists_change},
        )

    def close(self) -> None:
        """End every open listen with its final result (server shutdown); later listens work again."""
        with self._lock:
            closing, self.closing = self.closing, threading.Event()
        closing.set()

    def add(self, sub: Subscription) -> None:
        with self._lock:
            self._subs.append(sub)

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def subscribers(self) -> list[Subscription]:
        with self._lock:
            return list(self._subs)

    def _changed(self, kind: str, uri: str | None) -> None:
        for sub in self.subscribers():
            if uri is None and kind in sub.kinds:
                flag = next(f for f, (kinds, _, _) in LIST_FLAGS.items() if kind in kinds)
                sub.send(LIST_FLAGS[flag][2])
            elif uri is not None and uri in sub.uris:
                sub.send("notifications/resources/updated", {"uri": uri})

    def subscriptions_listen(self, call: Call) -> dict[str, Any]:
        import queue

        if call.out is None:
            raise RpcError.method_not_found("subscriptions/listen")
        wanted = call.params.get("notifications")
        if not isinstance(wanted, dict):
            raise RpcError.invalid_params('subscriptions/listen needs a "notifications" object')
        out = call.out
        sub = Subscription(call.id, call.conn.principal, on_overflow=getattr(out, "abort", None))
        ack = _honoured(call, wanted, sub, self.extras)
        closing = self.closing
        self.add(sub)
        heartbeat = getattr(out, "heartbeat", None)
        cancel = call.cancel or threading.Event()
        try:
            sub.send("notifications/subscriptions/acknowledged", {"notifications": ack})
            idle = 0.0
            while not (cancel.is_set() or closing.is_set() or sub.overflowed.is_set()):
                try:
                    message = sub.queue.get(timeout=POLL_S)
                except queue.Empty:
                    idle += POLL_S
                    if idle >= HEARTBEAT_S and callable(heartbeat):
                        idle = 0.0
                        heartbeat()
                    continue
                idle = 0.0
                out.notify(message)
        finally:
            self.remove(sub)
        return {"_meta": {mcp.META_SUBSCRIPTION_ID: call.id}}


def _lists_change(version: str, caps: dict[str, Any]) -> None:
    """With listen offered, 2026-07-28 clients can follow list changes and resource updates."""
    for kind in ("tools", "resources", "prompts"):
        if kind in caps:
            caps[kind]["listChanged"] = True
    if "resources" in caps:
        caps["resources"]["subscribe"] = True


def _honoured(
    call: Call, wanted: dict[str, Any], sub: Subscription, extras: dict[str, Callable[[Call, Subscription, Any], Any]]
) -> dict[str, Any]:
    offered = call.view.capabilities(MODERN)
    ack: dict[str, Any] = {}
    for flag, (kinds, capability, _) in LIST_FLAGS.items():
        if wanted.get(flag) is True and capability in offered:
            ack[flag] = True
            sub.kinds.update(kinds)
    uris = wanted.get("resourceSubscriptions")
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise RpcError.invalid_params('"resourceSubscriptions" must be an array of strings')
        if offered.get("resources", {}).get("subscribe"):
            sub.uris.update(uris)
            ack["resourceSubscriptions"] = list(uris)
    for key, contribute in extras.items():
        if key in wanted:
            value = contribute(call, sub, wanted[key])
            if value is not None:
                ack[key] = value
    return ack
