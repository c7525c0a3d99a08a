"""gateway.agent_store_v0: a session file of the older one-process schema, moved into the store on open.

Before the sessions lived on a `store.Store`, `gateway --sessions FILE` kept them in sqlite tables
of their own: `sessions`, `turns`, `checkpoints`, `turn_events` and `meta` (the secret sealing task
ids). Opening such a file as a store (`sqlite:///FILE`) gives it the store's tables beside the old
ones; `migrate` then moves every row into records and event logs, as gateway.agent_store writes
them (gateway.agent_records; listing order kept, the idempotency keys of sessions and checkpoints
made claims, the secret kept), marks the turns that were working failed (RESTARTED, as the old store did on every open),
and drops the old tables, all in one write transaction: a second open finds nothing to move, a
crash moves nothing. Rules: reads and writes the file through sqlite3 and store.sql's statements
only; knows the old schema and the record shapes of gateway.agent_records, nothing else.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from mcp_agent_kit.gateway.agent_records import (
    CHECKPOINTS,
    META,
    RESTARTED,
    SESSIONS,
    TURNS,
    checkpoint_claim,
    events_of,
    order_at,
    session_claim,
)
from mcp_agent_kit.store import sql
from mcp_agent_kit.store.base import Record, Store, StoreError
from mcp_agent_kit.store.claims import IDEMPOTENCY

OLD_TABLES = ("turn_events", "turns", "checkpoints", "sessions", "meta")
BUSY_S = 10.0
SESSION_FIELDS = ("id", "principal", "agent", "created", "create_key", "seq", "refs")
CHECKPOINT_FIELDS = ("id", "session_id", "principal", "head_task_id", "history_sequence", "refs", "created",
                     "request_id", "snapshot")  # snapshot: None in a file from before snapshots


def migrate(store: Store) -> int:
    """Move an old-schema session file's rows into `store` (a sqlite store, its schema made); how many
    sessions moved (0: nothing of the old schema there). StoreError when the file cannot be read."""
    from mcp_agent_kit.store.sqlite import path_of

    try:
        db = sqlite3.connect(path_of(store.url), isolation_level=None, timeout=BUSY_S)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {store.url}: {exc}") from None
    db.row_factory = sqlite3.Row
    try:
        if not _has(db, "sessions"):  # the cheap check, without the write lock
            return 0
        db.execute("BEGIN IMMEDIATE")
        try:
            moved = _move(db) if _has(db, "sessions") else 0
            db.execute("COMMIT")
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")
        return moved
    except sqlite3.Error as exc:
        raise StoreError(f"{store.url}: migrating the older session tables failed: {exc}") from None
    finally:
        db.close()


def _has(db: sqlite3.Connection, table: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _rows(db: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    if not _has(db, table):
        return []
    return [dict(row) for row in db.execute(f"SELECT rowid AS pos, * FROM {table} ORDER BY rowid")]


def _orders(rows: list[dict[str, Any]]) -> list[str]:
    """Listing orders for rows in their old (rowid) order: their creation time, nudged to stay strictly increasing."""
    orders, last = [], 0
    for row in rows:
        try:
            ns = int(datetime.fromisoformat(str(row["created"]).replace("Z", "+00:00")).timestamp() * 1_000_000) * 1000
        except ValueError:
            ns = last + 1
        last = max(ns, last + 1)
        orders.append(order_at(last))
    return orders


def _move(db: sqlite3.Connection) -> int:
    records: list[Record] = []
    body: dict[str, Any]
    sessions = _rows(db, "sessions")
    for row, order in zip(sessions, _orders(sessions), strict=True):
        body = {k: row.get(k) for k in SESSION_FIELDS}
        records.append(Record(SESSIONS, body["id"], body, owner=body["principal"], group=body["agent"], order=order))
        if body["create_key"] is not None:
            records.append(Record(IDEMPOTENCY, session_claim(body["principal"], body["create_key"]),
                                  {"id": body["id"]}, owner=body["principal"]))
    for row in _rows(db, "turns"):
        body = {k: v for k, v in row.items() if k != "pos"}
        if body["status"] == "working":  # its process died with it, as the old store said on every open
            body.update(status="failed", state="TASK_STATE_FAILED", text=RESTARTED, message=RESTARTED)
        records.append(Record(TURNS, body["id"], body, owner=body["principal"], group=body["session_id"],
                              order=f"{int(body['seq']):010d}", state=body["status"]))
    checkpoints = _rows(db, "checkpoints")
    for row, order in zip(checkpoints, _orders(checkpoints), strict=True):
        body = {k: row.get(k) for k in CHECKPOINT_FIELDS}
        records.append(Record(CHECKPOINTS, body["id"], body, owner=body["principal"], group=body["session_id"],
                              order=order))
        if body["request_id"] is not None:
            records.append(Record(IDEMPOTENCY, checkpoint_claim(body["principal"], body["request_id"]),
                                  {"id": body["id"]}, owner=body["principal"]))
    secret = next((row["value"] for row in _rows(db, "meta") if row["key"] == "secret"), None)
    if secret is not None:
        records.append(Record(META, "secret", {"secret": secret}))
    insert = sql.insert_sql("?", "ON CONFLICT (kind, key) DO NOTHING")
    db.executemany(insert, [sql.insert_params(record, None) for record in records])
    db.executemany("INSERT INTO events (channel, seq, body) VALUES (?, ?, ?)",
                   [(events_of(row["turn_id"]), int(row["seq"]), sql.dumps(json.loads(row["event"])))
                    for row in _rows(db, "turn_events")])
    for table in OLD_TABLES:
        db.execute(f"DROP TABLE IF EXISTS {table}")
    return len(sessions)
