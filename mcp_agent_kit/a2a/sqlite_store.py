"""sqlite_store: a durable TaskStore in one sqlite3 file, so a restart loses no task.

Each task is one row: indexed columns for the listing filters plus the whole task as JSON. Writes
commit at once (WAL journal). Bounded like the memory store: at `max_tasks` the oldest finished
task makes room, at `max_per_owner` the owner's own oldest finished task does, and only
unfinished tasks can make an insert fail; counts are kept in memory (read once at open).
Rules: standard library only; the engine serialises access with its lock, so one connection is
shared across threads.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from mcp_agent_kit.a2a.lifecycle import TERMINAL
from mcp_agent_kit.a2a.store import Query
from mcp_agent_kit.store.base import StoreError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    context_id TEXT NOT NULL,
    state TEXT NOT NULL,
    ts TEXT NOT NULL,
    updated REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_owner_ts ON tasks (owner, ts DESC, id DESC);
CREATE INDEX IF NOT EXISTS tasks_state_updated ON tasks (state, updated);
"""
_TERMINAL = tuple(sorted(TERMINAL))


def _row(task: dict[str, Any]) -> tuple[Any, ...]:
    body = json.dumps(task, ensure_ascii=False, separators=(",", ":"))
    return (
        task["id"],
        task.get("_owner") or "",
        task.get("contextId", ""),
        task["status"]["state"],
        str(task["status"].get("timestamp", "")),
        task["_updated"],
        body,
    )


class SqliteTaskStore:
    """Tasks in sqlite; finished tasks older than `ttl` seconds are purged (None keeps them)."""

    def __init__(
        self, path: str, ttl: float | None = None, max_tasks: int = 100_000, max_per_owner: int = 10_000
    ) -> None:
        if max_tasks < 1 or max_per_owner < 1:
            raise ValueError("max_tasks and max_per_owner must be at least 1")
        self.path = path
        self.ttl = ttl
        self.max_tasks = max_tasks
        self.max_per_owner = max_per_owner
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._last_sweep = 0.0
        self._per_owner: dict[str, int] = {}
        self._recount()

    def _recount(self) -> None:
        rows = self._db.execute("SELECT owner, COUNT(*) FROM tasks GROUP BY owner").fetchall()
        self._per_owner = {str(owner): int(count) for owner, count in rows}

    def insert(self, task: dict[str, Any]) -> None:
        owner = task.get("_owner") or ""
        if self._per_owner.get(owner, 0) >= self.max_per_owner and not self._drop_oldest_finished(owner):
            raise StoreError("this principal has too many unfinished tasks")
        if sum(self._per_owner.values()) >= self.max_tasks and not self._drop_oldest_finished(None):
            raise StoreError("the task store is full of unfinished tasks")
        task["_updated"] = time.time()
        try:
            self._db.execute("INSERT INTO tasks VALUES (?,?,?,?,?,?,?)", _row(task))
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"task {task['id']} already exists") from exc
        self._per_owner[owner] = self._per_owner.get(owner, 0) + 1

    def _drop_oldest_finished(self, owner: str | None) -> bool:
        """Delete the oldest finished task (of `owner`, or of anyone); False when there is none."""
        marks = ",".join("?" * len(_TERMINAL))
        mine, args = ("AND owner = ?", (*_TERMINAL, owner)) if owner is not None else ("", _TERMINAL)
        row = self._db.execute(
            f"SELECT id, owner FROM tasks WHERE state IN ({marks}) {mine} ORDER BY updated LIMIT 1", args
        ).fetchone()
        if row is None:
            return False
        self._db.execute("DELETE FROM tasks WHERE id = ?", (row[0],))
        left = self._per_owner.get(row[1], 1) - 1
        if left > 0:
            self._per_owner[row[1]] = left
        else:
            self._per_owner.pop(row[1], None)
        return True

    def get(self, task_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT body FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            return None
        task: dict[str, Any] = json.loads(row[0])
        return task

    def save(self, task: dict[str, Any]) -> None:
        task["_updated"] = time.time()
        row = _row(task)
        self._db.execute(
            "UPDATE tasks SET owner=?, context_id=?, state=?, ts=?, updated=?, body=? WHERE id=?", (*row[1:], row[0])
        )

    def query(self, query: Query) -> tuple[list[dict[str, Any]], int]:
        self._purge()
        where = ["owner = ?"]
        args: list[Any] = [query.owner or ""]
        if query.context_id is not None:
            where.append("context_id = ?")
            args.append(query.context_id)
        if query.state is not None:
            where.append("state = ?")
            args.append(query.state)
        if query.after is not None:
            where.append("ts > ?")
            args.append(query.after)
        clause = " AND ".join(where)
        total = self._db.execute(f"SELECT COUNT(*) FROM tasks WHERE {clause}", args).fetchone()[0]
        if query.cursor is not None:
            clause += " AND (ts < ? OR (ts = ? AND id < ?))"
            args += [query.cursor[0], query.cursor[0], query.cursor[1]]
        rows = self._db.execute(
            f"SELECT body FROM tasks WHERE {clause} ORDER BY ts DESC, id DESC LIMIT ?", [*args, query.limit]
        ).fetchall()
        return [json.loads(row[0]) for row in rows], int(total)

    def unfinished(self) -> list[dict[str, Any]]:
        marks = ",".join("?" * len(_TERMINAL))
        rows = self._db.execute(f"SELECT body FROM tasks WHERE state NOT IN ({marks})", _TERMINAL).fetchall()
        return [json.loads(row[0]) for row in rows]

    def close(self) -> None:
        self._db.close()

    def _purge(self) -> None:
        now = time.time()
        if self.ttl is None or now - self._last_sweep < min(self.ttl, 60.0):
            return
        self._last_sweep = now
        marks = ",".join("?" * len(_TERMINAL))
        self._db.execute(f"DELETE FROM tasks WHERE updated < ? AND state IN ({marks})", (now - self.ttl, *_TERMINAL))
        self._recount()
