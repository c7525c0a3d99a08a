"""sql_records: the record operations the SQL backends run the same way (insert, get, update, delete,
count, renew, lapsed, purge) and the migration steps, given a placeholder style and a way to run statements.

A backend mixes SqlRecords in and provides MARK (`?` or `%s`) and `_session(write)`: a context
manager yielding something with `execute(statement, params)` returning a DB-API cursor
(`fetchone`, `fetchall`, `rowcount`), which turns its driver's errors into StoreError. Rules:
statement text comes from store.sql; no driver import; query and the event log stay in each
backend (their transactions differ).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from mcp_agent_kit.store import sql
from mcp_agent_kit.store.base import Record

CONFLICT = "ON CONFLICT (kind, key) DO NOTHING"


def apply_migrations(db: Any, mark: str, migrations: Sequence[Sequence[str]], version: Callable[[Any], int],
                     url: str) -> tuple[int, int]:
    """Run the steps `db` has not had yet and record the new version; (version before, after). The
    caller holds the migration lock and the transaction; `version(db)` reads the recorded version."""
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    before = version(db)
    if before > len(migrations):
        raise sql.newer_than_code(before, len(migrations), url)
    for steps in migrations[before:]:
        for statement in steps:
            db.execute(statement)
    if before < len(migrations):
        db.execute("DELETE FROM schema_version")
        db.execute(f"INSERT INTO schema_version (version) VALUES ({mark})", (len(migrations),))
    return before, len(migrations)


class SqlRecords:
    """Record methods of the Store contract over one `records` table."""

    MARK = "?"

    def _session(self, write: bool = False) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def insert(self, record: Record, *, lease_s: float | None = None) -> bool:
        lease_until = time.time() + lease_s if lease_s is not None else record.lease_until
        params = sql.insert_params(record, lease_until)
        with self._session() as db:
            return bool(db.execute(sql.insert_sql(self.MARK, CONFLICT), params).rowcount == 1)

    def get(self, kind: str, key: str) -> Record | None:
        p = self.MARK
        with self._session() as db:
            statement = f"SELECT {sql.COLUMNS} FROM records WHERE kind = {p} AND key = {p}"
            row = db.execute(statement, (kind, key)).fetchone()
        return None if row is None else sql.row_record(row)

    def update(self, record: Record, *, expect_version: int | None = None) -> Record | None:
        params = sql.update_params(record, expect_version)
        with self._session() as db:
            row = db.execute(sql.update_sql(self.MARK, expect_version is not None), params).fetchone()
        return None if row is None else record._replace(version=int(row[0]))

    def delete(self, kind: str, key: str) -> bool:
        p = self.MARK
        with self._session() as db:
            return bool(db.execute(f"DELETE FROM records WHERE kind = {p} AND key = {p}", (kind, key)).rowcount == 1)

    def count(self, kind: str, *, owner: str | None = None, states: Iterable[str] | None = None) -> int:
        filters, params = sql.where(self.MARK, kind, owner, None, states)
        with self._session() as db:
            return int(db.execute(f"SELECT COUNT(*) FROM records WHERE {filters}", params).fetchone()[0])

    def renew(self, kind: str, keys: Iterable[str], holder: str, lease_s: float) -> int:
        until = time.time() + lease_s
        renewed = 0
        with self._session(write=True) as db:
            for batch in sql.batches(keys):
                renewed += db.execute(sql.renew_sql(self.MARK, len(batch)), (until, kind, holder, *batch)).rowcount
        return renewed

    def lapsed(self, kind: str, states: Iterable[str], now: float) -> list[Record]:
        filters, params = sql.where(self.MARK, kind, states=states)
        with self._session() as db:
            rows = db.execute(sql.lapsed_sql(self.MARK, filters), (*params, now)).fetchall()
        return [sql.row_record(row) for row in rows]

    def purge(self, kind: str, now: float) -> int:
        p = self.MARK
        with self._session() as db:
            return int(db.execute(f"DELETE FROM records WHERE kind = {p} AND expires < {p}", (kind, now)).rowcount)
