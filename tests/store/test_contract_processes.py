"""The Store contract across processes (sqlite and postgresql): three workers race on one store for real.

Each worker (tests/store/worker.py) is its own interpreter with its own store object; once all are
ready they are released together (tests/together.py), then race: exactly one insert wins, no
compare-and-set increment is lost, appended events are gap-free with each appender's order kept,
and a notification sent by one process reaches a subscriber in another.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcp_agent_kit.store import Record, Store, open_store
from tests.store.test_contract import Heard
from tests.together import release

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def race(url: str, *jobs: list[str]) -> list[object]:
    """Run one worker per job, all released at once when all are ready; their printed results."""
    procs = [subprocess.Popen([sys.executable, "-m", "tests.store.worker", url, *job], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
             for job in jobs]
    release(procs)
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * len(jobs), outputs
    return [json.loads(out) for out, _ in outputs]


def test_exactly_one_insert_wins_among_processes(shared_url: str) -> None:
    wins = race(shared_url, *(["insert", "idem", f"w{i}"] for i in range(3)))
    assert wins.count(True) == 1
    store = open_store(shared_url)
    try:
        got = store.get("race", "idem")
        assert got is not None and got.body == {"winner": f"w{wins.index(True)}"}
    finally:
        store.close()


def test_compare_and_set_increments_from_processes_lose_none(shared_store: Store, shared_url: str) -> None:
    shared_store.insert(Record("race", "counter", {"n": 0}))
    race(shared_url, *(["cas", "counter", "40"] for _ in range(3)))
    final = shared_store.get("race", "counter")
    assert final is not None and final.body == {"n": 120} and final.version == 121


def test_events_from_concurrent_processes_are_gap_free_in_each_appenders_order(shared_store: Store,
                                                                               shared_url: str) -> None:
    seqs = race(shared_url, *(["append", "task:t", f"p{i}", "40"] for i in range(3)))
    log = shared_store.events("task:t", limit=1000)
    assert [seq for seq, _ in log] == list(range(1, 121))
    for i in range(3):
        assert [event["i"] for _, event in log if event["by"] == f"p{i}"] == list(range(40))
        mine = seqs[i]
        assert isinstance(mine, list) and mine == sorted(mine) and len(mine) == 40
    assert sorted(s for got in seqs for s in got) == list(range(1, 121))  # type: ignore[attr-defined]


def test_a_notification_from_another_process_reaches_this_ones_subscriber(shared_store: Store,
                                                                           shared_url: str) -> None:
    heard = Heard()
    shared_store.subscribe(heard)
    race(shared_url, ["notify", "task:mcp_tasks:t1", "cancel"])
    assert heard.wait_for(1) == [("task:mcp_tasks:t1", "cancel")]
