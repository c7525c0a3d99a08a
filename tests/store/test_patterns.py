"""The store patterns written once in store/: the guarded listener fan-out of every backend, the lease
keeper (with an injected clock: no waiting for a lease to run out) and the idempotency claim.

Fan-out: on each backend (memory, sqlite, PostgreSQL when its fixture server runs), a listener that
raises is logged, the listeners after it still hear the notification, and so does the next one: the
delivering thread (the caller's in memory, the poller's in sqlite, the LISTEN thread in PostgreSQL)
lives on. Notifications from another store on the same URL take the delivering thread's path.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from mcp_agent_kit.store import Store, open_store
from mcp_agent_kit.store.base import Record
from mcp_agent_kit.store.claims import IDEMPOTENCY, Claims
from mcp_agent_kit.store.leases import LAPSED, LeaseKeeper
from mcp_agent_kit.store.listeners import Listeners
from mcp_agent_kit.store.memory import MemoryStore
from tests.store.test_contract import Heard


def broken(channel: str, payload: str) -> None:
    raise RuntimeError(f"broken listener on {channel}")


# ---- fan-out ------------------------------------------------------------------------------------------
def test_a_raising_listener_stops_neither_the_others_nor_the_notifier(store: Store, store_url: str,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    before, after = Heard(), Heard()
    store.subscribe(before)
    store.subscribe(broken)
    store.subscribe(after)
    with caplog.at_level(logging.ERROR, logger="mcp_agent_kit.store"):
        store.notify("task:a", "one")  # the caller's thread delivers this one to this store's listeners
        assert after.wait_for(1) == [("task:a", "one")] and before.items == [("task:a", "one")]
        store.notify("task:b", "two")  # the notifier lived on
        assert after.wait_for(2) == [("task:a", "one"), ("task:b", "two")]
        if store.shared:  # the poller / LISTEN thread delivers another store's: it lives on too
            other = open_store(store_url)
            try:
                other.notify("task:c", "three")
                assert after.until_heard(("task:c", "three"))[-1] == ("task:c", "three")
                other.notify("task:d", "four")
                assert after.until_heard(("task:d", "four"))[-1] == ("task:d", "four")
            finally:
                other.close()
    failures = [r for r in caplog.records if "broken listener" in r.getMessage()]
    assert failures and failures[0].levelno == logging.ERROR  # logged, not swallowed
    assert len({r.getMessage() for r in failures}) == len(failures)  # each failure text once


def test_listeners_deliver_in_order_and_stop_when_removed() -> None:
    listeners = Listeners()
    heard: list[str] = []
    remove = listeners.add(lambda channel, payload: heard.append(f"1{channel}"))
    listeners.add(lambda channel, payload: heard.append(f"2{channel}"))
    assert listeners
    listeners.deliver("a", "")
    remove()
    listeners.deliver("b", "")
    assert heard == ["1a", "2a", "2b"]
    listeners.clear()
    listeners.deliver("c", "")
    assert heard == ["1a", "2a", "2b"] and not listeners


def test_a_listener_failing_again_and_again_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    listeners = Listeners()
    listeners.add(broken)
    with caplog.at_level(logging.ERROR, logger="mcp_agent_kit.store"):
        for _ in range(50):
            listeners.deliver("same", "")
        listeners.deliver("other", "")
    assert len([r for r in caplog.records if "broken listener" in r.getMessage()]) == 2


# ---- the lease keeper -----------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_the_keeper_renews_what_is_held_and_hands_on_what_lapsed_elsewhere(store: Store) -> None:
    clock = Clock()
    held = {"mine"}
    handed: list[tuple[str, str]] = []
    for key, holder in (("mine", "r1"), ("theirs", "r2"), ("done", "r2")):
        store.insert(Record("jobs", key, {}, state="done" if key == "done" else "working", holder=holder), lease_s=30)
    keeper = LeaseKeeper(store, "jobs", "r1", 30.0, states=["working"], held=lambda: held,
                         on_lapsed=lambda record, reason: handed.append((record.key, reason)), clock=clock)
    assert keeper.due() and keeper.keep() == 0 and handed == []  # nothing has run out yet
    assert not keeper.due()
    clock.now += 10
    assert keeper.due()
    was = store.get("jobs", "mine")
    assert was is not None and was.lease_until is not None
    clock.now += 100  # far beyond every lease: r2 died; ours is renewed from the store's own clock first
    assert keeper.keep() == 1
    assert handed == [("theirs", LAPSED)]  # a finished one is not handed on, nor is ours
    mine = store.get("jobs", "mine")
    assert mine is not None and mine.lease_until is not None and mine.lease_until >= was.lease_until


def test_a_held_record_past_its_lease_is_not_handed_on(store: Store) -> None:
    """A stall: the keeper's round comes after our lease ran out (the clock says so); ours stays ours."""
    clock = Clock()
    store.insert(Record("jobs", "mine", {}, state="working", holder="r1"), lease_s=1)
    handed: list[Any] = []
    keeper = LeaseKeeper(store, "jobs", "r1", 1.0, states=["working"], held=lambda: ["mine"],
                         on_lapsed=lambda record, reason: handed.append(record), clock=clock)
    clock.now += 3600
    assert keeper.keep() == 0 and handed == []


