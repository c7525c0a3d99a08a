"""Time `create-mcp-agent NAME` end to end (process start to exit), against a bare interpreter start.

Run: python bench/create_bench.py [--runs 7]. Prints the median of each and the ratio.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mcp_agent_kit")], check=True)
    bare, create = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for run in range(args.runs):
            bare.append(timed([sys.executable, "-c", "pass"], work))
            command = [sys.executable, "-m", "mcp_agent_kit", "new", "--no-install", f"bench-agent{run}"]
            create.append(timed(command, work))
            shutil.rmtree(work / f"bench-agent{run}")
    floor, ours = statistics.median(bare), statistics.median(create)
    print(f"create-mcp-agent bench: {args.runs} runs (median)")
    print(f"bare interpreter start   {floor * 1e3:7.1f} ms")
    print(f"create-mcp-agent NAME    {ours * 1e3:7.1f} ms   ({ours / floor:.1f}x a bare start)")


if __name__ == "__main__":
    main()
