"""Interop with the official JS client (@a2a-js/sdk 1.3.0); needs Node >= 20.

A2A_JS_DIR names a directory where `npm install @a2a-js/sdk@1.3.0` was run (.ci/run does it at
set-up). Without it the fixture installs the pin once into `.venv-a2a-js/` at the repository root.
A missing Node or a failed install FAILS the test: a pinned peer is never a silent skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.locks import exclusive
from tests.pinned import require_tool

from .conftest import ROOT, Live

PIN = "@a2a-js/sdk@1.3.0"


@pytest.fixture(scope="session")
def js_dir() -> Path:
    require_tool("node", f"the JS A2A client {PIN} runs on Node >= 20")
    configured = os.environ.get("A2A_JS_DIR", "")
    folder = Path(configured) if configured else ROOT / ".venv-a2a-js"
    with exclusive(ROOT / ".venv-locks" / "a2a-js"):  # pytest-xdist workers: one installs, the others wait
        if not (folder / "node_modules" / "@a2a-js" / "sdk").is_dir():
            if configured:
                pytest.fail(f"A2A_JS_DIR={configured} has no node_modules/@a2a-js/sdk: run npm install {PIN} there")
            npm = require_tool("npm", f"installing {PIN}")
            done = subprocess.run([npm, "install", "--silent", "--prefix", str(folder), PIN],
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                pytest.fail(f"npm install {PIN} failed ({done.returncode}): {done.stderr[-2000:]}")
    return folder


def test_js_client(metrics: Live, js_dir: Path) -> None:
    script = js_dir / "mcp_agent_kit_smoke.mjs"
    shutil.copy(Path(__file__).parent / "js" / "smoke.mjs", script)
    done = subprocess.run(["node", str(script), metrics.base], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["unaryState"] == "TASK_STATE_COMPLETED"
    assert out["unaryData"] == {"metric": "sum", "value": 42, "count": 2}
    assert out["streamCases"] == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert out["getState"] == "TASK_STATE_COMPLETED"
    assert "NotFound" in out["notFound"]
