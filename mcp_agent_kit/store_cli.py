"""store_cli: `mcp-agent-kit store migrate URL` — create or upgrade a shared store's schema.

Prints one line, `URL: schema version BEFORE -> AFTER` (the URL with its password redacted), and
exits 0; running it again, or from several replicas at once, is safe (each step is applied once,
under the database's own lock). A URL that names no shared store is one stderr line, exit 2; a
store that cannot be reached or is newer than this kit is one line, exit 1.
Rules: argument parsing and printing only; the schema is the backends' (store/sqlite, store/postgres).
"""

from __future__ import annotations

from mcp_agent_kit.cli_common import FAILED, OK, USAGE, CliError, Parser, prog

SHARED = ("sqlite", "postgresql", "postgres")
FIX = "give sqlite:///relative/path.db, sqlite:////absolute/path.db or postgresql://user@host/db"


def parser() -> Parser:
    top = Parser(prog=prog("store"), description="Manage the store several replicas share (docs/store.md).")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    migrate = commands.add_parser("migrate", prog=prog("store migrate"), help="create or upgrade the schema",
                                  description="Create or upgrade the schema of a sqlite or PostgreSQL store.")
    migrate.add_argument("url", metavar="URL", help="the store: sqlite:///path.db or postgresql://user@host/db")
    return top


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from mcp_agent_kit.store import StoreError, migrate_store
    from mcp_agent_kit.store.sqlite import path_of

    url: str = args.url
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    try:
        if scheme not in SHARED:
            raise StoreError(f"{url.split('://', 1)[0]!r} does not name a shared store (memory keeps no schema)")
        if scheme == "sqlite":
            path_of(url)
    except StoreError as exc:
        raise CliError(str(exc), FIX, USAGE) from None
    try:
        shown, before, after = migrate_store(url)
    except StoreError as exc:
        raise CliError(str(exc), "check the URL, that the database is up, and this kit's version", FAILED) from None
    print(f"{shown}: schema version {before} -> {after}")
    return OK
