"""claims: the one idempotency claim — a retried request runs once across every replica.

A claim is a record of kind IDEMPOTENCY keyed by the caller's own key (its owner, protocol and
request id, e.g. `a2a:<owner>:<messageId>`). The first request to `claim` it inserts it
(insert-if-absent, atomic across replicas) and runs; it may put what it made into the claim's body
then (`claim(..., body)`) or later (`resolve`), or give the key back (`release`) when it was refused
before it ran. A retry finds the claim taken and asks `outcome` (the claim's body once it is not
empty) or `awaited` (what `ready` makes of the body, e.g. the record it names, once there), waiting
(bounded, polling) while that request, maybe on another replica, is still writing it; `earlier`
reads it without waiting. Rules: standard library only; knows no protocol (bodies are the
caller's); `clock` is wall-clock seconds (claims expire by it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from mcp_agent_kit.store.base import Record, Store

IDEMPOTENCY = "idempotency"
WAIT_S = 5.0  # how long a retry waits, by default, for the earlier request to write its result
PAUSE_S = (0.01, 0.2)  # the first and the longest pause between two reads while waiting
T = TypeVar("T")


def _filled(body: dict[str, Any]) -> dict[str, Any] | None:
    return body or None


class Claims:
    """Idempotency claims on one store; a claim made with `ttl_s` expires (is purged) that long after."""

    def __init__(self, store: Store, *, ttl_s: float | None = None, clock: Callable[[], float] = time.time) -> None:
        self.store, self.ttl_s, self.clock = store, ttl_s, clock

    def _expires(self) -> float | None:
        return None if self.ttl_s is None else self.clock() + self.ttl_s

    def claim(self, key: str, owner: str = "", body: dict[str, Any] | None = None) -> bool:
        """True for the first request with this key on any replica (it now holds the claim); False for a retry."""
        return self.store.insert(Record(IDEMPOTENCY, key, dict(body or {}), owner=owner, expires=self._expires()))

    def resolve(self, key: str, owner: str, body: dict[str, Any]) -> None:
        """Record what the claimed request made, for its retries."""
        self.store.update(Record(IDEMPOTENCY, key, body, owner=owner, expires=self._expires()))

    def release(self, key: str) -> None:
        """Give the key back (the request was refused before it ran, or what it made is gone): a retry runs afresh."""
        self.store.delete(IDEMPOTENCY, key)

    def taken(self, key: str) -> bool:
        return self.store.get(IDEMPOTENCY, key) is not None

    def earlier(self, key: str) -> dict[str, Any] | None:
        """The claim's body as it is now (None: not claimed)."""
        record = self.store.get(IDEMPOTENCY, key)
        return None if record is None else record.body

    def outcome(self, key: str, timeout: float = WAIT_S) -> dict[str, Any] | None:
        """The claim's body once the claimant has written one (not empty), waiting (bounded) while it
        is still writing; None when the key is not claimed, or nothing was written in time."""
        return self.awaited(key, _filled, timeout)

    def awaited(self, key: str, ready: Callable[[dict[str, Any]], T | None], timeout: float = WAIT_S) -> T | None:
        """What `ready` makes of the claim's body once it gives something (not None), reading again
        (bounded by `timeout`) while the claimant is still writing; None when the key is not claimed,
        or `ready` found nothing in time."""
        deadline = time.monotonic() + timeout
        pause = PAUSE_S[0]
        while True:
            record = self.store.get(IDEMPOTENCY, key)
            if record is None:
                return None
            found = ready(record.body)
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(pause)
            pause = min(pause * 2, PAUSE_S[1])
