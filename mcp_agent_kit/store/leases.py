"""leases: the one lease keeper — a replica renews the leases it holds and hands on the records whose holder died.

A replica that runs a piece of work (an MCP task, an A2A task, a gateway agent turn) holds a lease
on its record (`Store.insert(..., lease_s=)`, `holder` = the replica). A LeaseKeeper, one per kind
and replica, does the rest in rounds (`keep`): it renews the leases of the keys `held()` names
(`Store.renew`), then reads the records of the kind in one of `states` whose lease ran out before
`clock()` (`Store.lapsed`) and hands each one not held here to `on_lapsed(record, LAPSED)`: the
owner ends it (compare-and-set, so when several replicas notice, the first write wins). LAPSED is
the one text every owner shows for such an end. Rounds run either on the keeper's own timer
(`start`: every `period`, a third of the lease at most) or from the owner's loop (`due` tells when
one is due, for owners whose thread does more than leases). Rules: standard library only; knows
no protocol; a failed round (StoreError, OSError) is logged and retried on the next one; `clock`
is wall-clock seconds, as the store's leases (injectable for tests).

SoleLease is the other kind: one record (`kind`, `key`) that at most one replica holds at a time, for
work only one replica may do (the board's scheduler). Each round (`keep`, on its own timer) the holder
renews it (a renewal that finds another holder means it was lost: a stall longer than the lease) and
any other replica takes it when it is free, released, or lapsed (insert-if-absent, or a compare-and-set
on the version it read, so of several only one wins). `on_change(held)` hears each gain and loss;
`close` releases it (and notifies `kind` with the key) so another replica takes over at once; `wake`
runs a round now (a notification that it was released).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable

from mcp_agent_kit.store.base import Record, Store, StoreError

log = logging.getLogger("mcp_agent_kit.store")
LAPSED = "the replica running this task stopped (lease expired)"
MAX_PERIOD_S = 1.0  # the longest between two rounds, whatever the lease



def keep_logged(keep: Callable[[], object], name: str, what: str) -> None:
    """One renewal round on a timer thread: a store or network failure is logged and retried next round, and
    a bug in an owner's callback is logged too (the renewals must not end)."""
    try:
        keep()
    except (StoreError, OSError) as exc:
        log.warning("%s: keeping the %s failed (will retry): %s", name, what, exc)
    except Exception:
        log.exception("%s: keeping the %s", name, what)

class LeaseKeeper:
    """The leases `replica` holds on records of `kind`, renewed in rounds; lapsed ones go to `on_lapsed`."""

    def __init__(self, store: Store, kind: str, replica: str, lease_s: float, *, states: Iterable[str],
                 held: Callable[[], Collection[str]], on_lapsed: Callable[[Record, str], None],
                 clock: Callable[[], float] = time.time, name: str = "store-leases") -> None:
        if lease_s <= 0:
            raise ValueError("the store lease must be positive")
        self.store, self.kind, self.replica, self.lease_s = store, kind, replica, lease_s
        self.states = tuple(states)
        self.held, self.on_lapsed, self.clock, self.name = held, on_lapsed, clock, name
        self.period = min(MAX_PERIOD_S, lease_s / 3)
        self._next = 0.0  # the clock() when the next round is due
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def due(self) -> bool:
        """Is a round due (a third of the lease since the last one)?"""
        return self.clock() >= self._next

    def keep(self) -> int:
        """One round: renew what is held here, hand on what lapsed elsewhere; how many were handed on.
        StoreError and OSError reach the caller (the timer logs them and tries again)."""
        now = self.clock()
        self._next = now + self.lease_s / 3
        held = set(self.held())
        if held:
            self.store.renew(self.kind, held, self.replica, self.lease_s)
        handed = 0
        for record in self.store.lapsed(self.kind, self.states, now):
            if record.key in held:
                continue  # ours, renewed late (a stall): the renewal above has extended it
            self.on_lapsed(record, LAPSED)
            handed += 1
        return handed

    def start(self) -> LeaseKeeper:
        """Run a round every `period` on a thread of its own until `close`."""
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._closed.wait(self.period):
            if self.due():
                keep_logged(self.keep, self.name, f"{self.kind} leases")

    def close(self) -> None:
        self._closed.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)


class SoleLease:
    """The lease `replica` may hold on the one record (kind, key): at most one replica at a time (see above)."""

    def __init__(self, store: Store, kind: str, key: str, replica: str, lease_s: float, *,
                 on_change: Callable[[bool], None] | None = None, clock: Callable[[], float] = time.time,
                 name: str = "store-sole-lease") -> None:
        if lease_s <= 0:
            raise ValueError("the store lease must be positive")
        self.store, self.kind, self.key, self.replica, self.lease_s = store, kind, key, replica, lease_s
        self.on_change, self.clock, self.name = on_change, clock, name
        self.period = min(MAX_PERIOD_S, lease_s / 3)
        self._held = False
        self._lock = threading.Lock()  # one round at a time
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def held(self) -> bool:
        """Does this replica hold it (as of the last round)?"""
        return self._held

    def keep(self) -> bool:
        """One round: renew it when held, else take it when free or lapsed; whether it is held now.
        StoreError and OSError reach the caller (the timer logs them and tries again)."""
        with self._lock:
            if self._closed.is_set():
                return False
            won = self._held and self.store.renew(self.kind, [self.key], self.replica, self.lease_s) == 1
            if not won:
                won = self._take()
            self._set(won)
            return won

    def _take(self) -> bool:
        now = self.clock()
        body = {"holder": self.replica, "since": now}
        record = self.store.get(self.kind, self.key)
        if record is None:
            return self.store.insert(Record(self.kind, self.key, body, state="held", holder=self.replica),
                                     lease_s=self.lease_s)
        free = record.holder in (None, self.replica) or record.lease_until is None or record.lease_until < now
        if not free:
            return False
        taken = record._replace(body=body, state="held", holder=self.replica, lease_until=now + self.lease_s)
        return self.store.update(taken, expect_version=record.version) is not None

    def _set(self, held: bool) -> None:
        changed, self._held = held != self._held, held
        if changed:
            log.info("%s: %s %s the %s lease", self.name, self.replica, "holds" if held else "lost", self.kind)
            if self.on_change is not None:
                self.on_change(held)

    def start(self) -> SoleLease:
        """Run a round every `period` (and on `wake`) on a thread of its own until `close`."""
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._closed.is_set():
            self._wake.wait(self.period)
            self._wake.clear()
            keep_logged(self.keep, self.name, f"{self.kind} lease")

    def close(self) -> None:
        """Stop the rounds and release the lease when held (another replica may take it at once)."""
        self._closed.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)
        with self._lock:
            if not self._held:
                return
            self._held = False
            try:
                record = self.store.get(self.kind, self.key)
                if record is not None and record.holder == self.replica:
                    released = record._replace(holder=None, lease_until=None, state="free")
                    if self.store.update(released, expect_version=record.version) is not None:
                        self.store.notify(self.kind, self.key)
            except (StoreError, OSError) as exc:  # it lapses by itself then
                log.warning("%s: releasing the %s lease failed: %s", self.name, self.kind, exc)
