"""Schema migrations: applied on open, by `mcp-agent-kit store migrate URL`, once even from three processes at once."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from mcp_agent_kit.store import StoreError, migrate_store, open_store
from mcp_agent_kit.store.postgres import MIGRATIONS as PG_MIGRATIONS
from mcp_agent_kit.store.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from tests.together import READY_THEN_WAIT, release

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
LATEST = {"sqlite": len(SQLITE_MIGRATIONS), "postgresql": len(PG_MIGRATIONS)}


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'kit.db'}"  # tmp_path is absolute: sqlite:////...
    return str(request.getfixturevalue("pg_url"))


def kit(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", *argv], capture_output=True, text=True,
                          timeout=timeout, env=ENV, cwd=ROOT, stdin=subprocess.DEVNULL)


def test_both_backends_share_one_schema_version() -> None:
    assert LATEST["sqlite"] == LATEST["postgresql"] >= 1


def test_migrate_prints_the_version_before_and_after(fresh_url: str) -> None:
    latest = LATEST["sqlite"]
    first = kit("store", "migrate", fresh_url)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().endswith(f": schema version 0 -> {latest}")
    again = kit("store", "migrate", fresh_url)
    assert again.returncode == 0 and again.stdout.strip().endswith(f"schema version {latest} -> {latest}")
    if fresh_url.startswith("postgresql"):
        assert first.stdout.startswith("postgresql://postgres@127.0.0.1:")


def test_three_processes_migrating_one_fresh_database_at_once_all_succeed_and_apply_it_once(fresh_url: str) -> None:
    script = ("import sys; import mcp_agent_kit.store, mcp_agent_kit.store_cli; "
              "from mcp_agent_kit.__main__ import main; "
              f"{READY_THEN_WAIT}; sys.exit(main(['store', 'migrate', sys.argv[1]]))")
    procs = [subprocess.Popen([sys.executable, "-c", script, fresh_url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT) for _ in range(3)]
    release(procs)  # all three migrate at once
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], outputs
    latest = LATEST["sqlite"]
    lines = sorted(out.strip().rsplit(": ", 1)[1] for out, _ in outputs)
    assert lines == [f"schema version 0 -> {latest}"] + [f"schema version {latest} -> {latest}"] * 2
    store = open_store(fresh_url)
    try:
        assert store.schema_version() == latest  # type: ignore[attr-defined]
    finally:
        store.close()


def set_version(url: str, version: int) -> None:
    """Write the schema version behind the store's back, as a newer kit would have."""
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
            db.execute("UPDATE schema_version SET version = ?", (version,))
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE schema_version SET version = %s", (version,))


def test_a_store_newer_than_the_code_is_refused_with_a_clear_message(fresh_url: str) -> None:
    migrate_store(fresh_url)
    set_version(fresh_url, 99)
    with pytest.raises(StoreError, match=r"schema version 99, newer than this mcp-agent-kit knows \(1\): upgrade"):
        open_store(fresh_url)
    done = kit("store", "migrate", fresh_url)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1 and "newer than" in done.stderr


@pytest.mark.parametrize(("url", "problem"), [
    ("memory:", "does not name a shared store"),
    ("redis://cache", "does not name a shared store"),
    ("sqlite:/kit.db", "bad sqlite URL"),
    ("sqlite:///", "bad sqlite URL"),
])
def test_a_bad_url_is_one_line_exit_2(url: str, problem: str) -> None:
    done = kit("store", "migrate", url)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and problem in done.stderr, done.stderr
    assert "sqlite:////absolute/path.db" in done.stderr


def test_an_unreachable_store_is_one_line_exit_1(tmp_path: Path) -> None:
    done = kit("store", "migrate", f"sqlite:///{tmp_path}/no/such/dir/kit.db")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1 and "does not exist" in done.stderr
    done = kit("store", "migrate", "postgresql://kit:hunter2@127.0.0.1:1/kit?connect_timeout=2")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "hunter2" not in done.stderr and "kit:***@" in done.stderr
