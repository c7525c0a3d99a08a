"""store: records that outlive a request (tasks, sessions, idempotency keys), for one or many replicas.

`open_store(url)` picks the backend by the URL's scheme: `memory:` (the default, one process),
`sqlite:///path` (one host, several processes), `postgresql://...` (many hosts; the optional
`[postgres]` extra, psycopg 3, imported only here and only then). The contract is store.base.Store.
Rules: knows no protocol; imports a backend module only when its scheme is asked for.
"""

from __future__ import annotations

from mcp_agent_kit.store.base import Page, Record, Store, StoreError

__all__ = ["Page", "Record", "Store", "StoreError", "open_store"]


def open_store(url: str | None) -> Store:
    """The store a `--store` URL names (None or "memory:" → memory); StoreError names a bad URL."""
    if url is None or url in ("memory:", "memory://"):
        from mcp_agent_kit.store.memory import MemoryStore

        return MemoryStore()
    scheme = url.split(":", 1)[0].lower()
    if scheme == "sqlite":
        from mcp_agent_kit.store.sqlite import SqliteStore

        return SqliteStore(url)
    if scheme in ("postgresql", "postgres"):
        from mcp_agent_kit.store.postgres import PostgresStore

        return PostgresStore(url)
    raise StoreError(f"unknown store URL {url!r}: use memory:, sqlite:///path or postgresql://user@host/db")