def test_the_keeper_runs_on_its_own_timer_until_closed() -> None:
    store = MemoryStore()
    store.insert(Record("jobs", "orphan", {}, state="working", holder="dead"), lease_s=0.001)
    handed = threading.Event()
    keeper = LeaseKeeper(store, "jobs", "alive", 0.3, states=["working"], held=list,
                         on_lapsed=lambda record, reason: handed.set()).start()
    try:
        assert handed.wait(10)
    finally:
        keeper.close()
    with pytest.raises(ValueError, match="positive"):
        LeaseKeeper(store, "jobs", "r", 0, states=[], held=list, on_lapsed=lambda record, reason: None)


# ---- the idempotency claim ----------------------------------------------------------------------------------
def test_the_first_claim_wins_and_a_retry_reads_what_it_made(store: Store) -> None:
    claims = Claims(store, ttl_s=60)
    assert claims.claim("a2a:alice:m1", "alice") and not claims.claim("a2a:alice:m1", "alice")
    assert claims.taken("a2a:alice:m1") and not claims.taken("a2a:alice:m2")
    assert claims.outcome("a2a:alice:m1", timeout=0) is None  # claimed, nothing written yet
    claims.resolve("a2a:alice:m1", "alice", {"taskId": "t1"})
    assert claims.outcome("a2a:alice:m1") == {"taskId": "t1"} == claims.earlier("a2a:alice:m1")
    record = store.get(IDEMPOTENCY, "a2a:alice:m1")
    assert record is not None and record.owner == "alice" and record.expires is not None
    claims.release("a2a:alice:m1")
    assert claims.outcome("a2a:alice:m1") is None and claims.claim("a2a:alice:m1", "alice")  # a retry runs afresh


def test_one_claim_wins_among_threads_and_the_others_wait_for_its_result(store: Store) -> None:
    claims = Claims(store)
    wins: list[int] = []
    seen: list[Any] = []
    start = threading.Barrier(6)

    def request(n: int) -> None:
        start.wait()
        if claims.claim("agents:session::k1", "", {"id": f"s{n}"}):
            wins.append(n)
            store.insert(Record("sessions", f"s{n}", {"n": n}))  # what the winner made, written after its claim
        else:
            seen.append(claims.awaited("agents:session::k1", lambda body: store.get("sessions", body["id"])))
    threads = [threading.Thread(target=request, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    (winner,) = wins
    assert len(seen) == 5 and all(r is not None and r.body == {"n": winner} for r in seen)
