"""The Store contract (store/base.py), one suite run against every backend: memory, sqlite, postgresql.

The memory backend is the reference; the SQL backends must give the same answers, and keep them
under concurrency: threads here, processes in test_contract_processes.py.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from mcp_agent_kit.store import Record, Store, StoreError, open_store


def rec(key: str, kind: str = "tasks", **columns: Any) -> Record:
    body = columns.pop("body", {"key": key})
    return Record(kind, key, body, **columns)


# ---- records -------------------------------------------------------------------------------------
def test_insert_is_if_absent_and_sets_version_1(store: Store) -> None:
    assert store.insert(rec("a", owner="alice", group="ctx", state="working", order="0001", version=7,
                            holder="r1", expires=9e9))
    assert not store.insert(rec("a", body={"other": True}))
    got = store.get("tasks", "a")
    assert got == Record("tasks", "a", {"key": "a"}, "alice", "ctx", "working", "0001", 1, "r1", None, 9e9)
    assert store.get("tasks", "missing") is None and store.get("other-kind", "a") is None
    assert store.insert(rec("a", kind="other-kind"))  # kinds are separate namespaces


def test_insert_with_a_lease(store: Store) -> None:
    before = time.time()
    assert store.insert(rec("a", holder="r1"), lease_s=30)
    got = store.get("tasks", "a")
    assert got is not None and got.holder == "r1" and got.lease_until is not None
    assert before + 29 <= got.lease_until <= time.time() + 31


def test_bodies_round_trip_as_json(store: Store) -> None:
    body: dict[str, Any] = {"text": "héllo ✓ \u0000 \n", "n": 12345678901234, "f": 0.5, "ok": True, "none": None,
            "list": [1, {"deep": ["x"]}], "empty": {}}
    assert store.insert(rec("a", body=body))
    got = store.get("tasks", "a")
    assert got is not None and got.body == body and got.body["text"] == "héllo ✓ \u0000 \n"
    store.append("task:a", body)
    assert store.events("task:a") == [(1, body)]


def test_memory_hands_out_the_bodies_it_keeps_without_copying() -> None:
    """Bodies are immutable once written (store.base): the memory backend copies none, in or out."""
    store = open_store("memory:")
    body: dict[str, Any] = {"list": [1]}
    event: dict[str, Any] = {"statusUpdate": {}}
    store.insert(rec("a", body=body))
    got = store.get("tasks", "a")
    assert got is not None and got.body is body and store.query("tasks").records[0].body is body
    changed = store.update(got._replace(body={**body, "n": 1}))
    assert changed is not None and store.get("tasks", "a") == changed and body == {"list": [1]}
    store.append("task:a", event)
    assert store.events("task:a")[0][1] is event


def test_update_replaces_body_and_columns_and_bumps_the_version(store: Store) -> None:
    store.insert(rec("a", state="working", holder="r1", order="1"))
    first = store.get("tasks", "a")
    assert first is not None
    second = store.update(first._replace(body={"done": 1}, state="completed", holder=None, expires=5.0))
    assert second is not None and second.version == 2 and second.state == "completed"
    assert store.get("tasks", "a") == second
    assert store.update(first._replace(body={"stale": 1}), expect_version=1) is None  # lost the race
    third = store.update(second._replace(body={"cas": 1}), expect_version=2)
    assert third is not None and third.version == 3
    got = store.get("tasks", "a")
    assert got is not None and got.body == {"cas": 1} and got.holder is None and got.expires == 5.0
    assert store.update(rec("missing")) is None and store.get("tasks", "missing") is None


def test_delete(store: Store) -> None:
    store.insert(rec("a"))
    assert store.delete("tasks", "a") and not store.delete("tasks", "a") and store.get("tasks", "a") is None


# ---- queries -------------------------------------------------------------------------------------
def fill(store: Store) -> None:
    for i in range(7):
        store.insert(rec(f"t{i}", owner="alice" if i % 2 == 0 else "bob", group=f"ctx{i % 3}",
                         state=["working", "completed", "failed"][i % 3], order=f"{i // 2:04d}"))


def keys(page: Any) -> list[str]:
    return [r.key for r in page.records]


def test_query_sorts_by_order_then_key_descending_and_filters(store: Store) -> None:
    fill(store)
    store.insert(rec("x", kind="other"))
    everything = store.query("tasks")
    assert keys(everything) == ["t6", "t5", "t4", "t3", "t2", "t1", "t0"] and everything.total == 7
    assert keys(store.query("tasks", owner="alice")) == ["t6", "t4", "t2", "t0"]
    assert keys(store.query("tasks", group="ctx0")) == ["t6", "t3", "t0"]
    assert keys(store.query("tasks", owner="bob", group="ctx0")) == ["t3"]
    assert keys(store.query("tasks", states=["completed", "failed"])) == ["t5", "t4", "t2", "t1"]
    assert keys(store.query("tasks", states=[])) == [] and store.query("tasks", states=[]).total == 0
    assert store.query("nothing-here").records == [] and store.query("nothing-here").total == 0


def test_query_pages_with_before_and_total_counts_every_match(store: Store) -> None:
    fill(store)
    seen: list[str] = []
    before = None
    while True:
        page = store.query("tasks", owner="alice", before=before, limit=3)
        assert page.total == 4
        seen += keys(page)
        if len(page.records) < 3:
            break
        last = page.records[-1]
        before = (last.order, last.key)
    assert seen == ["t6", "t4", "t2", "t0"]
    assert store.query("tasks", limit=0).records == [] and store.query("tasks", limit=0).total == 7


def test_query_oldest_first_pages_the_other_way(store: Store) -> None:
    fill(store)
    seen: list[str] = []
    before = None
    while True:
        page = store.query("tasks", owner="alice", before=before, limit=3, oldest_first=True)
        assert page.total == 4
        seen += keys(page)
        if len(page.records) < 3:
            break
        before = (page.records[-1].order, page.records[-1].key)
    assert seen == ["t0", "t2", "t4", "t6"]
    assert keys(store.query("tasks", states=["completed", "failed"], oldest_first=True, limit=2)) == ["t1", "t2"]


def test_order_is_code_point_order(store: Store) -> None:
    for key, order in [("k1", "a"), ("k2", "B"), ("k3", "é"), ("k4", "z"), ("k5", "10"), ("k6", "9"), ("k7", "a ")]:
        store.insert(rec(key, order=order))
    expected = sorted(["a", "B", "é", "z", "10", "9", "a "], reverse=True)
    assert [r.order for r in store.query("tasks").records] == expected


def test_count(store: Store) -> None:
    fill(store)
    assert store.count("tasks") == 7 and store.count("tasks", owner="bob") == 3
    assert store.count("tasks", states=["working"]) == 3 and store.count("tasks", owner="bob", states=["working"]) == 1
    assert store.count("tasks", states=[]) == 0 and store.count("none") == 0
    t0 = store.get("tasks", "t0")
    assert t0 is not None and store.update(t0._replace(owner="bob", state="completed", expires=1.0))
    assert store.count("tasks", owner="bob") == 4 and store.count("tasks", states=["working"]) == 2
    assert store.delete("tasks", "t1") and store.count("tasks", owner="bob", states=["completed"]) == 1
    assert store.purge("tasks", 2.0) == 1 and store.count("tasks") == 5 and store.count("tasks", owner="bob") == 2


# ---- leases and purge ----------------------------------------------------------------------------
def test_renew_extends_only_the_holders_leases(store: Store) -> None:
    store.insert(rec("a", holder="r1", state="working"), lease_s=1)
    store.insert(rec("b", holder="r1", state="working"), lease_s=1)
    store.insert(rec("c", holder="r2", state="working"), lease_s=1)
    assert store.renew("tasks", ["a", "b", "c", "missing"], "r1", 60) == 2
    assert store.renew("tasks", [], "r1", 60) == 0
    leases = {k: store.get("tasks", k).lease_until for k in "abc"}  # type: ignore[union-attr]
    assert leases["a"] > time.time() + 50 and leases["b"] > time.time() + 50  # type: ignore[operator]
    assert leases["c"] < time.time() + 2  # type: ignore[operator]
    assert store.renew("tasks", [f"k{i}" for i in range(1200)], "r1", 60) == 0  # more keys than one batch


def test_lapsed_lists_the_records_whose_lease_ran_out(store: Store) -> None:
    now = time.time()
    store.insert(rec("old", holder="r1", state="working", lease_until=now - 5))
    store.insert(rec("fresh", holder="r1", state="working", lease_until=now + 60))
    store.insert(rec("done", holder="r1", state="completed", lease_until=now - 5))
    store.insert(rec("unleased", state="working"))
    store.insert(rec("other", kind="other", holder="r1", state="working", lease_until=now - 5))
    assert [r.key for r in store.lapsed("tasks", ["working", "input_required"], now)] == ["old"]
    assert sorted(r.key for r in store.lapsed("tasks", ["working", "completed"], now)) == ["done", "old"]
    assert store.lapsed("tasks", [], now) == []
    # The noticing replica fails the task by compare-and-set: only one of two that noticed writes.
    lapsed = store.lapsed("tasks", ["working"], now)[0]
    failed = lapsed._replace(state="failed", holder=None, lease_until=None)
    assert store.update(failed, expect_version=lapsed.version) is not None
    assert store.update(failed, expect_version=lapsed.version) is None


def test_purge_deletes_expired_records_of_one_kind(store: Store) -> None:
    now = time.time()
    store.insert(rec("gone", expires=now - 1))
    store.insert(rec("kept", expires=now + 60))
    store.insert(rec("forever"))
    store.insert(rec("other", kind="other", expires=now - 1))
    assert store.purge("tasks", now) == 1 and store.purge("tasks", now) == 0
    assert store.get("tasks", "gone") is None and store.get("tasks", "kept") is not None
    assert store.get("tasks", "forever") is not None and store.get("other", "other") is not None


# ---- event logs ----------------------------------------------------------------------------------
def test_events_are_numbered_per_channel_from_1(store: Store) -> None:
    assert [store.append("task:a", {"i": i}) for i in range(5)] == [1, 2, 3, 4, 5]
    assert store.append("task:b", {"i": 0}) == 1
    assert store.events("task:a") == [(i + 1, {"i": i}) for i in range(5)]
    assert store.events("task:a", after=3) == [(4, {"i": 3}), (5, {"i": 4})]
    assert store.events("task:a", after=1, limit=2) == [(2, {"i": 1}), (3, {"i": 2})]
    assert store.events("task:a", after=5) == [] and store.events("nothing") == []
    store.drop_events("task:a")
    assert store.events("task:a") == [] and store.events("task:b") == [(1, {"i": 0})]
    assert store.append("task:a", {"again": True}) == 1


# ---- notifications -------------------------------------------------------------------------------
class Heard:
    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self.cond = threading.Condition()

    def __call__(self, channel: str, payload: str) -> None:
        with self.cond:
            self.items.append((channel, payload))
            self.cond.notify_all()

    def wait_for(self, count: int, seconds: float = 10) -> list[tuple[str, str]]:
        with self.cond:
            self.cond.wait_for(lambda: len(self.items) >= count, timeout=seconds)
            return list(self.items)

    def until_heard(self, item: tuple[str, str], seconds: float = 10) -> list[tuple[str, str]]:
        with self.cond:
            self.cond.wait_for(lambda: item in self.items, timeout=seconds)
            return list(self.items)


def test_notify_reaches_this_stores_subscribers_once_until_unsubscribed(store: Store, store_url: str) -> None:
    heard, also = Heard(), Heard()
    stop = store.subscribe(heard)
    store.subscribe(also)
    store.notify("task:a", "answer ✓")
    assert heard.wait_for(1) == [("task:a", "answer ✓")] and also.wait_for(1) == [("task:a", "answer ✓")]
    stop()
    store.notify("task:b")
    # A last one, from another store on the URL where there can be one: it reaches this store the way a
    # duplicate or a late delivery would (the poller, the LISTEN connection), in order, after them.
    other = open_store(store_url) if store.shared else store
    try:
        other.notify("task:end")
        assert also.until_heard(("task:end", "")) == [("task:a", "answer ✓"), ("task:b", ""), ("task:end", "")]
    finally:
        if other is not store:
            other.close()
    assert heard.items == [("task:a", "answer ✓")]


def test_notify_reaches_another_store_on_the_same_url(shared_store: Store, shared_url: str) -> None:
    other = open_store(shared_url)
    try:
        heard = Heard()
        other.subscribe(heard)
        shared_store.notify("task:x", "from another replica")
        assert heard.wait_for(1) == [("task:x", "from another replica")]
    finally:
        other.close()


# ---- concurrency (threads) ----------------------------------------------------------------------
def run_threads(count: int, work: Any) -> list[Any]:
    results: list[Any] = [None] * count
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        barrier.wait(timeout=10)
        results[i] = work(i)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results


def test_one_insert_wins_among_threads(store: Store) -> None:
    wins = run_threads(8, lambda i: store.insert(rec("idem", body={"by": i})))
    assert wins.count(True) == 1
    got = store.get("tasks", "idem")
    assert got is not None and got.body == {"by": wins.index(True)}


def test_compare_and_set_increments_from_threads_lose_none(store: Store) -> None:
    store.insert(rec("counter", body={"n": 0}))

    def bump(_: int) -> None:
        for _ in range(25):
            while True:
                current = store.get("tasks", "counter")
                assert current is not None
                if store.update(current._replace(body={"n": current.body["n"] + 1}),
                                expect_version=current.version) is not None:
                    break
    run_threads(4, bump)
    final = store.get("tasks", "counter")
    assert final is not None and final.body == {"n": 100} and final.version == 101


def test_events_from_concurrent_threads_are_gap_free_and_keep_each_appenders_order(store: Store) -> None:
    seqs = run_threads(4, lambda i: [store.append("task:t", {"by": i, "i": j}) for j in range(25)])
    log = store.events("task:t", limit=1000)
    assert [seq for seq, _ in log] == list(range(1, 101))
    for by in range(4):
        assert [e["i"] for _, e in log if e["by"] == by] == list(range(25))
        assert seqs[by] == sorted(seqs[by])


# ---- the SQL backends ----------------------------------------------------------------------------
def test_a_body_that_is_not_json_is_a_store_error(shared_store: Store) -> None:
    with pytest.raises(StoreError, match="JSON"):
        shared_store.insert(rec("a", body={"bad": {1, 2}}))
    with pytest.raises(StoreError, match="JSON"):
        shared_store.append("task:a", {"nan": float("nan")})
    assert shared_store.get("tasks", "a") is None and shared_store.events("task:a") == []


def test_a_closed_store_refuses_work_and_another_open_sees_its_records(shared_url: str) -> None:
    store = open_store(shared_url)
    assert store.shared
    store.insert(rec("a"))
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get("tasks", "a")
    reopened = open_store(shared_url)
    assert reopened.get("tasks", "a") is not None
    reopened.close()
