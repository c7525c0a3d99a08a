"""base: the store contract — records that outlive a request, shared by every replica of a server.

A store keeps *records* in named kinds ("mcp_tasks", "legacy_tasks", "a2a_tasks", "agent_sessions",
"legacy_sessions", "idempotency", ...). A record is a JSON object (`body`) plus the few columns the
kit filters and sorts on: `owner` (whose it is; every lookup that a client can reach is scoped to
it), `group` (a contextId, a session: a second filter), `state`, `order` (the listing sort key,
text, newest = greatest), `version` (bumped on every write, for compare-and-set), a lease
(`holder`, `lease_until`: which replica runs the work, until when) and `expires` (when the record
may be purged). Times are wall-clock seconds (`time.time()`), since replicas share no monotonic clock.

Beside records, a store keeps per-channel event logs (`append`/`events`: ordered, gap-free
sequence numbers per channel, for SSE subscribers on any replica) and carries notifications
(`notify`/`subscribe`: best effort, at most once, a wake-up hint only — receivers re-read the
store, and poll as the fallback, so a lost notification costs latency, never correctness).

Bodies are values: a body (or an event) is immutable once written. A caller that changes a record
builds a new body (`{**record.body, "status": ...}`) and writes it, and never mutates a body it
gave to a store or read from one — the memory backend keeps and hands out the very objects it is
given (no copies), the SQL backends copy through JSON.

Rules: standard library only here; backends beyond memory and sqlite import their driver only when
opened; no protocol knowledge (no MCP, A2A or ACP shapes): callers own their bodies; every method
is thread-safe; a backend raises StoreError (never its driver's exceptions) for a refused or
failed operation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol


class StoreError(RuntimeError):
    """The store could not do what was asked (unreachable, corrupt, refused)."""


class Record(NamedTuple):
    """One stored record, as read. `body` is the caller's JSON object; the rest are columns."""

    kind: str
    key: str
    body: dict[str, Any]
    owner: str = ""
    group: str = ""
    state: str = ""
    order: str = ""
    version: int = 1
    holder: str | None = None
    lease_until: float | None = None
    expires: float | None = None


class Page(NamedTuple):
    """One page of a query: records newest `order` first, and the total before paging."""

    records: list[Record]
    total: int


# (channel, payload) -> None. Called on a thread of the store's (or, in memory, the notifier's),
# never under a store lock; a listener must return quickly (set an event, wake a condition).
Listener = Callable[[str, str], None]


class Store(Protocol):
    """What every backend provides. `url` is the URL it was opened with (secrets redacted)."""

    url: str
    shared: bool  # True when other processes may see the same records (sqlite, postgresql)

    # ---- records --------------------------------------------------------------------------
    def insert(self, record: Record, *, lease_s: float | None = None) -> bool:
        """Add `record` (its version is set to 1); False, writing nothing, when (kind, key) exists.
        With `lease_s`, the record is leased to `record.holder` for that long. Insert-if-absent
        is atomic across replicas: it is how idempotency keys make sure work runs once."""

    def get(self, kind: str, key: str) -> Record | None:
        """The record, or None."""

    def update(self, record: Record, *, expect_version: int | None = None) -> Record | None:
        """Replace body and columns of an existing record (version + 1); the new Record, or None
        when it does not exist or, with `expect_version`, when its version is not that one."""

    def delete(self, kind: str, key: str) -> bool:
        """Remove one record; False when there was none."""

    def query(self, kind: str, *, owner: str | None = None, group: str | None = None,
              states: Iterable[str] | None = None, before: tuple[str, str] | None = None,
              limit: int = 100, oldest_first: bool = False) -> Page:
        """Records of `kind` matching every filter given, sorted by (order, key) descending (with
        `oldest_first`, ascending); `before` = the (order, key) of the previous page's last record
        (the page goes on past it in the sort's direction). `total` counts all matches of the
        filters (before `before` and `limit`)."""

    def count(self, kind: str, *, owner: str | None = None, states: Iterable[str] | None = None) -> int:
        """How many records of `kind` match (memory: from counters kept on write, never a scan)."""

    # ---- leases ---------------------------------------------------------------------------
    def renew(self, kind: str, keys: Iterable[str], holder: str, lease_s: float) -> int:
        """Extend the leases `holder` holds on these records to now + lease_s; how many it held."""

    def lapsed(self, kind: str, states: Iterable[str], now: float) -> list[Record]:
        """Records in one of `states` whose lease has run out before `now` (their holder died)."""

    def purge(self, kind: str, now: float) -> int:
        """Delete the records whose `expires` is before `now`; how many went."""

    # ---- event logs -----------------------------------------------------------------------
    def append(self, channel: str, event: dict[str, Any]) -> int:
        """Add an event to the channel's log; its sequence number (1, 2, 3, ... per channel)."""

    def events(self, channel: str, after: int = 0, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        """The channel's events with sequence numbers above `after`, in order."""

    def drop_events(self, channel: str) -> None:
        """Forget a channel's log (its task was purged)."""

    # ---- notifications --------------------------------------------------------------------
    def notify(self, channel: str, payload: str = "") -> None:
        """Wake every subscriber on every replica (this one included) with (channel, payload)."""

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` for every notification from now on; returns the unsubscribe function."""

    def close(self) -> None:
        """Release connections and threads; the store is unusable after."""
