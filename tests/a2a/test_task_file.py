"""`a2a --store PATH`: a sqlite file of the older one-process task store is migrated on open.

fixtures/a2a_tasks_v0.db was written by the older a2a.sqlite_store.SqliteTaskStore (the code this
change removed) through a TaskEngine serving examples/metrics_server.py: three finished tasks of the
anonymous principal, one of "alice", one waiting for input, and one row left WORKING as a crash
leaves it. Each test works on its own copy in tmp_path.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.a2a.cli import build_store, parser
from mcp_agent_kit.a2a.engine import TaskEngine
from mcp_agent_kit.a2a.store import KIND, TaskStore
from mcp_agent_kit.a2a.task_file import migrate_old_tasks, open_task_file
from mcp_agent_kit.a2a.toolagent import ToolAgent
from mcp_agent_kit.loader import load_target
from mcp_agent_kit.store.base import StoreError
from tests.a2a.conftest import METRICS, user_message
from tests.net import until

FIXTURE = Path(__file__).parent / "fixtures" / "a2a_tasks_v0.db"


def old_file(tmp_path: Path) -> tuple[Path, dict[str, tuple[str, str, dict[str, Any]]]]:
    """A copy of the fixture, and its rows as the older code wrote them: id -> (owner, state, body)."""
    import json

    path = tmp_path / "tasks.db"
    shutil.copyfile(FIXTURE, path)
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT id, owner, state, body FROM tasks").fetchall()
    return path, {r[0]: (r[1], r[2], json.loads(r[3])) for r in rows}


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_an_old_task_file_is_migrated_on_open_and_serves_on(tmp_path: Path) -> None:
    path, old = old_file(tmp_path)
    assert len(old) == 6 and "legacy_tasks" not in tables(path)
    tasks = build_store(parser().parse_args(["x:y", "--store", str(path)]))
    assert isinstance(tasks, TaskStore) and tasks.store.shared
    engine = TaskEngine(ToolAgent(load_target(METRICS)), tasks)
    try:
        assert {"legacy_tasks", "records"} <= tables(path) and "tasks" not in tables(path)
        with sqlite3.connect(path) as db:  # the old rows are kept, renamed, never dropped
            assert db.execute("SELECT COUNT(*) FROM legacy_tasks").fetchone()[0] == 6
        for task_id, (owner, state, body) in old.items():
            got = engine.get(owner, {"id": task_id})
            if state == "TASK_STATE_WORKING":
                continue
            assert got["status"] == body["status"] and got["history"] == body["history"]
            assert got.get("artifacts") == body.get("artifacts") and got["contextId"] == body["contextId"]
        listed = engine.list_tasks("", {})
        assert listed["totalSize"] == 5 and engine.list_tasks("alice", {})["totalSize"] == 1
        # the task its process was running when it stopped fails, as a restart of the older store did
        until(lambda: engine.get("", {"id": "crashed-mid-run"})["status"]["state"] == "TASK_STATE_FAILED",
              "the crashed task failed")
        waiting = next(i for i, (_, state, _) in old.items() if state == "TASK_STATE_INPUT_REQUIRED")
        reply = user_message({"data": {"values": [7]}}, taskId=waiting)
        done = engine.send("", {"message": reply})
        assert isinstance(done, dict) and done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        engine.close()
    again = open_task_file(str(path), "replica-2", 5.0)  # reopening finds nothing more to migrate
    try:
        assert again.store.count(KIND) == 6
        assert migrate_old_tasks(again.store, str(path)) == 0
    finally:
        again.close()


def test_an_interrupted_migration_copies_again_and_loses_nothing(tmp_path: Path) -> None:
    path, old = old_file(tmp_path)
    first = open_task_file(str(path), "replica-1", 5.0)
    first.close()
    with sqlite3.connect(path) as db:  # as if the process stopped after copying, before the rename
        db.execute("ALTER TABLE legacy_tasks RENAME TO tasks")
        db.execute("DELETE FROM records WHERE key = ?", (next(iter(old)),))
    again = open_task_file(str(path), "replica-1", 5.0)
    try:
        assert again.store.count(KIND) == 6 and "tasks" not in tables(path)
    finally:
        again.close()


def test_a_foreign_tasks_table_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE tasks (id TEXT, title TEXT)")
        db.execute("INSERT INTO tasks VALUES ('1', 'buy milk')")
    with pytest.raises(StoreError, match="not an A2A task table"):
        open_task_file(str(path), "replica-1", 5.0)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT title FROM tasks").fetchall() == [("buy milk",)]
