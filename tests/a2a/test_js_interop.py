"""Interop with the official JS client (@a2a-js/sdk 1.3.0), when CI provides it.

Set A2A_JS_DIR to a directory where `npm install @a2a-js/sdk@1.3.0` was run; needs Node >= 20.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import Live

JS_DIR = os.environ.get("A2A_JS_DIR", "")
pytestmark = pytest.mark.skipif(
    not (shutil.which("node") and JS_DIR and (Path(JS_DIR) / "node_modules" / "@a2a-js" / "sdk").is_dir()),
    reason="set A2A_JS_DIR to a directory with @a2a-js/sdk@1.3.0 installed (CI step)",
)


def test_js_client(metrics: Live, tmp_path: Path) -> None:
    script = Path(JS_DIR) / "mcp_agent_kit_smoke.mjs"
    shutil.copy(Path(__file__).parent / "js" / "smoke.mjs", script)
    done = subprocess.run(["node", str(script), metrics.base], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["unaryState"] == "TASK_STATE_COMPLETED"
    assert out["unaryData"] == {"metric": "sum", "value": 42, "count": 2}
    assert out["streamCases"] == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert out["getState"] == "TASK_STATE_COMPLETED"
    assert "NotFound" in out["notFound"]
