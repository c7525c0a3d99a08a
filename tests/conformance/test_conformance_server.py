"""The public MCP conformance suite (server leg) against examples/everything_server.py over HTTP.

Every scenario the suite runs must pass, scored and not scored alike; there is no
expected-failures file. Needs npx (Node 22 is fetched from the npm registry by npx itself).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.net import free_port

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_SCENARIOS = {"2026-07-28": 50, "2025-11-25": 33}


@pytest.mark.parametrize("requirements", sorted(EXPECTED_SCENARIOS))
def test_every_scenario_passes(requirements: str, tmp_path: Path) -> None:
    assert shutil.which("npx"), "npx is needed to run the MCP conformance suite"
    env = dict(os.environ, PYTHON=sys.executable, CONFORMANCE_PORT=str(free_port()), CONFORMANCE_OUT=str(tmp_path))
    done = subprocess.run(
        ["bash", str(ROOT / "tests/conformance/run_conformance.sh"), requirements],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    planned = re.search(r"Running requirements \S+ \((\d+) scenarios\)", output)
    assert planned and int(planned.group(1)) == EXPECTED_SCENARIOS[requirements], output[-2000:]
    passed = re.findall(r"^✓ ([\w-]+): (\d+) passed, 0 failed$", output, re.MULTILINE)
    failed = re.findall(r"^✗ .*$", output, re.MULTILINE)
    assert not failed, failed
    assert len(passed) == EXPECTED_SCENARIOS[requirements], (len(passed), output[-2000:])
    total = re.search(r"^Total: (\d+) passed, (\d+) failed$", output, re.MULTILINE)
    assert total and int(total.group(1)) > 0 and total.group(2) == "0", output[-2000:]
    expected = EXPECTED_SCENARIOS[requirements]
    print(f"conformance {requirements}: {len(passed)}/{expected} scenarios, {total.group(1)} checks")
    if requirements == "2025-11-25":  # resumable streams: these SHOULD checks succeed, not just pass as INFO
        checks = json.loads(next(tmp_path.glob("2025-11-25/server-server-sse-polling-*/checks.json")).read_text())
        verdicts = {check["id"]: check["status"] for check in checks}
        for check in ("server-sse-priming-event", "server-sse-retry-field", "server-sse-disconnect-resume"):
            assert verdicts.get(check) == "SUCCESS", (check, verdicts)
