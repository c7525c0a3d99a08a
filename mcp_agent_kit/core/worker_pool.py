"""worker_pool: a bounded pool of daemon threads with a FIFO queue, for work that outlives a request.

Tasks of both MCP eras and A2A tasks run here instead of on a thread each: at most `workers`
threads exist, the rest of the work waits in the queue (a task waiting for a worker is still
`working` to its client). Threads start on demand and leave after `idle_s` without work, so an
idle server holds none. Rules: standard library only; no protocol knowledge; a job is a plain
callable and its exceptions are logged, never propagated; the queue itself is unbounded — the
callers bound it (task quotas), the pool bounds threads.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

from mcp_agent_kit.logs import logger

DEFAULT_WORKERS = 32
IDLE_S = 30.0


class WorkerPool:
    """Run jobs on at most `workers` threads, first come first served."""

    def __init__(self, workers: int = DEFAULT_WORKERS, *, name: str = "mcp-task", idle_s: float = IDLE_S) -> None:
        if workers < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.workers = workers
        self.name = name
        self.idle_s = idle_s
        self._queue: collections.deque[Callable[[], None]] = collections.deque()
        self._lock = threading.Condition()
        self._threads = 0
        self._idle = 0
        self._busy = 0

    def submit(self, job: Callable[[], None]) -> None:
        """Queue `job`; a thread picks it up as soon as one is free (starting one if allowed)."""
        with self._lock:
            self._queue.append(job)
            if self._idle > len(self._queue) - 1:
                self._lock.notify()
                return
            if self._threads >= self.workers:
                return
            self._threads += 1
        threading.Thread(target=self._loop, name=f"{self.name}-{id(job) & 0xFFFF:x}", daemon=True).start()

    @property
    def threads(self) -> int:
        with self._lock:
            return self._threads

    @property
    def busy(self) -> int:
        """Jobs running now."""
        with self._lock:
            return self._busy

    @property
    def queued(self) -> int:
        """Jobs waiting for a thread."""
        with self._lock:
            return len(self._queue)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no job runs or waits; False if `timeout` seconds pass first."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._busy and not self._queue, timeout)

    def _loop(self) -> None:
        lock = self._lock
        while True:
            with lock:
                if not self._queue:
                    self._idle += 1
                    lock.wait_for(lambda: bool(self._queue), self.idle_s)
                    self._idle -= 1
                    if not self._queue:
                        self._threads -= 1
                        return
                job = self._queue.popleft()
                self._busy += 1
            try:
                job()
            except Exception:  # a job's own bug: log it, keep the worker
                logger().exception("a pooled job raised")
            finally:
                with lock:
                    self._busy -= 1
                    lock.notify_all()
