"""memory: the Store contract in one process's memory — the default, and the contract's reference.

Bodies are never copied: a record keeps the body object it is given and every read hands out that
same object (events likewise). A body is immutable once written: a caller that wants to change one
builds a new dict (`{**record.body, "status": ...}`) and writes that, and never mutates a body (or
an event) it read from a store or gave to one. Counts are kept per (kind, owner, state) as records
are written, so `count` costs the number of states asked for, never a scan. Records are indexed by
kind, so a query scans only its own kind.

Rules: one lock around every operation; notifications call the listeners synchronously, after the
lock is released, in the notifier's thread (store.listeners: one that raises is logged and
skipped).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from mcp_agent_kit.store.base import Listener, Page, Record
from mcp_agent_kit.store.listeners import Listeners

CountKey = tuple[str, str | None, str | None]  # (kind, owner or None = any, state or None = any)


class MemoryStore:
    """Records, event logs and notifications for one process (`shared` is False)."""

    shared = False

    def __init__(self, url: str = "memory:") -> None:
        self.url = url
        self._lock = threading.Lock()
        self._kinds: dict[str, dict[str, Record]] = {}
        self._counts: dict[CountKey, int] = {}
        self._logs: dict[str, list[dict[str, Any]]] = {}
        self._listeners = Listeners()

    def _counted(self, record: Record, step: int, states_only: bool = False) -> None:
        """Add (step 1) or remove (step -1) the record from the counts (lock held); `states_only`:
        from the per-state counts only (an update that kept the owner)."""
        counts = self._counts
        kind, owner, state = record.kind, record.owner, record.state
        keys = ((kind, None, state), (kind, owner, state)) if states_only else \
            ((kind, None, None), (kind, owner, None), (kind, None, state), (kind, owner, state))
        for key in keys:
            left = counts.get(key, 0) + step
            if left:
                counts[key] = left
            else:
                del counts[key]

    # ---- records --------------------------------------------------------------------------
    def insert(self, record: Record, *, lease_s: float | None = None) -> bool:
        stored = record
        if lease_s is not None or record.version != 1:
            lease_until = time.time() + lease_s if lease_s is not None else record.lease_until
            stored = record._replace(version=1, lease_until=lease_until)
        with self._lock:
            records = self._kinds.setdefault(record.kind, {})
            if record.key in records:
                return False
            records[record.key] = stored
            self._counted(stored, 1)
        return True

    def get(self, kind: str, key: str) -> Record | None:
        with self._lock:
            records = self._kinds.get(kind)
            return None if records is None else records.get(key)

    def update(self, record: Record, *, expect_version: int | None = None) -> Record | None:
        with self._lock:
            records = self._kinds.get(record.kind)
            old = None if records is None else records.get(record.key)
            if records is None or old is None or (expect_version is not None and old.version != expect_version):
                return None
            new = record if record.version == old.version + 1 else Record._make(
                (*record[:7], old.version + 1, *record[8:]))  # record._replace(version=...), only faster
            records[record.key] = new
            if old.owner != new.owner:
                self._counted(old, -1)
                self._counted(new, 1)
            elif old.state != new.state:
                self._counted(old, -1, states_only=True)
                self._counted(new, 1, states_only=True)
        return new

    def delete(self, kind: str, key: str) -> bool:
        with self._lock:
            old = self._kinds.get(kind, {}).pop(key, None)
            if old is not None:
                self._counted(old, -1)
        return old is not None

    def query(self, kind: str, *, owner: str | None = None, group: str | None = None,
              states: Iterable[str] | None = None, before: tuple[str, str] | None = None,
              limit: int = 100, oldest_first: bool = False) -> Page:
        wanted = None if states is None else frozenset(states)
        with self._lock:
            found = [r for r in self._kinds.get(kind, {}).values()
                     if (owner is None or r.owner == owner) and (group is None or r.group == group)
                     and (wanted is None or r.state in wanted)]
        total = len(found)
        if before is not None:
            found = [r for r in found if ((r.order, r.key) > before if oldest_first else (r.order, r.key) < before)]
        take = max(0, limit)
        if oldest_first:
            page = heapq.nsmallest(take, found, key=lambda r: (r.order, r.key))
        else:
            page = heapq.nlargest(take, found, key=lambda r: (r.order, r.key))
        return Page(page, total)

    def count(self, kind: str, *, owner: str | None = None, states: Iterable[str] | None = None) -> int:
        with self._lock:
            if states is None:
                return self._counts.get((kind, owner, None), 0)
            return sum(self._counts.get((kind, owner, state), 0) for state in set(states))

    # ---- leases ---------------------------------------------------------------------------
    def renew(self, kind: str, keys: Iterable[str], holder: str, lease_s: float) -> int:
        until = time.time() + lease_s
        renewed = 0
        with self._lock:
            records = self._kinds.get(kind, {})
            for key in keys:
                old = records.get(key)
                if old is not None and old.holder == holder:
                    records[key] = old._replace(lease_until=until)
                    renewed += 1
        return renewed

    def lapsed(self, kind: str, states: Iterable[str], now: float) -> list[Record]:
        wanted = frozenset(states)
        with self._lock:
            return [r for r in self._kinds.get(kind, {}).values()
                    if r.state in wanted and r.lease_until is not None and r.lease_until < now]

    def purge(self, kind: str, now: float) -> int:
        with self._lock:
            records = self._kinds.get(kind, {})
            gone = [k for k, r in records.items() if r.expires is not None and r.expires < now]
            for key in gone:
                self._counted(records.pop(key), -1)
        return len(gone)

    # ---- event logs -----------------------------------------------------------------------
    def append(self, channel: str, event: dict[str, Any]) -> int:
        with self._lock:
            log = self._logs.setdefault(channel, [])
            log.append(event)
            return len(log)

    def events(self, channel: str, after: int = 0, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        with self._lock:
            log = self._logs.get(channel, [])
            start = max(0, after)
            return [(start + i + 1, e) for i, e in enumerate(log[start:start + max(0, limit)])]

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
            self._kinds.clear()
            self._counts.clear()
            self._logs.clear()
        self._listeners.clear()
