"""postgres: the Store contract in PostgreSQL — any number of replicas on any number of hosts.

URL: a libpq URI, `postgresql://user:password@host:5432/dbname?sslmode=require` (`postgres://`
too). The driver is psycopg 3 (`pip install "mcp-agent-kit[postgres]"`), imported when a store is
opened, never before. `url` is the URL with its password replaced by `***`; errors never show it.

Connections: a small pool of its own (POOL_SIZE autocommit connections, made on demand, a broken
one dropped; waiting for a free one is bounded by WAIT_S), plus one dedicated LISTEN connection on
a thread, started by the first `subscribe`, reconnecting after a drop. Atomicity comes from the
server: insert-if-absent is `ON CONFLICT DO NOTHING`, compare-and-set `UPDATE ... WHERE version =`,
and an event's sequence number comes from its channel's row in `channels`, bumped by an upsert
inside the event's own transaction (the row lock serialises appenders: gap-free, in commit order).
`notify` is `pg_notify('mcp_agent_kit', channel || '\\n' || payload)`; a payload too long for a
notification (over NOTIFY_MAX bytes) is dropped and the channel alone is sent (a notification is a
hint: receivers re-read the store). Schema: MIGRATIONS, applied on open under
`pg_advisory_xact_lock`, so replicas starting together apply each step once.

Rules: psycopg only here, only when opened; psycopg errors never leave this module (StoreError);
listeners are called on the LISTEN thread, outside every lock, through store.listeners (one that
raises is logged and skipped).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from mcp_agent_kit.store import sql
from mcp_agent_kit.store.base import Listener, Page, StoreError
from mcp_agent_kit.store.listeners import Listeners
from mcp_agent_kit.store.sql_records import SqlRecords, apply_migrations

if TYPE_CHECKING:
    import psycopg

POOL_SIZE = 8
IDLE_CHECK_S = 5.0  # a pooled connection idle this long is checked (SELECT 1) before use
WAIT_S = 30.0  # the longest an operation waits for a pooled connection
CONNECT_TIMEOUT_S = 10
NOTIFY_CHANNEL = "mcp_agent_kit"
NOTIFY_MAX = 7000  # bytes of channel + payload (PostgreSQL's limit is 8000)
MIGRATION_LOCK = 0x6D63_706B  # pg_advisory_xact_lock key for schema changes ("mcpk")

CONNECT_DEFAULTS: dict[str, str | int] = {
    "connect_timeout": CONNECT_TIMEOUT_S, "application_name": "mcp-agent-kit", "options": "-c statement_timeout=60s",
    "keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3,
}

_TEXT = 'TEXT COLLATE "C" NOT NULL'
# version -> the statements that bring the schema from version - 1 to it (an ordered table; append only)
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        f"CREATE TABLE records (kind {_TEXT}, key {_TEXT}, body TEXT NOT NULL, owner {_TEXT}, grp {_TEXT},"
        f" state {_TEXT}, ord {_TEXT}, version BIGINT NOT NULL, holder TEXT, lease_until DOUBLE PRECISION,"
        " expires DOUBLE PRECISION, PRIMARY KEY (kind, key))",
        "CREATE INDEX records_by_order ON records (kind, ord, key)",
        "CREATE INDEX records_by_owner ON records (kind, owner, ord, key)",
        "CREATE INDEX records_by_lease ON records (kind, lease_until) WHERE lease_until IS NOT NULL",
        "CREATE INDEX records_by_expiry ON records (kind, expires) WHERE expires IS NOT NULL",
        f"CREATE TABLE channels (channel {_TEXT} PRIMARY KEY, last BIGINT NOT NULL)",
        f"CREATE TABLE events (channel {_TEXT}, seq BIGINT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (channel, seq))",
    ),
)


def redacted(url: str) -> str:
    """The URL with its password (if any) replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://(unparsable URL)"
    if parts.password is None:
        return url
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostinfo}"))


def _password_of(url: str) -> str:
    """The password in a URL, found without parsing it (an unparsable URL may still carry one)."""
    userinfo = url.partition("://")[2].partition("/")[0].rpartition("@")[0]
    return userinfo.partition(":")[2]


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError('a postgresql:// store needs psycopg 3: pip install "mcp-agent-kit[postgres]"') from None
    return psycopg


