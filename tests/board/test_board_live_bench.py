"""bench/board_live_bench.py runs: its quick mode prints the table with every cell, each with numbers and a
verdict (no timing asserted: the numbers only have to be there; PASS or FAIL is the bench's business).
Chromium's cells may say SKIP only where /usr/bin/chromium is missing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.pinned import require

BENCH = Path(__file__).resolve().parents[2] / "bench" / "board_live_bench.py"
CHROMIUM = Path("/usr/bin/chromium")
BROWSER_CELLS = ("a.page.dom", "a.page.msg", "c.fcp", "c.columns", "c.cards")
CELLS = ("a.page.dom", "a.page.msg", "a.kit", "a.websockets", "b.rss", "b.threads", "b.get", "b.status", "b.update",
         "c.bytes", "c.fcp", "c.columns", "c.cards")
NUMBER = r"\d+(?:\.\d+)?"
# cell -> what its measured column must hold (a row that was measured)
SHAPES = {
    **{cell: rf"p50 {NUMBER}  p95 {NUMBER}  p99 {NUMBER} ms; floor p95 {NUMBER} ms, x{NUMBER}"
       for cell in ("a.page.dom", "a.page.msg", "a.kit", "a.websockets")},
    "b.rss": rf"-?{NUMBER} KiB \({NUMBER} -> {NUMBER} MiB\)",
    "b.threads": rf"{NUMBER} -> {NUMBER} \([-+]{NUMBER}\)",
    **{cell: rf"p50 {NUMBER}  p95 {NUMBER}  p99 {NUMBER} ms; without p95 {NUMBER} ms"
       for cell in ("b.get", "b.status")},
    "b.update": rf"p50 {NUMBER}  p95 {NUMBER}  p99 {NUMBER} ms",
    "c.bytes": rf"{NUMBER} KB \(html {NUMBER}, js {NUMBER}, css {NUMBER}\)",
    **{cell: rf"p50 {NUMBER}  p95 {NUMBER}  max {NUMBER} ms" for cell in ("c.fcp", "c.columns", "c.cards")},
}


def test_the_quick_live_bench_prints_every_cell() -> None:
    require("websockets", "websockets==17.4")
    done = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("board live bench: loopback, "), lines
    assert "20 updates (+5 warm-up), 100 subscribers, 20 samples, 2 page loads" in lines[0], lines[0]
    assert lines[1].split() == ["cell", "what", "measured", "goal", "result"], lines[1]
    rows = {line.split()[0]: line for line in lines[2:]}
    assert tuple(rows) == CELLS, lines
    for cell, line in rows.items():
        verdict = line.split()[-1]
        if verdict == "SKIP":
            assert cell in BROWSER_CELLS and not CHROMIUM.is_file(), line
            assert "not measured: no Chromium" in line, line
            continue
        assert verdict in ("PASS", "FAIL"), line
        assert re.search(SHAPES[cell], line), (cell, line)


def test_the_live_bench_refuses_a_bad_count() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--subscribers", "0"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and "--subscribers must be at least 1" in done.stderr, done.stderr
