"""bench/board_bench.py runs: a small run prints every number of both sides, the overhead and the ratio (no timing
asserted: the numbers only have to be there and be numbers)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "board_bench.py"
NUMBER = r"[-+]?\d+(?:\.\d+)?"


def test_the_board_bench_runs_and_prints_every_number() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--tasks", "4", "--concurrency", "2"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("board bench: 4 tasks through examples/acp_echo_agent.py, concurrency 2"), lines
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:4]}
    assert list(rows) == ["floor", "board"], lines
    assert all(len(cells) == 4 and all(float(cell) > 0 for cell in cells) for cells in rows.values()), rows
    assert re.fullmatch(rf"board overhead per task: {NUMBER} ms of slot time; ratio board/floor {NUMBER} "
                        rf"\(goal <= 1\.50: (met|NOT met)\)", lines[4]), lines[4]


def test_the_board_bench_refuses_a_bad_count() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--tasks", "0"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2 and "--tasks and --concurrency must be at least 1" in done.stderr


def test_the_hosts_mode_prints_every_cell_and_the_hops_goal() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--hosts", "--tasks", "2", "--concurrency", "2", "--turns", "2",
                           "--words", "20"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("board bench, hosts: 2 tasks through examples/acp_echo_agent.py, concurrency 2"), lines
    rows = {line[:8].strip(): line[8:].split() for line in lines[2:5]}
    assert list(rows) == ["here", "1 host", "2 hosts"], lines
    assert all(len(cells) == 2 and all(float(cell) > 0 for cell in cells) for cells in rows.values()), rows
    assert re.fullmatch(rf"host hop: {NUMBER} ms per agent update \(\d+ updates a turn, median of 2 turns\); "
                        rf"{NUMBER} ms per one-update turn \(goal < 2\.00 ms per update: (met|NOT met)\)",
                        lines[5]), lines[5]
