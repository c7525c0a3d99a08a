"""process: a spawned peer (an MCP stdio server, an ACP agent) in its own process group, its stderr kept,
and a stop that always ends it and everything it started.

The one child-process manager of the kit: client/stdio and acp/client spawn through it. The child
gets a minimal environment (the few variables every program needs, PASSED_THROUGH, taken from ours;
a superset of the official MCP SDK's get_default_environment()) plus the variables the caller names
(an MCP config's `env`), so API keys reach it only when passed on purpose. stderr is read by a
thread into a bounded ring (the newest bytes win), handed to an optional callback chunk by chunk,
and quoted in error messages. `stop()` escalates: close stdin, wait, SIGTERM the whole group, wait,
SIGKILL the whole group, so a child that forked or re-executed itself (and keeps the pipes open)
goes too. `lasting=True` forks the child on a thread that lives as long as this process (`in_lasting_thread`):
a child that asks the kernel for a death signal when its parent goes (PR_SET_PDEATHSIG: bwrap's
--die-with-parent) gets it when the thread that forked it ends, so it must not be forked by a request's
short-lived thread. Rules: knows no protocol (no JSON-RPC, MCP or ACP); POSIX process groups
(start_new_session); imports nothing of ours.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import IO, Any, TypeVar

T = TypeVar("T")

PASSED_THROUGH = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
                  "SYSTEMROOT")
STDERR_RING = 64 * 1024
STDERR_DRAIN_S = 2.0  # how long an exit report waits for the rest of stderr


def anchored(argv: Sequence[str], cwd: str | None) -> list[str]:
    """A peer's command as typed here, for a child started in `cwd`: an argument that is a
    relative path to a file here (`python agent.py`) becomes absolute, so `--cwd` moves the session
    and not the command (the program itself: see PeerProcess). Options, absolute paths, the
    program name and words naming no file here are left alone."""
    if cwd is None or os.path.abspath(cwd) == os.getcwd():
        return list(argv)
    return [*argv[:1], *(os.path.abspath(word) if _local_file(word) else word for word in argv[1:])]


def _local_file(word: str) -> bool:
    return bool(word) and not word.startswith("-") and not os.path.isabs(word) and os.path.isfile(word)


class SpawnError(Exception):
    """The peer's command could not be started (not found, not executable, bad cwd); `why` says why."""

    def __init__(self, program: str, why: str) -> None:
        super().__init__(f"cannot start {program!r}: {why}")
        self.program, self.why = program, why


def minimal_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The few variables every program needs, taken from ours, with `extra` on top (a value that is
    an exported shell function, `() {...`, is not passed on, as the official SDK does)."""
    env = {name: value for name in PASSED_THROUGH
           if (value := os.environ.get(name)) is not None and not value.startswith("()")}
    env.update(extra or {})
    return env


_lasting: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] | None = None
_lasting_lock = threading.Lock()


def _serve_lasting(jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]]) -> None:
    while True:
        job, done = jobs.get()
        try:
            done.set_result(job())
        except BaseException as exc:  # handed to the caller, which raises it
            done.set_exception(exc)


def in_lasting_thread(job: Callable[[], T]) -> T:
    """`job()` run on the main thread or on one daemon thread that lives as long as the process (started on
    first use); its result, or its exception raised here."""
    global _lasting
    if threading.current_thread() is threading.main_thread():
        return job()
    with _lasting_lock:
        if _lasting is None:
            _lasting = queue.SimpleQueue()
            threading.Thread(target=_serve_lasting, args=(_lasting,), name="process-spawner", daemon=True).start()
        jobs = _lasting
    done: Future[T] = Future()
    jobs.put((job, done))
    return done.result()


def _live_member(pgid: int) -> bool:
    """Whether /proc lists a non-zombie process in group `pgid` (True when /proc cannot tell)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


