"""Static quality gates: ruff clean on the library, its tests, examples and benches; mypy --strict
clean on the library."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} is not installed next to {sys.executable}"
    return found


def test_ruff_clean() -> None:
    targets = ["mcp_agent_kit", "tests", "examples", "bench"]
    result = subprocess.run([tool("ruff"), "check", *targets], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "mcp_agent_kit"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
