"""Start several child processes' work at one moment, for races that must really race.

Each child, once set up, writes the line READY to its stdout and waits for a line on its stdin
(`READY_THEN_WAIT` is that code); `release(procs)` waits (bounded) until every child said it is
ready, then gives them all their line. The children need stdin and stdout pipes in text mode;
whatever they print after READY is read as usual (`communicate`).
"""

from __future__ import annotations

import selectors
import subprocess
import time
from typing import Any

READY = "ready"
READY_THEN_WAIT = f"print({READY!r}, flush=True); sys.stdin.readline()"
"""Python for the child (it must have imported sys): say it is ready, then wait for its line."""


def release(procs: list[subprocess.Popen[Any]], seconds: float = 60.0) -> None:
    """Once every child said READY (AssertionError after `seconds`), send each its line."""
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as waiting:
        for proc in procs:
            waiting.register(proc.stdout.fileno() if proc.stdout else -1, selectors.EVENT_READ, proc)
        while waiting.get_map():
            left = deadline - time.monotonic()
            assert left > 0, f"{len(waiting.get_map())} of {len(procs)} children never said {READY}"
            for key, _ in waiting.select(left):
                child: subprocess.Popen[Any] = key.data
                line = child.stdout.readline() if child.stdout else ""
                assert line.strip() == READY, f"a child said {line!r} instead of {READY}: {child.args}"
                waiting.unregister(key.fileobj)
    for proc in procs:
        if proc.stdin:
            proc.stdin.write("go\n")
            proc.stdin.flush()
