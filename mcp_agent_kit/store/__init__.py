"""store: records that outlive a request (tasks, sessions, idempotency keys), for one or many replicas.

`open_store(url)` picks the backend by the URL's scheme: `memory:` (the default, one process),
`sqlite:///path` (one host, several processes), `postgresql://...` (many hosts; the optional
`[postgres]` extra, psycopg 3, imported only here and only then). The contract is store.base.Store.
Rules: knows no protocol; imports a backend module only when its scheme is asked for.
"""

from __future__ import annotations

from mcp_agent_kit.store.base import Page, Record, Store, StoreError

__all__ = ["Page", "Record", "Store", "StoreError", "migrate_store", "open_store"]


def open_store(url: str | None, *, migrate: bool = True) -> Store:
    """The store a `--store` URL names (None or "memory:" → memory); StoreError names a bad URL.
    A shared store's schema is brought up to date on open unless `migrate` is False."""
    if url is None or url in ("memory:", "memory://"):
        from mcp_agent_kit.store.memory import MemoryStore

        return MemoryStore()
    scheme = url.split(":", 1)[0].lower()
    if scheme == "sqlite":
        from mcp_agent_kit.store.sqlite import SqliteStore

        return SqliteStore(url, migrate=migrate)
    if scheme in ("postgresql", "postgres"):
        from mcp_agent_kit.store.postgres import PostgresStore

        return PostgresStore(url, migrate=migrate)
    raise StoreError(f"unknown store URL {url!r}: use memory:, sqlite:///path or postgresql://user@host/db")


def migrate_store(url: str) -> tuple[str, int, int]:
    """Create or upgrade a shared store's schema: (its redacted URL, version before, version after)."""
    store = open_store(url, migrate=False)
    try:
        migrate = getattr(store, "migrate", None)
        if migrate is None:
            raise StoreError(f"{store.url} keeps nothing between runs: it has no schema to migrate")
        before, after = migrate()
        return store.url, int(before), int(after)
    finally:
        store.close()