class PeerProcess:
    """One running peer: `stdin`/`stdout` for the connection, `stderr_text()` for messages, `stop()` to end it.

    `anchor`: a relative program path (`./agent`) names a file relative to our cwd, not to the
    child's `cwd` (ACP's rule); without it, as the MCP hosts do (Popen's rule), relative to `cwd`.
    `on_stderr` gets every chunk of stderr, on the reader thread, and b"" once at its end."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
                 stderr_limit: int = STDERR_RING, anchor: bool = True,
                 on_stderr: Callable[[bytes], None] | None = None, label: str = "peer", lasting: bool = False) -> None:
        if not argv:
            raise SpawnError("", "no command given")
        self.argv = list(argv)
        if anchor and os.sep in self.argv[0] and not os.path.isabs(self.argv[0]):
            self.argv[0] = os.path.abspath(self.argv[0])
        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=minimal_environment(env), cwd=cwd, start_new_session=True)

        try:
            self.popen = in_lasting_thread(start) if lasting else start()
        except (OSError, ValueError) as exc:
            raise SpawnError(self.argv[0], str(getattr(exc, "strerror", None) or exc)) from None
        self.pgid = self.popen.pid  # start_new_session: the child leads its own group
        self._ring: deque[bytes] = deque()
        self._ring_size, self._ring_limit = 0, stderr_limit
        self.stderr_dropped = 0
        self._ring_lock = threading.Lock()
        self._on_stderr = on_stderr
        self._stderr_thread = threading.Thread(target=self._read_stderr, name=f"{label}-stderr", daemon=True)
        self._stderr_thread.start()

    @property
    def stdin(self) -> IO[bytes]:
        assert self.popen.stdin is not None
        return self.popen.stdin

    @property
    def stdout(self) -> IO[bytes]:
        assert self.popen.stdout is not None
        return self.popen.stdout

    @property
    def pid(self) -> int:
        return self.popen.pid

    def returncode(self) -> int | None:
        """The exit code once the process ended (negative: killed by that signal), else None."""
        return self.popen.poll()

    def _read_stderr(self) -> None:
        stream = self.popen.stderr
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read1(8192):  # type: ignore[attr-defined]
                with self._ring_lock:
                    self._ring.append(chunk)
                    self._ring_size += len(chunk)
                    while self._ring_size > self._ring_limit and len(self._ring) > 1:
                        dropped = self._ring.popleft()
                        self._ring_size -= len(dropped)
                        self.stderr_dropped += len(dropped)
                if self._on_stderr is not None:
                    self._on_stderr(chunk)
        if self._on_stderr is not None:
            self._on_stderr(b"")

    def stderr_text(self, last: int = 2000) -> str:
        """The last `last` characters the peer wrote to stderr, stripped ('' when none)."""
        with self._ring_lock:
            data = b"".join(self._ring)
        return data.decode("utf-8", "replace").strip()[-last:]

    def describe_exit(self) -> str:
        """'exited with code 3' / 'was killed by SIGKILL' / 'is still running', plus the stderr tail."""
        code = self.returncode()
        if code is None:
            what = "is still running"
        elif code < 0:
            try:
                what = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"was killed by signal {-code}"
        else:
            what = f"exited with code {code}"
        if code is not None:  # its last words may still be in the pipe: read to the end (a grandchild may hold it)
            self._stderr_thread.join(STDERR_DRAIN_S)
        tail = self.stderr_text(600)
        return what + (f"; its stderr ends: {tail}" if tail else "; it wrote nothing to stderr")

    def ended(self, seconds: float = STDERR_DRAIN_S) -> int | None:
        """Wait up to `seconds` for the child to exit, then for its stderr to be read to the end (bounded);
        its exit code, or None while it still runs."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(seconds)
        code = self.popen.poll()
        if code is not None:
            self._stderr_thread.join(STDERR_DRAIN_S)
        return code

    def signal_group(self, sig: int) -> None:
        """Send `sig` to every process of the peer's group (a no-op once the group is gone)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def group_alive(self) -> bool:
        """Whether any process of the peer's group still runs (zombies, which nobody may reap, do not count)."""
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return _live_member(self.pgid)

    def stop(self, grace: float = 2.0) -> None:
        """Close stdin, wait `grace` s, SIGTERM the group, wait `grace` s, SIGKILL the group; reap the child."""
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                self.signal_group(sig)
            if self._wait_group(grace if sig != signal.SIGKILL else 5.0):
                break
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(5.0)
        self._stderr_thread.join(1.0)
        # stdout belongs to the connection's reader: its owner closes it once that thread is done
        if not self._stderr_thread.is_alive() and self.popen.stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                self.popen.stderr.close()

    def _wait_group(self, seconds: float) -> bool:
        """Wait until the child exited and no process of its group is left; whether that happened in time."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.popen.poll() is not None and not self.group_alive():
                return True
            time.sleep(0.02)
        return self.popen.poll() is not None and not self.group_alive()