class PostgresStore(SqlRecords):
    """Records, event logs and notifications in one PostgreSQL database (`shared` is True)."""

    shared = True

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self._psycopg = _driver()
        self._dsn = url
        self.url = redacted(url)
        self._password = _password_of(url)
        try:
            given = self._psycopg.conninfo.conninfo_to_dict(url)
        except self._psycopg.Error as exc:
            raise StoreError(f"bad PostgreSQL URL {self.url}: {self._scrub(exc)}") from None
        # Every wait bounded: connecting, each statement, and a peer that vanished without a word
        # (TCP keepalives). The URL's own settings win.
        self._extra = {name: value for name, value in CONNECT_DEFAULTS.items() if name not in given}
        self._idle: queue.LifoQueue[tuple[psycopg.Connection[Any], float]] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(POOL_SIZE)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._listeners = Listeners()
        self._listening = threading.Event()
        self._listener_thread: threading.Thread | None = None
        if migrate:
            try:
                self.migrate()
            except StoreError:
                self.close()
                raise

    # ---- connections ----------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] = self._psycopg.connect(self._dsn, autocommit=True, **self._extra)
        return conn

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection (StoreError for any failure); a broken one is closed, not returned."""
        if self._closed.is_set():
            raise StoreError(f"the store {self.url} is closed")
        if not self._slots.acquire(timeout=WAIT_S):
            raise StoreError(f"{self.url}: no free database connection after {WAIT_S:.0f} s")
        conn: psycopg.Connection[Any] | None = None
        try:
            conn = self._pooled() or self._connect()
            yield conn
        except self._psycopg.Error as exc:
            raise StoreError(f"{self.url}: {self._scrub(exc)}") from None
        finally:
            if conn is not None:
                if conn.closed or conn.broken or self._closed.is_set():
                    conn.close()
                else:
                    self._idle.put((conn, time.monotonic()))
            self._slots.release()

    def _pooled(self) -> psycopg.Connection[Any] | None:
        """An idle connection that still works (one idle for IDLE_CHECK_S is checked first), or None."""
        while True:
            try:
                conn, since = self._idle.get_nowait()
            except queue.Empty:
                return None
            if time.monotonic() - since < IDLE_CHECK_S:
                return conn
            try:
                conn.execute("SELECT 1")
                return conn
            except self._psycopg.Error:  # the server restarted, or dropped it: make another
                conn.close()

    def _scrub(self, exc: BaseException) -> str:
        """A driver error as one line, without the password even if the driver quoted the URL."""
        text = " ".join(str(exc).split())
        return text.replace(self._password, "***") if self._password else text

    def _one(self, statement: str, params: Iterable[Any] = ()) -> Any:
        with self._conn() as conn:
            return conn.execute(statement, tuple(params)).fetchone()

    # ---- schema ---------------------------------------------------------------------------
    def schema_version(self) -> int:
        with self._conn() as conn:
            return _version(conn)

    def migrate(self) -> tuple[int, int]:
        """Bring the schema up to date (each step once, whoever runs it); (version before, after)."""
        with self._conn() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            return apply_migrations(conn, self.MARK, MIGRATIONS, _version, self.url)

    # ---- records (insert, get, update, delete, count, leases, purge: SqlRecords) ---------------
    MARK = "%s"

    def _session(self, write: bool = False) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._conn()  # autocommit: each statement commits; renew's batches each on their own

    def query(self, kind: str, *, owner: str | None = None, group: str | None = None,
              states: Iterable[str] | None = None, before: tuple[str, str] | None = None,
              limit: int = 100, oldest_first: bool = False) -> Page:
        filters, params = sql.where("%s", kind, owner, group, states)
        with self._conn() as conn, conn.transaction():
            total = conn.execute(f"SELECT COUNT(*) FROM records WHERE {filters}", params).fetchone()
            rows = conn.execute(sql.page_sql("%s", filters, before is not None, oldest_first),
                                sql.page_params(params, before, limit)).fetchall()
        return Page([sql.row_record(row) for row in rows], int(total[0]) if total else 0)

    # ---- event logs -----------------------------------------------------------------------
    def append(self, channel: str, event: dict[str, Any]) -> int:
        text = sql.dumps(event)
        with self._conn() as conn, conn.transaction():
            row = conn.execute("INSERT INTO channels (channel, last) VALUES (%s, 1) ON CONFLICT (channel)"
                               " DO UPDATE SET last = channels.last + 1 RETURNING last", (channel,)).fetchone()
            seq = int(row[0]) if row else 0
            conn.execute("INSERT INTO events (channel, seq, body) VALUES (%s, %s, %s)", (channel, seq, text))
        return seq

    def events(self, channel: str, after: int = 0, limit: int = 1000) -> list[tuple[int, dict[str, Any]]]:
        with self._conn() as conn:
            rows = conn.execute("SELECT seq, body FROM events WHERE channel = %s AND seq > %s ORDER BY seq LIMIT %s",
                                (channel, max(0, after), max(0, limit))).fetchall()
        return [(int(seq), sql.loads(body)) for seq, body in rows]

    def drop_events(self, channel: str) -> None:
        with self._conn() as conn, conn.transaction():
            conn.execute("DELETE FROM channels WHERE channel = %s", (channel,))
            conn.execute("DELETE FROM events WHERE channel = %s", (channel,))

    # ---- notifications --------------------------------------------------------------------
    def notify(self, channel: str, payload: str = "") -> None:
        message = f"{channel}\n{payload}"
        if len(message.encode()) > NOTIFY_MAX:
            message = f"{channel}\n"
        self._one("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, message))

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            if self._closed.is_set():
                raise StoreError(f"the store {self.url} is closed")
            unsubscribe = self._listeners.add(listener)
            if self._listener_thread is None:
                self._listener_thread = threading.Thread(target=self._listen, daemon=True,
                                                         name="store-postgres-listen")
                self._listener_thread.start()
        if not self._listening.wait(CONNECT_TIMEOUT_S):  # notifications sent from now on will arrive
            raise StoreError(f"{self.url}: could not LISTEN for notifications within {CONNECT_TIMEOUT_S} s")
        return unsubscribe

    def _listen(self) -> None:
        failures = 0
        while not self._closed.is_set():
            try:
                with self._connect() as conn:
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    self._listening.set()
                    failures = 0
                    while not self._closed.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._deliver(note.payload)
            except self._psycopg.Error:
                self._listening.clear()  # lost: receivers fall back on polling until it is back
                failures = min(failures + 1, 5)
            self._closed.wait(min(0.2 * 2 ** failures, 5.0))

    def _deliver(self, message: str) -> None:
        channel, _, payload = message.partition("\n")
        self._listeners.deliver(channel, payload)

    def close(self) -> None:
        self._closed.set()
        thread = self._listener_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        while True:
            try:
                self._idle.get_nowait()[0].close()
            except queue.Empty:
                break


def _version(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return 0 if found is None or found[0] is None else int(found[0])
