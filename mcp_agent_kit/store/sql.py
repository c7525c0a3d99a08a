"""sql: what the SQL backends (sqlite, postgresql) share — the record row, its filters, its pages.

Both keep one `records` table (columns kind, key, body, owner, grp, state, ord, version, holder,
lease_until, expires; `group` and `order` are SQL words, hence grp and ord), one `events` table
(channel, seq, body) and a `schema_version` table; bodies are JSON text. The text columns compare
byte-wise in both (sqlite BINARY, PostgreSQL COLLATE "C"), which for UTF-8 is code-point order:
the order Python's `str` comparison and the memory backend use.

Rules: standard library only; builds statement text and parameter lists for a placeholder style
(`?` or `%s`), never runs one; no driver, no protocol knowledge.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from mcp_agent_kit.store.base import Record, StoreError

COLUMNS = "kind, key, body, owner, grp, state, ord, version, holder, lease_until, expires"
_SET = "body = {p}, owner = {p}, grp = {p}, state = {p}, ord = {p}, holder = {p}, lease_until = {p}, expires = {p}"
BATCH = 500  # keys per `IN (...)`: well below both engines' parameter limits


def dumps(body: dict[str, Any]) -> str:
    """A body or an event as compact JSON text; StoreError when it is not JSON."""
    try:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"a stored body must be a JSON object: {exc}") from None


def loads(text: str | bytes) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise StoreError("the store holds a body that is not a JSON object (corrupt database?)")
    return value


def row_record(row: Sequence[Any]) -> Record:
    """The Record of a `SELECT COLUMNS` row."""
    kind, key, body, owner, grp, state, ord_, version, holder, lease_until, expires = row
    return Record(kind, key, loads(body), owner, grp, state, ord_, int(version), holder,
                  None if lease_until is None else float(lease_until), None if expires is None else float(expires))


def insert_params(record: Record, lease_until: float | None) -> tuple[Any, ...]:
    return (record.kind, record.key, dumps(record.body), record.owner, record.group, record.state, record.order, 1,
            record.holder, lease_until, record.expires)


def insert_sql(p: str, conflict: str) -> str:
    """INSERT one record, doing nothing when (kind, key) exists (`conflict` = the engine's clause)."""
    return f"INSERT INTO records ({COLUMNS}) VALUES ({', '.join([p] * 11)}) {conflict}"


def update_sql(p: str, cas: bool) -> str:
    where = f"kind = {p} AND key = {p}" + (f" AND version = {p}" if cas else "")
    return f"UPDATE records SET {_SET.format(p=p)}, version = version + 1 WHERE {where} RETURNING version"


def update_params(record: Record, expect_version: int | None) -> tuple[Any, ...]:
    base = (dumps(record.body), record.owner, record.group, record.state, record.order, record.holder,
            record.lease_until, record.expires, record.kind, record.key)
    return base if expect_version is None else (*base, expect_version)


def where(p: str, kind: str, owner: str | None = None, group: str | None = None,
          states: Iterable[str] | None = None) -> tuple[str, list[Any]]:
    """The WHERE clause (without the word) of a filtered read, and its parameters."""
    clauses, params = [f"kind = {p}"], [kind]
    for column, value in (("owner", owner), ("grp", group)):
        if value is not None:
            clauses.append(f"{column} = {p}")
            params.append(value)
    if states is not None:
        wanted = sorted(set(states))
        if not wanted:
            clauses.append("1 = 0")
        else:
            clauses.append(f"state IN ({', '.join([p] * len(wanted))})")
            params.extend(wanted)
    return " AND ".join(clauses), params


def page_sql(p: str, filters: str, before: bool, oldest_first: bool = False) -> str:
    past, way = (">", "ASC") if oldest_first else ("<", "DESC")
    after = f" AND (ord {past} {p} OR (ord = {p} AND key {past} {p}))" if before else ""
    return f"SELECT {COLUMNS} FROM records WHERE {filters}{after} ORDER BY ord {way}, key {way} LIMIT {p}"


def page_params(params: list[Any], before: tuple[str, str] | None, limit: int) -> list[Any]:
    extra = [] if before is None else [before[0], before[0], before[1]]
    return [*params, *extra, max(0, limit)]


def lapsed_sql(p: str, filters: str) -> str:
    return f"SELECT {COLUMNS} FROM records WHERE {filters} AND lease_until IS NOT NULL AND lease_until < {p}"


def renew_sql(p: str, count: int) -> str:
    keys = ", ".join([p] * count)
    return f"UPDATE records SET lease_until = {p} WHERE kind = {p} AND holder = {p} AND key IN ({keys})"


def batches(keys: Iterable[str]) -> list[list[str]]:
    unique = list(dict.fromkeys(keys))
    return [unique[i:i + BATCH] for i in range(0, len(unique), BATCH)]


def newer_than_code(found: int, known: int, url: str) -> StoreError:
    return StoreError(f"the store at {url} has schema version {found}, newer than this mcp-agent-kit knows "
                      f"({known}): upgrade mcp-agent-kit on this replica (never downgrade a shared store)")
