"""gateway.agent_sessions: the durable record of agent sessions, turns and checkpoints (sqlite).

A session belongs to one principal and one agent; its turns are numbered in order (`seq`), each
with its MCP status, the agent's state and text, and (while paused) the pending question; a
checkpoint pins a session at one finished turn. A turn's stream (its reply as it came, piece by piece,
and its status lines) is its event log: rows appended with gap-free sequence numbers (1, 2, ...), read
back from any number; the turn's own row is written on state changes only. Creating calls are idempotent by key (a
session-creating `message_id`, a checkpoint's or fork's `request_id`), per principal. The store
also keeps the secret that seals task ids, so ids survive a restart. On open, a turn that was
`working` when the process died is marked failed (a paused turn keeps its question: the agent
still holds it). Rules: plain rows in and out; every lookup is scoped to the principal; one
connection behind one lock; the file is created owner-only; at most `max_sessions` sessions per
principal and `max_turns` turns per session (StoreFull beyond). `sweep` deletes sessions (their turns and
turn events, checkpoints and idempotency keys) last used before a cutoff, never one with a working turn.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import uuid
from collections.abc import Callable, Collection
from typing import Any

from mcp_agent_kit.core.task_table import now

MAX_SESSIONS_PER_PRINCIPAL = 10_000
MAX_TURNS_PER_SESSION = 10_000


class StoreFull(Exception):
    """A per-principal or per-session limit is reached (the caller sees it as a tool error)."""


RESTARTED = "the gateway restarted while this turn was running; its outcome is unknown"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
  id TEXT PRIMARY KEY, principal TEXT NOT NULL, agent TEXT NOT NULL, created TEXT NOT NULL,
  create_key TEXT, seq INTEGER NOT NULL DEFAULT 0, refs TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS sessions_key ON sessions(principal, create_key);
CREATE TABLE IF NOT EXISTS turns(
  id TEXT PRIMARY KEY, session_id TEXT NOT NULL, principal TEXT NOT NULL, seq INTEGER NOT NULL,
  message_id TEXT NOT NULL, agent_task_id TEXT NOT NULL DEFAULT '', status TEXT NOT NULL,
  state TEXT NOT NULL, text TEXT NOT NULL DEFAULT '', message TEXT NOT NULL DEFAULT '',
  question TEXT, created TEXT NOT NULL, updated TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS turns_session ON turns(session_id, seq);
CREATE TABLE IF NOT EXISTS checkpoints(
  id TEXT PRIMARY KEY, session_id TEXT NOT NULL, principal TEXT NOT NULL, head_task_id TEXT NOT NULL,
  history_sequence INTEGER NOT NULL, refs TEXT NOT NULL, created TEXT NOT NULL, request_id TEXT, snapshot TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS checkpoints_key ON checkpoints(principal, request_id);
CREATE TABLE IF NOT EXISTS turn_events(
  turn_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY(turn_id, seq));
"""


def _principal(principal: str | None) -> str:
    return principal or ""


