"""pool: a bounded pool of daemon worker threads, started on demand.

Rules: at most `size` threads ever run; a thread starts only when work waits and no thread is
idle; daemon threads, so a handler stuck on a client never keeps the process from exiting.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("mcp_agent_kit.httpd")


class Pool:
    def __init__(self, size: int, name: str) -> None:
        self._size = max(1, size)
        self._name = name
        self._queue: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self.busy = 0  # submitted and not yet finished

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            self.busy += 1
            spawn = self._idle == 0 and self._threads < self._size
            if spawn:
                self._threads += 1
            else:
                self._idle -= 1 if self._idle else 0
        self._queue.put((fn, args))
        if spawn:
            threading.Thread(target=self._run, name=f"{self._name}-{self._threads}", daemon=True).start()

    def _run(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is None:
                with self._lock:
                    self._threads -= 1
                return
            fn, args = item
            try:
                fn(*args)
            except BaseException:
                log.exception("worker failed")
            with self._lock:
                self.busy -= 1
                self._idle += 1

    def stop(self) -> None:
        """Idle threads exit; busy ones exit after their current work."""
        with self._lock:
            count = self._threads
        for _ in range(count):
            self._queue.put(None)
