"""What is particular to each durable backend: sqlite's URL forms and file mode, PostgreSQL's driver and LISTEN."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import psycopg
import pytest

from mcp_agent_kit.store import Record, StoreError, open_store, postgres
from mcp_agent_kit.store.postgres import NOTIFY_MAX, redacted
from tests.store.test_contract import Heard


# ---- sqlite ----------------------------------------------------------------------------------------
def test_sqlite_urls_name_relative_and_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "state").mkdir()
    relative = open_store("sqlite:///state/kit.db")
    relative.insert(Record("k", "a", {}))
    relative.close()
    absolute = open_store(f"sqlite:///{tmp_path}/state/kit.db")  # sqlite:////abs/...
    assert absolute.get("k", "a") is not None and absolute.url == f"sqlite:///{tmp_path}/state/kit.db"
    absolute.close()


def test_a_new_sqlite_file_is_private(tmp_path: Path) -> None:
    open_store(f"sqlite:///{tmp_path}/kit.db").close()
    assert stat.S_IMODE(os.stat(tmp_path / "kit.db").st_mode) == 0o600


@pytest.mark.parametrize(("url", "problem"), [
    ("sqlite:///{tmp}/missing/kit.db", "does not exist"),
    ("sqlite:/kit.db", "bad sqlite URL"),
    ("sqlite:///kit.db?mode=ro", "bad sqlite URL"),
    ("sqlite:///{tmp}", "cannot open"),  # a directory, not a file
])
def test_a_bad_sqlite_url_is_a_clear_store_error(tmp_path: Path, url: str, problem: str) -> None:
    with pytest.raises(StoreError, match=problem):
        open_store(url.replace("{tmp}", str(tmp_path)))


# ---- postgresql ------------------------------------------------------------------------------------
def test_the_password_is_redacted_from_the_url_and_errors(pg_server: object) -> None:
    url = pg_server.new_database(password="hunter2")  # type: ignore[attr-defined]
    store = open_store(url)
    try:
        assert "hunter2" not in store.url and store.url.startswith("postgresql://postgres:***@127.0.0.1:")
    finally:
        store.close()
    assert redacted("postgresql://kit@db/kit") == "postgresql://kit@db/kit"
    with pytest.raises(StoreError) as raised:
        open_store(url.rsplit("/", 1)[0] + "/no_such_database")
    assert "hunter2" not in str(raised.value) and "no_such_database" in str(raised.value)


def test_without_psycopg_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now raises ImportError
    with pytest.raises(StoreError, match=r'pip install "mcp-agent-kit\[postgres\]"'):
        open_store("postgresql://kit@127.0.0.1/kit")


def test_the_driver_is_imported_only_for_a_postgresql_url(tmp_path: Path) -> None:
    import subprocess

    code = ("import sys; from mcp_agent_kit.store import open_store; "
            f"open_store('memory:').close(); open_store('sqlite:///{tmp_path}/k.db').close(); "
            "import mcp_agent_kit.cli_common; print('psycopg' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


def test_a_payload_too_long_for_a_notification_sends_the_channel_alone(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        heard = Heard()
        store.subscribe(heard)
        store.notify("task:a", "x" * (NOTIFY_MAX + 1))
        store.notify("task:b", "short")
        assert heard.wait_for(2) == [("task:a", ""), ("task:b", "short")]
    finally:
        store.close()


def test_the_listener_reconnects_after_its_connection_is_dropped(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        heard = Heard()
        store.subscribe(heard)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            dropped = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                    "application_name = 'mcp-agent-kit' AND query LIKE 'LISTEN%%'").fetchall()
        assert dropped == [(True,)]
        deadline = time.monotonic() + 15
        while not heard.items and time.monotonic() < deadline:  # notifications sent while it reconnects are lost
            store.notify("task:a", "after the drop")
            heard.wait_for(1, seconds=0.3)
        assert heard.items and heard.items[0] == ("task:a", "after the drop")
    finally:
        store.close()


def test_pooled_connections_that_died_are_replaced(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(pg_url)
    try:
        store.insert(Record("k", "a", {}))
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                          "application_name = 'mcp-agent-kit' AND pid <> pg_backend_pid()")
        monkeypatch.setattr(postgres, "IDLE_CHECK_S", 3600.0)  # used at once: not checked
        with pytest.raises(StoreError):  # the operation on the dead connection fails, cleanly
            store.get("k", "a")
        assert store.get("k", "a") is not None  # and the next one gets a new connection
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                          "application_name = 'mcp-agent-kit' AND pid <> pg_backend_pid()")
        monkeypatch.setattr(postgres, "IDLE_CHECK_S", 0.0)  # idle long enough to be checked first
        assert store.get("k", "a") is not None  # the dead one is noticed and replaced, no error
    finally:
        store.close()


def test_every_wait_is_bounded_unless_the_url_says_otherwise(pg_url: str) -> None:
    def settings(url: str) -> tuple[str, str]:
        store = open_store(url)
        try:
            with store._conn() as conn:  # type: ignore[attr-defined]
                row = conn.execute("SELECT current_setting('statement_timeout'), "
                                   "current_setting('application_name')").fetchone()
                return (row[0], row[1])
        finally:
            store.close()
    assert settings(pg_url) == ("1min", "mcp-agent-kit")
    assert settings(pg_url + "?options=-c%20statement_timeout%3D5s&application_name=mine") == ("5s", "mine")