class SessionStore:
    """Sessions, turns and checkpoints in one sqlite file (":memory:" for a store that ends with the process)."""

    def __init__(self, path: str = ":memory:", *, max_sessions: int = MAX_SESSIONS_PER_PRINCIPAL,
                 max_turns: int = MAX_TURNS_PER_SESSION) -> None:
        self.max_sessions = max_sessions
        self.max_turns = max_turns
        if path != ":memory:" and not os.path.exists(path):
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        self._closed = False
        with self._lock:
            if path != ":memory:":  # a write-ahead log: a turn's few writes cost no fsync each, and stay durable
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            if "snapshot" not in {row[1] for row in self._db.execute("PRAGMA table_info(checkpoints)")}:
                self._db.execute("ALTER TABLE checkpoints ADD COLUMN snapshot TEXT")  # a file from before snapshots
            self._db.execute("UPDATE turns SET status='failed', state='TASK_STATE_FAILED', text=?, message=?, "
                             "updated=? WHERE status='working'", (RESTARTED, RESTARTED, now()))
            found = self._db.execute("SELECT value FROM meta WHERE key='secret'").fetchone()
            if found is None:
                found = (secrets.token_hex(32),)
                self._db.execute("INSERT INTO meta VALUES('secret', ?)", found)
        self.secret = bytes.fromhex(found[0])

    def close(self) -> None:
        """Close the file; a turn still running then finds its writes dropped (it reads as failed on the next open)."""
        with self._lock:
            self._closed = True
            self._db.close()

    def _one(self, sql: str, args: tuple[Any, ...]) -> dict[str, Any] | None:
        with self._lock:
            if self._closed:
                return None
            row = self._db.execute(sql, args).fetchone()
        return dict(row) if row is not None else None

    def _all(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self._lock:
            if self._closed:
                return []
            return [dict(row) for row in self._db.execute(sql, args).fetchall()]

    # ---- sessions ------------------------------------------------------------------------------------
    def create_session(self, principal: str | None, agent: str, make_id: Callable[[], str], create_key: str | None,
                       refs: list[str] | None = None) -> tuple[dict[str, Any], bool]:
        """(the session, True) — or (the one made earlier under create_key, False; make_id is not called)."""
        owner = _principal(principal)
        if create_key is not None:
            row = self._one("SELECT * FROM sessions WHERE principal=? AND create_key=?", (owner, create_key))
            if row is not None:
                return row, False
        counted = self._one("SELECT COUNT(*) AS n FROM sessions WHERE principal=?", (owner,))
        if counted is not None and counted["n"] >= self.max_sessions:
            raise StoreFull(f"you have {counted['n']} sessions, the most this gateway keeps per caller")
        session_id = make_id()
        with self._lock:
            try:
                self._db.execute("INSERT INTO sessions(id, principal, agent, created, create_key, refs) "
                                 "VALUES(?,?,?,?,?,?)", (session_id, owner, agent, now(), create_key,
                                                         json.dumps(refs) if refs else None))
            except sqlite3.IntegrityError:  # a concurrent retry with the same key won the race
                row = self._db.execute("SELECT * FROM sessions WHERE principal=? AND create_key=?",
                                       (owner, create_key)).fetchone()
                return dict(row), False
            row = self._db.execute("SELECT * FROM sessions WHERE id=?", (session_id,)).fetchone()
        return dict(row), True

    def session(self, session_id: Any, principal: str | None) -> dict[str, Any] | None:
        if not isinstance(session_id, str):
            return None
        return self._one("SELECT * FROM sessions WHERE id=? AND principal=?", (session_id, _principal(principal)))

    def session_any(self, session_id: str) -> dict[str, Any] | None:
        """A session whoever owns it (for the gateway's own bookkeeping, never for a caller's lookup)."""
        return self._one("SELECT * FROM sessions WHERE id=?", (session_id,))

    def head(self, session_id: str) -> dict[str, Any] | None:
        """The session's latest turn."""
        return self._one("SELECT * FROM turns WHERE session_id=? ORDER BY seq DESC LIMIT 1", (session_id,))

    def sessions(self, principal: str | None, after: str, limit: int) -> list[dict[str, Any]]:
        """The principal's sessions (filtered before the page is cut), oldest first, after `after` (rowid)."""
        return self._all("SELECT rowid AS pos, * FROM sessions WHERE principal=? AND rowid>? ORDER BY rowid LIMIT ?",
                         (_principal(principal), int(after or 0), limit))

    def take_refs(self, session_id: str) -> list[str]:
        """The fork references for the session's first turn (given once)."""
        with self._lock:
            row = self._db.execute("SELECT refs FROM sessions WHERE id=?", (session_id,)).fetchone()
            self._db.execute("UPDATE sessions SET refs=NULL WHERE id=?", (session_id,))
        return list(json.loads(row[0])) if row is not None and row[0] else []

    # ---- turns ------------------------------------------------------------------------------------
    def add_turn(self, session_id: str, principal: str | None, message_id: str) -> dict[str, Any]:
        turn_id = str(uuid.uuid4())
        stamp = now()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("UPDATE sessions SET seq=seq+1 WHERE id=?", (session_id,))
                seq = self._db.execute("SELECT seq FROM sessions WHERE id=?", (session_id,)).fetchone()[0]
                if seq > self.max_turns:
                    raise StoreFull(f"session {session_id} has {self.max_turns} turns, the most it may have; "
                                    "fork it from a checkpoint or start a new one")
                self._db.execute(
                    "INSERT INTO turns(id, session_id, principal, seq, message_id, status, state, created, updated) "
                    "VALUES(?,?,?,?,?,'working','TASK_STATE_WORKING',?,?)",
                    (turn_id, session_id, _principal(principal), seq, message_id, stamp, stamp))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            row = self._db.execute("SELECT * FROM turns WHERE id=?", (turn_id,)).fetchone()
        return dict(row)

    def turn(self, turn_id: str, principal: str | None) -> dict[str, Any] | None:
        return self._one("SELECT * FROM turns WHERE id=? AND principal=?", (turn_id, _principal(principal)))

    def turn_by_message(self, session_id: str, message_id: str) -> dict[str, Any] | None:
        return self._one("SELECT * FROM turns WHERE session_id=? AND message_id=?", (session_id, message_id))

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        return self._all("SELECT * FROM turns WHERE session_id=? ORDER BY seq", (session_id,))

    def update_turn(self, turn_id: str, **fields: Any) -> None:
        names = sorted(fields)
        values = [json.dumps(fields[n]) if n == "question" and fields[n] is not None else fields[n] for n in names]
        with self._lock:
            if self._closed:
                return
            self._db.execute(f"UPDATE turns SET {', '.join(f'{n}=?' for n in names)}, updated=? WHERE id=?",
                             (*values, now(), turn_id))

    def append_event(self, turn_id: str, event: dict[str, Any]) -> int:
        """Add one event to the turn's log; its sequence number (0: the store is closed, nothing kept)."""
        with self._lock:
            if self._closed:
                return 0
            row = self._db.execute("INSERT INTO turn_events(turn_id, seq, event) "
                                   "SELECT ?, COALESCE(MAX(seq), 0) + 1, ? "
                                   "FROM turn_events WHERE turn_id=? RETURNING seq",
                                   (turn_id, json.dumps(event, separators=(",", ":")), turn_id)).fetchone()
        return int(row[0])

    def turn_events(self, turn_id: str, after: int = 0, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        """The turn's events numbered above `after`, in order (at most `limit`)."""
        rows = self._all("SELECT seq, event FROM turn_events WHERE turn_id=? AND seq>? ORDER BY seq LIMIT ?",
                         (turn_id, after, limit))
        return [(int(row["seq"]), json.loads(row["event"])) for row in rows]

    # ---- checkpoints ------------------------------------------------------------------------------
    def add_checkpoint(self, session_id: str, principal: str | None, head: dict[str, Any], refs: list[str],
                       request_id: str | None, make_snapshot: Callable[[], str | None] | None = None
                       ) -> tuple[dict[str, Any], bool]:
        """(the checkpoint, True) — or (the one made earlier under request_id, False; make_snapshot is not
        called). make_snapshot: the native copy of the session now (an ACP fork), kept as `snapshot`."""
        owner = _principal(principal)
        earlier = "SELECT * FROM checkpoints WHERE principal=? AND request_id=?"
        if request_id is not None:
            row = self._one(earlier, (owner, request_id))
            if row is not None:
                return row, False
        snapshot = make_snapshot() if make_snapshot is not None else None  # slow (the agent): outside the lock
        with self._lock:
            checkpoint_id = str(uuid.uuid4())
            try:
                self._db.execute("INSERT INTO checkpoints(id, session_id, principal, head_task_id, history_sequence, "
                                 "refs, created, request_id, snapshot) VALUES(?,?,?,?,?,?,?,?,?)", (
                                     checkpoint_id, session_id, owner, head["agent_task_id"], head["seq"],
                                     json.dumps(refs), now(), request_id, snapshot))
            except sqlite3.IntegrityError:  # a concurrent retry with the same request_id won the race
                return dict(self._db.execute(earlier, (owner, request_id)).fetchone()), False
            row = self._db.execute("SELECT * FROM checkpoints WHERE id=?", (checkpoint_id,)).fetchone()
        return dict(row), True

    def checkpoint(self, checkpoint_id: Any, principal: str | None) -> dict[str, Any] | None:
        if not isinstance(checkpoint_id, str):
            return None
        return self._one("SELECT * FROM checkpoints WHERE id=? AND principal=?", (checkpoint_id, _principal(principal)))

    def checkpoints(self, session_id: str, principal: str | None, after: str, limit: int) -> list[dict[str, Any]]:
        return self._all("SELECT rowid AS pos, * FROM checkpoints WHERE session_id=? AND principal=? AND rowid>? "
                         "ORDER BY rowid LIMIT ?", (session_id, _principal(principal), int(after or 0), limit))

    # ---- retention ---------------------------------------------------------------------------------
    def sweep(self, cutoff: str, keep: Collection[str] = ()) -> list[str]:
        """Delete the sessions last used (created, a turn updated, a checkpoint taken) before `cutoff` (a
        timestamp as `now()` writes them), except those in `keep` and any with a working turn; their ids."""
        with self._lock:
            if self._closed:
                return []
            rows = self._db.execute(
                "SELECT s.id FROM sessions s WHERE MAX(s.created, "
                "COALESCE((SELECT MAX(updated) FROM turns t WHERE t.session_id=s.id), ''), "
                "COALESCE((SELECT MAX(created) FROM checkpoints c WHERE c.session_id=s.id), '')) < ? "
                "AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id=s.id AND t.status='working')",
                (cutoff,)).fetchall()
            gone = [row[0] for row in rows if row[0] not in keep]
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("DELETE FROM turn_events WHERE turn_id IN "
                                     "(SELECT id FROM turns WHERE session_id=?)",
                                     [(g,) for g in gone])
                for table, column in (("turns", "session_id"), ("checkpoints", "session_id"), ("sessions", "id")):
                    self._db.executemany(f"DELETE FROM {table} WHERE {column}=?", [(g,) for g in gone])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return gone
