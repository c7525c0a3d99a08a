"""Pinned test dependencies: a missing one FAILS the test that needs it, never skips it.

`pytest.importorskip` at module level skips every test of the module, and a skip reads as a pass in
CI. Call `require(...)` inside the tests that need the package instead (as tests/packaging/conftest.py
does for skills-ref); `require_tool` does the same for a program on PATH.

`npx_program` runs a pinned npm program the way `npx -y -p node@22 -p PKG -- PROGRAM` does (npx's
folder of programs first on PATH, so the program's `#!/usr/bin/env node` finds Node 22), but asks npx
for that folder once per process: a new npx per call costs a Node start and a package resolution.
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import subprocess
from pathlib import Path
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


@functools.cache
def _npx_folder(packages: tuple[str, ...], program: str) -> Path:
    npx = require_tool("npx", f"Node's npx runs the pinned {' '.join(packages)}")
    flags = [flag for package in packages for flag in ("-p", package)]
    done = subprocess.run([npx, "-y", *flags, "--", "sh", "-c", f'command -v "{program}"'],
                          capture_output=True, text=True, timeout=600, check=False)
    found = Path(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else None
    if found is None or not (found.parent / "node").exists():
        pytest.fail(f"npx -y {' '.join(flags)} did not provide {program} and its node: {done.stderr.strip()[-2000:]}")
    return found.parent


def npx_program(program: str, *packages: str) -> tuple[list[str], dict[str, str]]:
    """(command, environment) that run `npx -y -p P1 -p P2 -- program`'s program: its argv start and PATH.

    Append the program's arguments to the command; run it with the environment (npx's folder first on PATH).
    """
    folder = _npx_folder(packages, program)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}
    return [str(folder / program)], env
