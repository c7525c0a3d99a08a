"""loglimit: keep a noisy peer out of the log, a token bucket of lines per peer, each line truncated.

A LineLimiter stands between one peer (a backend's stderr, its non-JSON stdout lines) and a
logger: up to `burst` lines at once, then `rate` lines a second; the lines beyond are counted, and
one "suppressed K lines" record is written when the bucket lets a line through again (or at
flush()). Every line is cut to `max_chars` characters. So a peer flooding junk costs at most
about rate x (max_chars + a label) bytes of log a second, however fast it writes. Rules: standard
library only; thread-safe (a peer's stdout and stderr readers share one limiter); never raises.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

RATE = 10.0
"""Lines a second let through per peer, once the burst is spent."""
BURST = 20
"""Lines let through at once."""
MAX_CHARS = 1000
"""Characters kept of one line; the rest is replaced by a note of the line's length."""


def truncate(text: str, max_chars: int = MAX_CHARS) -> str:
    """text, cut to max_chars characters with a note of how long it was."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}... (cut, {len(text)} chars)"


class LineLimiter:
    """Lets a peer's lines into a logger at a bounded rate, each cut to a bounded length."""

    def __init__(
        self,
        logger: logging.Logger,
        label: str,
        *,
        rate: float = RATE,
        burst: int = BURST,
        max_chars: int = MAX_CHARS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.label = label
        self.rate = rate
        self.burst = burst
        self.max_chars = max_chars
        self.seen = 0
        """Lines offered so far (logged or not)."""
        self.suppressed = 0
        """Lines dropped since the last summary."""
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def line(self, level: int, what: str, text: str) -> bool:
        """Log `label what: text` unless the bucket is empty; True when it was logged."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
            self._last = now
            self.seen += 1
            if self._tokens < 1.0:
                self.suppressed += 1
                return False
            self._tokens -= 1.0
            summary, self.suppressed = self.suppressed, 0
        if summary:
            self._summary(summary)
        if self.logger.isEnabledFor(level):
            self.logger.log(level, "%s %s: %s", self.label, what, truncate(text, self.max_chars))
        return True

    def flush(self) -> None:
        """Write the summary of lines suppressed since the last one, if any."""
        with self._lock:
            summary, self.suppressed = self.suppressed, 0
        if summary:
            self._summary(summary)

    def _summary(self, count: int) -> None:
        self.logger.warning("%s: suppressed %d lines (more than %g a second)", self.label, count, self.rate)
