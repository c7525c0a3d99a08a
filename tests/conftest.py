"""Fixtures for every test directory: the legacy (mcp 1.x) interpreter.

The legacy oracle is the official SDK's 1.x line in its own virtualenv: set
MCP_AGENT_KIT_LEGACY_PYTHON to its interpreter, or the fixture creates `.venv-mcp1` at the
repository root (pip install mcp==1.30.0) on first use.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LEGACY_PIN = "mcp==1.30.0"


@pytest.fixture(scope="session")
def legacy_python() -> str:
    configured = os.environ.get("MCP_AGENT_KIT_LEGACY_PYTHON")
    if configured:
        return configured
    venv = ROOT / ".venv-mcp1"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", LEGACY_PIN], check=True)
    return str(python)
