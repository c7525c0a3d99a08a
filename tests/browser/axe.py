"""Accessibility scans with axe-core (npm, pinned) in a page driven by tests/browser/cdp.py.

Where axe-core comes from: AXE_CORE_JS names its `axe.min.js` (.ci/run installs the pin into a temp dir and
exports it); without it the pin is installed once into `.venv-axe-core/` at the repository root, under a lock
so that pytest-xdist workers install it once. A missing npm, a wrong version or a failed install FAILS the test:
a pinned peer is never a silent skip.

`scan(page)` injects axe (once per document) and returns `axe.run()`'s violations, trimmed to what a person
reads: rule id, impact, help, and the offending nodes. `assert_accessible(page)` fails on any `serious` or
`critical` one, listing them one per line.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.browser.cdp import Page
from tests.locks import exclusive
from tests.pinned import require_tool

ROOT = Path(__file__).resolve().parents[2]
VERSION = "4.10.3"
PIN = f"axe-core@{VERSION}"
BLOCKING = ("serious", "critical")

RUN_JS = """axe.run(%s, %s).then(result => result.violations.map(v => ({
  id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
  nodes: v.nodes.map(n => ({target: n.target, html: n.html, summary: n.failureSummary})),
})))"""


def _version_at(script: Path) -> str:
    manifest = script.parent / "package.json"
    return str(json.loads(manifest.read_text()).get("version")) if manifest.is_file() else ""


@functools.cache
def axe_source() -> str:
    """The text of the pinned axe.min.js, installed when missing (see the module docstring)."""
    configured = os.environ.get("AXE_CORE_JS", "")
    if configured:
        script = Path(configured)
        if not script.is_file() or _version_at(script) != VERSION:
            pytest.fail(f"AXE_CORE_JS={configured} is not {PIN}'s axe.min.js (found "
                        f"{_version_at(script) or 'nothing'}): run npm install --prefix DIR {PIN}", pytrace=False)
        return script.read_text()
    folder = ROOT / ".venv-axe-core"
    script = folder / "node_modules" / "axe-core" / "axe.min.js"
    with exclusive(ROOT / ".venv-locks" / "axe-core"):  # pytest-xdist workers: one installs, the others wait
        if _version_at(script) != VERSION or not script.is_file():
            npm = require_tool("npm", f"installing {PIN}")
            done = subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(folder), PIN],
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0 or _version_at(script) != VERSION:
                pytest.fail(f"npm install {PIN} failed ({done.returncode}): {done.stderr[-2000:]}", pytrace=False)
    return script.read_text()


def scan(page: Page, context: str = "document", options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """axe.run(context, options)'s violations in the page's current document (axe injected when absent)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(axe_source() + "\n;undefined", by_value=False)
        version = page.evaluate("axe.version")
        assert version == VERSION, f"the page runs axe {version}, not the pinned {VERSION}"
    settings = {"resultTypes": ["violations"], **(options or {})}
    violations: list[dict[str, Any]] = page.evaluate(RUN_JS % (context, json.dumps(settings)), timeout=60)
    return violations


def report(violations: list[dict[str, Any]]) -> str:
    """One line per violation and one per offending node, for an assertion message."""
    lines = []
    for violation in violations:
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']} -- {violation['helpUrl']}")
        lines.extend(f"    {', '.join(map(str, node['target']))}: {node['html'][:160]}" for node in violation["nodes"])
    return "\n".join(lines)


def assert_accessible(page: Page, context: str = "document", impacts: tuple[str, ...] = BLOCKING) -> None:
    """AssertionError listing every violation of impact in `impacts` (serious or critical by default)."""
    found = [violation for violation in scan(page, context) if violation["impact"] in impacts]
    assert not found, f"axe-core {VERSION} found {len(found)} {'/'.join(impacts)} violation(s):\n{report(found)}"
