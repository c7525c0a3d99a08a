"""turns.clock: one timer thread for every turn's deadline and cancel grace — no thread per turn, no poll.

`at(when, fn)` runs `fn()` on the clock's one thread (named `turns-clock`) once the monotonic time
`when` has come (at once when it has), and returns the function that drops the entry again. The
thread waits on a condition until the earliest entry is due (an earlier entry added wakes it), and
ends when no entry is left; the next `at` starts it again. Entries run one at a time, outside the
lock, and must be quick: one that has to block (stopping an agent's process) starts its own
short-lived thread. A failing entry is logged and the clock goes on. Rules: standard library only.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("mcp_agent_kit.turns")
THREAD_NAME = "turns-clock"


class Clock:
    """A heap of (when, fn) entries served by one thread (see the module docstring)."""

    def __init__(self, name: str = THREAD_NAME) -> None:
        self.name = name
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._live: set[int] = set()  # the entries in the heap
        self._dropped: set[int] = set()  # of those, the ones dropped before they ran
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._running = False

    def at(self, when: float, fn: Callable[[], None]) -> Callable[[], None]:
        """Run `fn()` at monotonic time `when`; returns the function that drops it (a no-op once it ran)."""
        with self._cond:
            number = next(self._order)
            heapq.heappush(self._heap, (when, number, fn))
            self._live.add(number)
            if not self._running:
                self._running = True
                threading.Thread(target=self._serve, name=self.name, daemon=True).start()
            elif self._heap[0][1] == number:
                self._cond.notify()  # the new entry is the earliest: the thread's wait is too long now

        def drop() -> None:
            with self._cond:
                if number in self._live:
                    self._dropped.add(number)
                    self._cond.notify()  # the thread may be waiting for it: it ends when nothing else is left

        return drop

    def after(self, seconds: float, fn: Callable[[], None]) -> Callable[[], None]:
        """`at(now + seconds, fn)`."""
        return self.at(time.monotonic() + seconds, fn)

    @property
    def pending(self) -> int:
        """How many entries wait to run (dropped ones not counted)."""
        with self._cond:
            return len(self._heap) - len(self._dropped)

    def _serve(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][1] in self._dropped:
                        dropped = heapq.heappop(self._heap)[1]
                        self._dropped.discard(dropped)
                        self._live.discard(dropped)
                    if not self._heap:
                        self._running = False
                        return
                    left = self._heap[0][0] - time.monotonic()
                    if left <= 0:
                        _, number, fn = heapq.heappop(self._heap)
                        self._live.discard(number)
                        break
                    self._cond.wait(left)
            try:
                fn()
            except Exception as exc:  # one failing entry must not stop every other turn's timers
                log.warning("a turn timer failed: %r", exc)


CLOCK = Clock()  # the one clock every turn of the process shares
