"""Qwen Code (npm @qwen-code/qwen-code, pinned) for the tests that drive it for real, offline.

`install_qwen()` is the one policy every such test follows: ACP_QWEN_DIR names a directory where
`npm install @qwen-code/qwen-code@<pin>` was run (.ci/run does it at set-up); without it the pin is
installed once into `.venv-acp-qwen/` at the repository root, under a lock so that pytest-xdist workers
install it once. A missing Node, a wrong version in ACP_QWEN_DIR or a failed install FAILS the test: a
pinned peer is never a silent skip. The model is `tests/acp/fake_openai.py` on loopback, so nothing
leaves the machine; QUIET_SETTINGS is the `~/.qwen/settings.json` that keeps Qwen offline and quiet.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.locks import exclusive
from tests.pinned import require_tool

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.24.4"
PIN = f"@qwen-code/qwen-code@{VERSION}"
AGENT_ARGS = ["--acp", "--approval-mode", "default"]  # "default": file edits ask permission

# Qwen's own settings (~/.qwen/settings.json): no update checks, usage statistics, telemetry, follow-up
# suggestions or memory extraction -- the last two are extra model calls after every turn.
QUIET_SETTINGS = {
    "$version": 4,
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "ui": {"enableFollowupSuggestions": False},
    "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
}


def install_qwen() -> Path:
    """The `qwen` program of the pinned Qwen Code, installed when missing (see the module docstring)."""
    require_tool("node", f"Qwen Code {PIN} runs on Node")
    configured = os.environ.get("ACP_QWEN_DIR", "")
    folder = Path(configured) if configured else ROOT / ".venv-acp-qwen"
    manifest = folder / "node_modules" / "@qwen-code" / "qwen-code" / "package.json"

    def installed() -> str:
        return str(json.loads(manifest.read_text()).get("version")) if manifest.is_file() else ""

    with exclusive(ROOT / ".venv-locks" / "acp-qwen"):  # pytest-xdist workers: one installs, the others wait
        if installed() != VERSION:
            if configured:
                pytest.fail(f"ACP_QWEN_DIR={configured} has no {PIN} (found {installed() or 'nothing'}): "
                            f"run npm install --prefix DIR {PIN}")
            npm = require_tool("npm", f"installing {PIN}")
            done = subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(folder), PIN],
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0 or installed() != VERSION:
                pytest.fail(f"npm install {PIN} failed ({done.returncode}): {done.stderr[-2000:]}")
    return folder / "node_modules" / ".bin" / "qwen"


def agent_processes(marker: str) -> dict[int, int]:
    """pid -> process group of every live process whose environment carries ACP_TEST_MARKER=marker."""
    needle = f"ACP_TEST_MARKER={marker}".encode()
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if needle in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                found[int(name)] = os.getpgid(int(name))
        except OSError:  # gone meanwhile, a zombie, or not ours
            continue
    return found
