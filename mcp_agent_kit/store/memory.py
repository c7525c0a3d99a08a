"""memory: the Store contract in one process's memory — the default, and the contract's reference.

Rules: one lock around every operation; bodies are deep-copied in and out (a caller mutating what
it got never changes the store, as with the durable backends); notifications call the listeners
synchronously, after the lock is released, in the notifier's thread (store.listeners: one that raises
is logged and skipped).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from mcp_agent_kit.store.base import Listener, Page, Record
from mcp_agent_kit.store.listeners import Listeners


class MemoryStore:
    """Records, event logs and notifications for one process (`shared` is False)."""

    shared = False

    def __init__(self, url: str = "memory:") -> None:
        self.url = url
        self._lock = threading.Lock()
        self._records: dict[tuple[str, str], Record] = {}
        self._logs: dict[str, list[dict[str, Any]]] = {}
        self._listeners = Listeners()

    # ---- records --------------------------------------------------------------------------
    def insert(self, record: Record, *, lease_s: float | None = None) -> bool:
        lease_until = time.time() + lease_s if lease_s is not None else record.lease_until
        stored = record._replace(body=copy.deepcopy(record.body), version=1, lease_until=lease_until)
        with self._lock:
            if (record.kind, record.key) in self._records:
                return False
            self._records[record.kind, record.key] = stored
        return True

    def get(self, kind: str, key: str) -> Record | None:
        with self._lock:
            found = self._records.get((kind, key))
        return None if found is None else found._replace(body=copy.deepcopy(found.body))

    def update(self, record: Record, *, expect_version: int | None = None) -> Record | None:
        body = copy.deepcopy(record.body)
        with self._lock:
            old = self._records.get((record.kind, record.key))
            if old is None or (expect_version is not None and old.version != expect_version):
                return None
            new = record._replace(body=body, version=old.version + 1)
            self._records[record.kind, record.key] = new
        return new._replace(body=copy.deepcopy(body))

    def delete(self, kind: str, key: str) -> bool:
        with self._lock:
            return self._records.pop((kind, key), None) is not None

    def query(self, kind: str, *, owner: str | None = None, group: str | None = None,
              states: Iterable[str] | None = None, before: tuple[str, str] | None = None,
              limit: int = 100) -> Page:
        wanted = None if states is None else frozenset(states)
        with self._lock:
            found = [r for r in self._records.values() if r.kind == kind
                     and (owner is None or r.owner == owner) and (group is None or r.group == group)
                     and (wanted is None or r.state in wanted)]
        found.sort(key=lambda r: (r.order, r.key), reverse=True)
        total = len(found)
        if before is not None:
            found = [r for r in found if (r.order, r.key) < before]
        return Page([r._replace(body=copy.deepcopy(r.body)) for r in found[:max(0, limit)]], total)

    def count(self, kind: str, *, owner: str | None = None, states: Iterable[str] | None = None) -> int:
        wanted = None if states is None else frozenset(states)
        with self._lock:
            return sum(1 for r in self._records.values() if r.kind == kind
                       and (owner is None or r.owner == owner) and (wanted is None or r.state in wanted))

    # ---- leases ---------------------------------------------------------------------------
    def renew(self, kind: str, keys: Iterable[str], holder: str, lease_s: float) -> int:
        until = time.time() + lease_s
        renewed = 0
        with self._lock:
            for key in keys:
                old = self._records.get((kind, key))
                if old is not None and old.holder == holder:
                    self._records[kind, key] = old._replace(lease_until=until)
                    renewed += 1
        return renewed

    def lapsed(self, kind: str, states: Iterable[str], now: float) -> list[Record]:
        wanted = frozenset(states)
        with self._lock:
            return [r._replace(body=copy.deepcopy(r.body)) for r in self._records.values()
                    if r.kind == kind and r.state in wanted and r.lease_until is not None and r.lease_until < now]

    def purge(self, kind: str, now: float) -> int:
        with self._lock:
            gone = [k for k, r in self._records.items() if k[0] == kind and r.expires is not None and r.expires < now]
            for k in gone:
                del self._records[k]
        return len(gone)

    # ---- event logs -----------------------------------------------------------------------
    def append(self, channel: str, event: dict[str, Any]) -> int:
        with self._lock:
            log = self._logs.setdefault(channel, [])
            log.append(copy.deepcopy(event))
            return len(log)

    def events(self, channel: str, after: int = 0, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        with self._lock:
            log = self._logs.get(channel, [])
            start = max(0, after)
            return [(start + i + 1, copy.deepcopy(e)) for i, e in enumerate(log[start:start + max(0, limit)])]

    def drop_events(self, channel: str) -> None:
        with self._lock:
            self._logs.pop(channel, None)

    # ---- notifications --------------------------------------------------------------------
    def notify(self, channel: str, payload: str = "") -> None:
        self._listeners.deliver(channel, payload)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.add(listener)

    def close(self) -> None:
        with self._lock:
            self._records.clear()
            self._logs.clear()
        self._listeners.clear()
