"""Fixtures for every test directory: the legacy (mcp 1.x) interpreter, a real PostgreSQL server.

The legacy oracle is the official SDK's 1.x line in its own virtualenv: set
MCP_AGENT_KIT_LEGACY_PYTHON to its interpreter, or the fixture creates `.venv-mcp1` at the
repository root (pip install mcp==1.30.0) on first use.

Collection under pytest-xdist: every worker imports every test module, and pytest rewrites each
one's asserts (the larger part of collecting). With PYTHONDONTWRITEBYTECODE set (CI sets it) nothing
is cached, so each worker did all of it again. Instead the first worker collects alone, writing
its bytecode into a folder of this run only (sys.pycache_prefix, removed at the end; nothing is
written into the checkout), and the others then read it. Only collection uses that folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.locks import exclusive
from tests.store.pg import PostgresServer, PostgresUnavailable

ROOT = Path(__file__).resolve().parent.parent
LEGACY_PIN = "mcp==1.30.0"
SHARED_BYTECODE = "MCP_AGENT_KIT_TESTS_BYTECODE"  # the run's bytecode folder, from the controller to its workers


def pytest_configure(config: pytest.Config) -> None:
    if sys.dont_write_bytecode and not hasattr(config, "workerinput") and config.getoption("numprocesses", None):
        os.environ[SHARED_BYTECODE] = tempfile.mkdtemp(prefix="kit-tests-bytecode-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and SHARED_BYTECODE in os.environ:
        shutil.rmtree(os.environ.pop(SHARED_BYTECODE), ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """An xdist worker collects with the run's shared bytecode folder; the first one alone (see above)."""
    shared = os.environ.get(SHARED_BYTECODE)
    if not shared or not hasattr(session.config, "workerinput") or not Path(shared).is_dir():
        return (yield)
    saved = sys.pycache_prefix, sys.dont_write_bytecode
    sys.pycache_prefix, sys.dont_write_bytecode = shared, False
    try:
        with exclusive(Path(shared) / "first.lock"):
            first = not (Path(shared) / "collected").exists()
            if first:
                result = yield
                (Path(shared) / "collected").touch()
        if not first:
            result = yield
        return result
    finally:
        sys.pycache_prefix, sys.dont_write_bytecode = saved


@pytest.fixture(scope="session")
def legacy_python() -> str:
    """The legacy oracle's interpreter; a missing or wrong oracle FAILS (it is a pinned test peer)."""
    configured = os.environ.get("MCP_AGENT_KIT_LEGACY_PYTHON")
    venv = ROOT / ".venv-mcp1"
    python = Path(configured) if configured else venv / "bin" / "python"
    complete = venv / ".installed"  # written last: a half-made venv is made again, never used
    with exclusive(ROOT / ".venv-locks" / "mcp1"):  # pytest-xdist workers: one installs, the others wait
        if not configured and not complete.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            done = subprocess.run([str(python), "-m", "pip", "install", "-q", LEGACY_PIN],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                pytest.fail(f"could not install the legacy oracle {LEGACY_PIN}: {done.stderr.strip()[-2000:]}")
            complete.write_text(LEGACY_PIN + "\n")
    version = LEGACY_PIN.partition("==")[2]
    check = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
                           capture_output=True, text=True, check=False)
    if check.stdout.strip() != version:
        pytest.fail(f"{python} is not the legacy oracle {LEGACY_PIN}: {check.stdout.strip() or check.stderr.strip()}")
    return str(python)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the whole session (tests/store/pg.py); missing binaries FAIL."""
    try:
        server = PostgresServer()
    except PostgresUnavailable as exc:
        pytest.fail(f"cannot start PostgreSQL for the store tests: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> str:
    """A fresh database on the session's PostgreSQL server: its postgresql:// URL."""
    return pg_server.new_database()
