"""hosts.usage: what a running agent costs — resident memory and CPU seconds of its process tree, from /proc.

`tree_usage(pid)` sums the process and every descendant (found by parent pid, so a sandboxed agent that
bwrap put in a new session counts too): `{"pids", "rss_bytes", "cpu_seconds"}`. Where /proc cannot be read
(not Linux) the numbers are None. Rules: reads /proc only; never raises for a process that went away.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["tree_usage"]

try:
    TICKS = os.sysconf("SC_CLK_TCK")
    PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):  # not POSIX
    TICKS, PAGE = 100, 4096


def _stat(pid: str) -> tuple[int, int, int] | None:
    """(parent pid, CPU ticks, resident pages) of one process; None when it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if len(fields) < 22 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[21])


def tree_usage(pid: int) -> dict[str, Any]:
    """Resident bytes and CPU seconds (user + system) of `pid` and its descendants, and their pids."""
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return {"pids": [pid], "rss_bytes": None, "cpu_seconds": None}
    stats = {int(entry): found for entry in entries if (found := _stat(entry)) is not None}
    children: dict[int, list[int]] = {}
    for child, (parent, _, _) in stats.items():
        children.setdefault(parent, []).append(child)
    tree, todo = [], [pid] if pid in stats else []
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, ()))
    return {"pids": sorted(tree), "rss_bytes": sum(stats[p][2] for p in tree) * PAGE,
            "cpu_seconds": round(sum(stats[p][1] for p in tree) / TICKS, 2)}
