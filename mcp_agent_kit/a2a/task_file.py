"""task_file: `a2a --store PATH`, the older spelling of `--store sqlite:///PATH`, and its migration.

A file written by the older one-process sqlite task store keeps its tasks in a table `tasks` (id,
owner, context_id, state, ts, updated, body: the task as JSON). On open that table is copied into
the store's records (kind a2a_tasks, as a2a.store writes them), the copy is verified (every
old id is there), and only then is the old table renamed `legacy_tasks`: no task is ever lost, and
an open interrupted half-way simply copies again (inserting is insert-if-absent). A task the old
process was running when it stopped is copied with a lease that has already run out, so the
engine fails it at once, as the older store did at a restart. Finished tasks are kept for ever,
within the older store's caps (a2a.store.SHARED_MAX_TASKS, SHARED_MAX_PER_OWNER). Rules: standard
library only; no protocol errors, only StoreError.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

from mcp_agent_kit.a2a.lifecycle import INTERRUPTED, TERMINAL
from mcp_agent_kit.a2a.store import KIND, SHARED_MAX_PER_OWNER, SHARED_MAX_TASKS, TaskStore
from mcp_agent_kit.store.base import Record, Store, StoreError

OLD_TABLE, RENAMED = "tasks", "legacy_tasks"
OLD_COLUMNS = ("id", "owner", "context_id", "state", "ts", "updated", "body")


def open_task_file(path: str, replica: str, lease_s: float) -> TaskStore:
    """The task repository over `sqlite:///PATH`, the older file's tasks migrated first."""
    from mcp_agent_kit.store.sqlite import SqliteStore

    store = SqliteStore(f"sqlite:///{os.path.abspath(path)}")
    try:
        migrate_old_tasks(store, path)
    except BaseException:
        store.close()
        raise
    return TaskStore(store, replica, lease_s, ttl=None, max_tasks=SHARED_MAX_TASKS,
                     max_per_owner=SHARED_MAX_PER_OWNER)


def _old_rows(db: sqlite3.Connection) -> list[tuple[Any, ...]] | None:
    """The older table's rows, or None when the file has no such table (new or already migrated)."""
    columns = tuple(row[1] for row in db.execute(f"PRAGMA table_info({OLD_TABLE})"))
    if not columns:
        return None
    if columns != OLD_COLUMNS:
        raise StoreError(f"the table {OLD_TABLE!r} is not an A2A task table (columns {', '.join(columns)}); "
                         "give another --store file")
    return db.execute(f"SELECT {', '.join(OLD_COLUMNS)} FROM {OLD_TABLE}").fetchall()


def _record(row: tuple[Any, ...]) -> Record:
    task_id, owner, context_id, state, ts, _updated, body = row
    task = json.loads(body)
    running = state not in TERMINAL and state not in INTERRUPTED  # its process stopped: fail it at once
    return Record(KIND, str(task_id), task, owner=str(owner), group=str(context_id), state=str(state),
                  order=str(ts), holder="stopped-process" if running else None, lease_until=0.0 if running else None)


def migrate_old_tasks(store: Store, path: str) -> int:
    """Copy the older table's tasks into `store`, verify, rename the table; how many were copied."""
    db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
    try:
        rows = _old_rows(db)
        if rows is None:
            return 0
        copied = sum(1 for row in rows if store.insert(_record(row)))
        missing = [row[0] for row in rows if store.get(KIND, str(row[0])) is None]
        if missing:
            raise StoreError(f"migrating {path}: {len(missing)} of {len(rows)} tasks did not copy (first: "
                             f"{missing[0]}); the old table is left as it was")
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (RENAMED,)).fetchone() is not None:
            raise StoreError(f"migrating {path}: both {OLD_TABLE!r} and {RENAMED!r} exist; rename one by hand")
        db.execute(f"ALTER TABLE {OLD_TABLE} RENAME TO {RENAMED}")
        return copied
    except sqlite3.Error as exc:
        raise StoreError(f"migrating {path}: {exc}") from None
    finally:
        db.close()
