"""Fixtures for the scaffold tests: the kit's wheel, built once per session, and a local wheelhouse.

The wheelhouse holds what an offline `pip install --no-index --find-links HOUSE` needs besides the
kit: setuptools (a generated project's build backend) and the pinned pytest. Building from a copy
of the checkout keeps build outputs out of it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTEST_PIN = "pytest==9.2.0"


class KitWheel(NamedTuple):
    wheel: Path  # mcp_agent_kit-<version>-py3-none-any.whl
    house: Path  # setuptools and pytest wheels, for --no-index --find-links

    def offline(self) -> list[str]:
        return ["--no-index", "--find-links", str(self.house)]


def _run(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="session")
def kit_wheel(tmp_path_factory: pytest.TempPathFactory) -> KitWheel:
    work = tmp_path_factory.mktemp("kit-wheel")
    src = work / "src"
    shutil.copytree(
        ROOT, src, ignore=shutil.ignore_patterns(".venv*", ".git", "__pycache__", "build", "dist", "*.egg-info")
    )
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(work / "dist"), str(src)], work)
    house = work / "wheelhouse"
    _run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(house),
          "setuptools>=68", PYTEST_PIN], work)
    return KitWheel(next((work / "dist").glob("mcp_agent_kit-*.whl")), house)
