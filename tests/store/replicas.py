"""N replica processes of one server command, sharing one store URL and one secret, for the scale-out tests.

    with Replicas(["-m", "mcp_agent_kit", "serve", "examples/everything_server.py", "--http",
                   "127.0.0.1:{port}"], n=3, store_url=url, lease_s=2) as replicas:
        with RoundRobinProxy(replicas.ports) as proxy: ...
        replicas.kill(0)          # kill -9, as a node failure would

`argv` is the command after the interpreter (sys.executable); `{port}` is replaced by the replica's
own free port and `{store}` by the store URL; without a `{store}`, `--store URL` is appended (and
`--store-lease S` with `lease_s`); `store_url=None` appends neither option (each replica keeps
its own memory). Every replica gets the same secret in $MCP_AGENT_KIT_SECRET (a fresh random one unless
given). Each runs in its own session (process group) with its output in a log file (`log(i)`,
quoted when it fails to start). Every wait is bounded: `start` until each
port listens, `stop` SIGTERM then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from tests.net import free_port

ROOT = Path(__file__).resolve().parents[2]


class Replicas:
    def __init__(self, argv: list[str], n: int = 3, *, store_url: str | None, secret: str | None = None,
                 lease_s: float | None = None, env: dict[str, str] | None = None, cwd: Path = ROOT,
                 start_timeout: float = 60.0) -> None:
        self.argv, self.n, self.store_url, self.lease_s = list(argv), n, store_url, lease_s
        self.secret = secret or secrets.token_hex(32)
        self.extra_env, self.cwd, self.start_timeout = dict(env or {}), cwd, start_timeout
        self.ports: list[int] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        self._dir = Path(tempfile.mkdtemp(prefix="kit-replicas-"))

    def command(self, port: int) -> list[str]:
        argv = [part.replace("{port}", str(port)).replace("{store}", self.store_url or "") for part in self.argv]
        if self.store_url is None:
            return [sys.executable, *argv]
        if not any("{store}" in part for part in self.argv):
            argv += ["--store", self.store_url]
        if self.lease_s is not None:
            argv += ["--store-lease", str(self.lease_s)]
        return [sys.executable, *argv]

    def start(self) -> Replicas:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "MCP_AGENT_KIT_SECRET": self.secret, **self.extra_env}
        for index in range(self.n):
            port = free_port()
            with open(self._dir / f"replica-{index}.log", "wb") as log:
                proc = subprocess.Popen(self.command(port), cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self.ports.append(port)
            self.procs.append(proc)
        deadline = time.monotonic() + self.start_timeout
        for index, port in enumerate(self.ports):
            self._wait_listening(index, port, deadline)
        return self

    def _wait_listening(self, index: int, port: int, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.procs[index].poll() is not None:
                self.stop()
                raise RuntimeError(f"replica {index} exited ({self.procs[index].returncode}): {self.log(index)}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        log = self.log(index)
        self.stop()
        raise RuntimeError(f"replica {index} does not listen on {port} after {self.start_timeout} s: {log}")

    def url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}"

    def log(self, index: int) -> str:
        """The end of the replica's output (for a failure message)."""
        return self.output(index)[-4000:]

    def output(self, index: int) -> str:
        """Everything the replica wrote so far."""
        path = self._dir / f"replica-{index}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def index_of_pid(self, pid: int) -> int:
        """Which replica has this process id (a lease holder is `host:pid:random`)."""
        return next(i for i, proc in enumerate(self.procs) if proc.pid == pid)

    def alive(self, index: int) -> bool:
        return self.procs[index].poll() is None

    def kill(self, index: int) -> None:
        """kill -9 the replica (its whole process group), and reap it."""
        proc = self.procs[index]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Replicas:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.cleanup()
