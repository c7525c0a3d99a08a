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
            if not self.due():
                continue
            try:
                self.keep()
            except (StoreError, OSError) as exc:
                log.warning("%s: keeping the %s leases failed (will retry): %s", self.name, self.kind, exc)
            except Exception:  # a bug in one owner's callback must not end the renewals
                log.exception("%s: keeping the %s leases", self.name, self.kind)

    def close(self) -> None:
        self._closed.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)
