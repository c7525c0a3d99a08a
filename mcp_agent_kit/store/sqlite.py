"""sqlite: the Store contract in one sqlite3 file — one host, any number of processes.

URL: `sqlite:///NAME` is a path relative to the working directory (`sqlite:///state/kit.db`),
`sqlite:////ABS` an absolute one (`sqlite:////var/lib/kit/kit.db`) — the SQLAlchemy spelling.
The directory must exist; a new file is created with mode 0600.

Safety across processes: the file is in WAL mode with a busy timeout; every write that reads
before it writes runs in `BEGIN IMMEDIATE` (the file's one write lock), so insert-if-absent (the
PRIMARY KEY), compare-and-set (`UPDATE ... WHERE version = ?`) and the next event number of a
channel (MAX(seq) + 1) are atomic against every other process. Notifications go through a
`notifications` table: `notify` appends a row (and calls this store's own listeners at once); the
first `subscribe` starts one thread that polls the table every POLL_S for rows other stores wrote;
rows older than KEEP_S are pruned. Schema: MIGRATIONS, applied on open under `BEGIN IMMEDIATE`.

Rules: standard library only; one connection per store, used under one lock; sqlite3 errors never
leave this module (StoreError); listeners are called outside the lock, through store.listeners (one
that raises is logged and skipped).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from mcp_agent_kit.store import sql
from mcp_agent_kit.store.base import Listener, Page, StoreError
from mcp_agent_kit.store.listeners import Listeners
from mcp_agent_kit.store.sql_records import SqlRecords, apply_migrations

POLL_S = 0.05  # how often a subscribed store looks for other processes' notifications
KEEP_S = 60.0  # notifications older than this are pruned
BUSY_MS = 10_000  # how long a statement waits for another process's write lock

# version -> the statements that bring the schema from version - 1 to it (an ordered table; append only)
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE records (kind TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL,"
        " owner TEXT NOT NULL, grp TEXT NOT NULL, state TEXT NOT NULL, ord TEXT NOT NULL,"
        " version INTEGER NOT NULL, holder TEXT, lease_until REAL, expires REAL, PRIMARY KEY (kind, key))"
        " WITHOUT ROWID",
        "CREATE INDEX records_by_order ON records (kind, ord, key)",
        "CREATE INDEX records_by_owner ON records (kind, owner, ord, key)",
        "CREATE INDEX records_by_lease ON records (kind, lease_until) WHERE lease_until IS NOT NULL",
        "CREATE INDEX records_by_expiry ON records (kind, expires) WHERE expires IS NOT NULL",
        "CREATE TABLE events (channel TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,"
        " PRIMARY KEY (channel, seq)) WITHOUT ROWID",
        "CREATE TABLE notifications (id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL,"
        " channel TEXT NOT NULL, payload TEXT NOT NULL)",
        "CREATE INDEX notifications_by_age ON notifications (at)",
    ),
)


def path_of(url: str) -> str:
    """The file a `sqlite:///...` URL names; StoreError for any other form."""
    if not url.startswith("sqlite:///") or url == "sqlite:///" or "?" in url or "#" in url:
        raise StoreError(f"bad sqlite URL {url!r}: use sqlite:///relative/path.db or sqlite:////absolute/path.db")
    return url[len("sqlite:///"):]


class SqliteStore(SqlRecords):
    """Records, event logs and notifications in one sqlite3 file (`shared` is True)."""

    shared = True

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self.url = url
        self.path = path_of(url)
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory):
            raise StoreError(f"cannot open {url}: the directory {directory} does not exist (create it first)")
        try:
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600))
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_MS / 1000)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            self._wal()
            self._db.execute("PRAGMA synchronous = NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open {url}: {exc}") from None
        self._lock = threading.Lock()
        self._closed = False
        self._listeners = Listeners()
        self._mine: set[int] = set()  # notification ids this store wrote (its listeners heard them already)
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()
        self._last_prune = 0.0
        if migrate:
            try:
                self.migrate()
            except StoreError:
                self.close()
                raise

    def _wal(self) -> None:
        for _ in range(50):  # another process may hold the lock that switching to WAL needs
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                time.sleep(0.1)
        raise sqlite3.OperationalError("database is locked (could not switch to WAL)")

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock; `write` wraps the block in BEGIN IMMEDIATE ... COMMIT
        (rolled back when the block or the commit fails)."""
        with self._lock:
            if self._closed:
                raise StoreError(f"the store {self.url} is closed")
            try:
                try:
                    if write:
                        self._db.execute("BEGIN IMMEDIATE")
                    yield self._db
                    if write:
                        self._db.execute("COMMIT")
                finally:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
            except sqlite3.Error as exc:
                raise StoreError(f"{self.url}: {exc}") from None

    # ---- schema ---------------------------------------------------------------------------
    def schema_version(self) -> int:
        with self._tx() as db:
            return _version(db)

    def migrate(self) -> tuple[int, int]:
        """Bring the schema up to date (each step once, whoever runs it); (version before, after)."""
        with self._tx(write=True) as db:
            return apply_migrations(db, self.MARK, MIGRATIONS, _version, self.url)

    # ---- records (insert, get, update, delete, count, leases, purge: SqlRecords) ---------------
    def _session(self, write: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        return self._tx(write=write)

    def query(self, kind: str, *, owner: str | None = None, group: str | None = None,
              states: Iterable[str] | None = None, before: tuple[str, str] | None = None,
              limit: int = 100, oldest_first: bool = False) -> Page:
        filters, params = sql.where("?", kind, owner, group, states)
        with self._tx() as db:  # one read transaction: the total and the page agree
            db.execute("BEGIN")
            try:
                total = db.execute(f"SELECT COUNT(*) FROM records WHERE {filters}", params).fetchone()[0]
                rows = db.execute(sql.page_sql("?", filters, before is not None, oldest_first),
                                  sql.page_params(params, before, limit)).fetchall()
            finally:
                db.execute("COMMIT")
        return Page([sql.row_record(row) for row in rows], int(total))

    # ---- event logs -----------------------------------------------------------------------
    def append(self, channel: str, event: dict[str, Any]) -> int:
        text = sql.dumps(event)
        with self._tx(write=True) as db:  # the write lock makes MAX + 1 gap-free across processes
            seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE channel = ?",
                                 (channel,)).fetchone()[0])
            db.execute("INSERT INTO events (channel, seq, body) VALUES (?, ?, ?)", (channel, seq, text))
        return seq

    def events(self, channel: str, after: int = 0, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        with self._tx() as db:
            rows = db.execute("SELECT seq, body FROM events WHERE channel = ? AND seq > ? ORDER BY seq LIMIT ?",
                              (channel, max(0, after), max(0, limit))).fetchall()
        return [(int(seq), sql.loads(body)) for seq, body in rows]

    def drop_events(self, channel: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM events WHERE channel = ?", (channel,))

    # ---- notifications --------------------------------------------------------------------
    def notify(self, channel: str, payload: str = "") -> None:
        now = time.time()
        with self._tx() as db:
            cursor = db.execute("INSERT INTO notifications (at, channel, payload) VALUES (?, ?, ?)",
                                (now, channel, payload))
            if self._poller is not None and cursor.lastrowid is not None:
                self._mine.add(cursor.lastrowid)
            if now - self._last_prune > KEEP_S / 4:
                self._last_prune = now
                db.execute("DELETE FROM notifications WHERE at < ?", (now - KEEP_S,))
        self._listeners.deliver(channel, payload)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            if self._closed:
                raise StoreError(f"the store {self.url} is closed")
            unsubscribe = self._listeners.add(listener)
            start = self._poller is None
            if start:
                try:
                    cursor = int(self._db.execute("SELECT COALESCE(MAX(id), 0) FROM notifications").fetchone()[0])
                except sqlite3.Error as exc:
                    raise StoreError(f"{self.url}: {exc}") from None
                self._poller = threading.Thread(target=self._poll, args=(cursor,), daemon=True,
                                                name="store-sqlite-notifications")
        if start:
            assert self._poller is not None
            self._poller.start()
        return unsubscribe

    def _poll(self, cursor: int) -> None:
        while not self._stop.wait(POLL_S):
            try:
                with self._tx() as db:
                    rows = db.execute("SELECT id, channel, payload FROM notifications WHERE id > ? ORDER BY id",
                                      (cursor,)).fetchall()
                    fresh = [(channel, payload) for id_, channel, payload in rows if id_ not in self._mine]
                    self._mine.difference_update(id_ for id_, _, _ in rows)
            except StoreError:
                if self._closed:
                    return
                continue  # busy for longer than the timeout: try again on the next tick
            if rows:
                cursor = int(rows[-1][0])
            for channel, payload in fresh:
                self._listeners.deliver(channel, payload)

    def close(self) -> None:
        self._stop.set()
        poller = self._poller
        if poller is not None and poller is not threading.current_thread():
            poller.join(timeout=2)
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()


def _version(db: sqlite3.Connection) -> int:
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").fetchone()
    if exists is None:
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return 0 if row is None or row[0] is None else int(row[0])
