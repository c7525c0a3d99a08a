"""A real PostgreSQL server for tests and benches: initdb + pg_ctl in a temporary directory.

`PostgresServer()` runs `initdb`, then `pg_ctl start` with the server on 127.0.0.1 and a free
port, its unix socket in the same temporary directory, fsync off (a test database need not survive
a crash). PostgreSQL refuses to run as root: as root, every command runs as the `postgres` user
(`runuser -u postgres --`) in a directory that user owns. `new_database()` creates a fresh database
and gives its `postgresql://` URL (trust authentication: any password is accepted, so URLs may carry
one, to check it is never printed). Missing binaries raise PostgresUnavailable: the fixtures turn it
into a failure, never a skip (these tests are part of the normal suite; CI has the binaries).

Used by the session fixtures `pg_server` / `pg_url` in tests/conftest.py and by bench/store_bench.py.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

BINARIES = ("initdb", "pg_ctl", "postgres")
START_TIMEOUT_S = 60


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL binaries are missing or the server would not start."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
            return str(candidate)
        raise PostgresUnavailable(f"{name} is not on PATH: install the PostgreSQL server (e.g. apt-get install "
                                  "postgresql) — the store tests need a real server")
    return found


class PostgresServer:
    """One PostgreSQL server in a temporary directory; `stop()` removes both."""

    def __init__(self, max_connections: int = 300) -> None:
        self.bins = {name: _binary(name) for name in BINARIES}
        self.as_root = os.geteuid() == 0
        if self.as_root:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable("PostgreSQL refuses to run as root and there is no 'postgres' user to "
                                          "run it as: create one (useradd --system postgres) or run as non-root"
                                          ) from None
        self.dir = Path(tempfile.mkdtemp(prefix="kit-pg-"))
        self.data, self.log = self.dir / "data", self.dir / "server.log"
        self.port = _free_port()
        if self.as_root:
            shutil.chown(self.dir, "postgres", "postgres")
        try:
            self._run([self.bins["initdb"], "-D", str(self.data), "-U", "postgres", "--auth=trust",
                       "-E", "UTF8", "--no-locale", "--no-sync"])
            options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
                       f"-c synchronous_commit=off -c full_page_writes=off -c max_connections={max_connections}")
            self._run([self.bins["pg_ctl"], "-D", str(self.data), "-l", str(self.log), "-o", options,
                       "-w", "-t", str(START_TIMEOUT_S), "start"])
        except PostgresUnavailable:
            self.stop()
            raise

    def _run(self, argv: list[str]) -> None:
        command = ["runuser", "-u", "postgres", "--", *argv] if self.as_root else argv
        done = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT_S + 30,
                              cwd=self.dir, check=False)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise PostgresUnavailable(f"{' '.join(argv[:1])} failed ({done.returncode}): "
                                      f"{(done.stderr or done.stdout).strip()[-2000:]} {log}")

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        auth = "postgres" + (f":{password}" if password else "")
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def new_database(self, password: str | None = None) -> str:
        """CREATE DATABASE with a fresh name; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return self.url(name, password)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(PostgresUnavailable, subprocess.TimeoutExpired):
                self._run([self.bins["pg_ctl"], "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop"])
        shutil.rmtree(self.dir, ignore_errors=True)
