"""Pinned test dependencies: a missing one FAILS the test that needs it, never skips it.

`pytest.importorskip` at module level skips every test of the module, and a skip reads as a pass in
CI. Call `require(...)` inside the tests that need the package instead (as tests/packaging/conftest.py
does for skills-ref); `require_tool` does the same for a program on PATH.
"""

from __future__ import annotations

import importlib
import shutil
from types import ModuleType

import pytest


def require(module: str, pin: str) -> ModuleType:
    """The imported module; pytest.fail when it is missing (`pip install -e ".[test]"` installs it)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"{pin} is a pinned test dependency and cannot be imported ({exc}); "
                    'install the test extras: pip install -e ".[test]"')


def require_tool(name: str, why: str) -> str:
    """The path of a program the test needs; pytest.fail when it is not on PATH."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is required ({why}) and is not on PATH")
    return found
