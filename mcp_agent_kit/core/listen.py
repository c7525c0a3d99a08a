"""listen: `subscriptions/listen` — a long-lived request that streams list-changed and
resource-updated notifications to one subscriber (digest §4.4).

The handler acknowledges the subset of notifications it honours, then forwards registry
changes (and task status pushes from core.tasks) tagged with the subscription id until the
client goes away (HTTP: stream closed; stdio: notifications/cancelled) or the server closes.
Rules: sans-IO — it talks only to the request's Outbox and cancel flag; a transport calls
`install(dispatcher)` to offer it and `close(dispatcher)` on shutdown.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core import methods
from mcp_agent_kit.core.dispatcher import MODERN, Dispatcher
from mcp_agent_kit.core.methods import Call
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError

HEARTBEAT_S = 15.0
POLL_S = 0.25
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

    def __init__(self, id_: Any, principal: str | None) -> None:
        self.id = id_
        self.principal = principal
        self.kinds: set[str] = set()
        self.uris: set[str] = set()
        self.task_ids: set[str] = set()
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue()

    def send(self, method: str, params: dict[str, Any] | None = None) -> None:
        body = dict(params or {})
        body["_meta"] = {**(body.get("_meta") or {}), mcp.META_SUBSCRIPTION_ID: self.id}
        self.queue.put(jsonrpc.notification(method, body))


class Hub:
    """The open subscriptions of one dispatcher."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.closing = threading.Event()
        self._subs: list[Subscription] = []
        self._lock = threading.Lock()
        self._unsubscribe = dispatcher.registry.on_change(self._changed)
        # Extra acknowledgement fields contributed by other modules (e.g. tasks: taskIds).
        self.extras: dict[str, Callable[[Call, Subscription, Any], Any]] = {}

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

    def close(self) -> None:
        self.closing.set()
        self._unsubscribe()

    def _changed(self, kind: str, uri: str | None) -> None:
        for sub in self.subscribers():
            if uri is None and kind in sub.kinds:
                flag = next(f for f, (kinds, _, _) in LIST_FLAGS.items() if kind in kinds)
                sub.send(LIST_FLAGS[flag][2])
            elif uri is not None and uri in sub.uris:
                sub.send("notifications/resources/updated", {"uri": uri})


_hubs: weakref.WeakKeyDictionary[Dispatcher, Hub] = weakref.WeakKeyDictionary()
_hubs_lock = threading.Lock()


def hub(dispatcher: Dispatcher) -> Hub | None:
    return _hubs.get(dispatcher)


def install(dispatcher: Dispatcher) -> Hub:
    """Offer subscriptions/listen on this dispatcher (idempotent)."""
    with _hubs_lock:
        found = _hubs.get(dispatcher)
        if found is None or found.closing.is_set():
            found = Hub(dispatcher)
            _hubs[dispatcher] = found
        dispatcher.features.add("listen")
    methods.METHODS.setdefault("subscriptions/listen", methods.Method(subscriptions_listen, frozenset({MODERN})))
    return found


def close(dispatcher: Dispatcher) -> None:
    """End every open listen with its final result (server shutdown)."""
    with _hubs_lock:
        found = _hubs.pop(dispatcher, None)
    if found is not None:
        found.close()


def _honoured(call: Call, wanted: dict[str, Any], sub: Subscription, extras: Hub) -> dict[str, Any]:
    offered = call.dispatcher.capabilities(MODERN)
    ack: dict[str, Any] = {}
    for flag, (kinds, capability, _) in LIST_FLAGS.items():
        if wanted.get(flag) is True and capability in offered:
            ack[flag] = True
            sub.kinds.update(kinds)
    uris = wanted.get("resourceSubscriptions")
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise RpcError(INVALID_PARAMS, 'Invalid params: "resourceSubscriptions" must be an array of strings')
        if offered.get("resources", {}).get("subscribe"):
            sub.uris.update(uris)
            ack["resourceSubscriptions"] = list(uris)
    for key, contribute in extras.extras.items():
        if key in wanted:
            value = contribute(call, sub, wanted[key])
            if value is not None:
                ack[key] = value
    return ack


def subscriptions_listen(call: Call) -> dict[str, Any]:
    found = hub(call.dispatcher)
    if found is None or "listen" not in call.dispatcher.features or call.out is None:
        raise RpcError(METHOD_NOT_FOUND, "Method not found: subscriptions/listen")
    wanted = call.params.get("notifications")
    if not isinstance(wanted, dict):
        raise RpcError(INVALID_PARAMS, 'Invalid params: subscriptions/listen needs a "notifications" object')
    sub = Subscription(call.id, call.conn.principal)
    ack = _honoured(call, wanted, sub, found)
    found.add(sub)
    out = call.out
    heartbeat = getattr(out, "heartbeat", None)
    cancel = call.cancel or threading.Event()
    try:
        sub.send("notifications/subscriptions/acknowledged", {"notifications": ack})
        idle = 0.0
        while not (cancel.is_set() or found.closing.is_set()):
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
        found.remove(sub)
    return {"_meta": {mcp.META_SUBSCRIPTION_ID: call.id}}
