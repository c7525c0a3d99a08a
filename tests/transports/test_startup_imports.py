"""A stdio server that answers plain calls never loads the heavy standard modules it can do
without (they cost milliseconds at start, which hosts pay on every launch)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "metrics_server.py"
HEAVY = ("logging", "asyncio", "concurrent.futures", "uuid", "argparse", "hashlib", "hmac", "datetime")
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def test_plain_calls_load_no_heavy_modules(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(f"""
        import atexit, runpy, sys
        sys.path.insert(0, {str(ROOT)!r})
        atexit.register(lambda: print("HEAVY=" + ",".join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr))
        runpy.run_path({str(EXAMPLE)!r})["server"].run([])
    """))
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"_meta": META, "name": "calculate_metrics", "arguments": {"values": [1, 2]}}},
    ]
    done = subprocess.run([sys.executable, str(script)], input="".join(json.dumps(m) + "\n" for m in lines),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [reply["id"] for reply in replies] == [1, 2, 3] and all("result" in reply for reply in replies)
    heavy = [line for line in done.stderr.splitlines() if line.startswith("HEAVY=")]
    assert heavy == ["HEAVY="], heavy
