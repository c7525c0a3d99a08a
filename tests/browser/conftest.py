"""Fixtures for the browser tests: one headless Chromium per pytest-xdist worker, a fresh page per test.

`chromium` starts once per worker process (session scope: starting a browser is the expensive part) and
FAILS every test that uses it when /usr/bin/chromium is missing (apt-get install chromium). `page` is a tab in
a new browser context, so cookies and storage never leak between tests; when the test ends its last state is
kept as a screenshot, one per test, under `artifacts_dir()`: `$MCP_AGENT_KIT_ARTIFACTS/browser`, else
`.artifacts/browser/` at the repository root (gitignored), named after the test's node id.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.cdp import Browser, CdpError, Page, require_chromium
from tests.pinned import require

ROOT = Path(__file__).resolve().parents[2]


def artifacts_dir() -> Path:
    configured = os.environ.get("MCP_AGENT_KIT_ARTIFACTS", "")
    return Path(configured) / "browser" if configured else ROOT / ".artifacts" / "browser"


def artifact_name(nodeid: str) -> str:
    """A file name for a test's node id: `tests/browser/test_x.py::test_y[a]` -> `test_x.test_y_a_.png`."""
    path, _, name = nodeid.partition("::")
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{Path(path).stem}.{name}") + ".png"


@pytest.fixture(scope="session")
def chromium() -> Iterator[Browser]:
    """This worker's headless Chromium."""
    require("websockets", "websockets==17.4")
    browser = Browser.launch(require_chromium())
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def page(chromium: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh tab in its own browser context; its last state is saved as the test's screenshot."""
    tab = chromium.new_page(artifact=artifacts_dir() / artifact_name(request.node.nodeid))
    try:
        yield tab
    finally:
        try:
            tab.screenshot()
        except CdpError as exc:  # the browser failed under the test: the test's own failure tells the story
            warnings.warn(f"no screenshot for {request.node.nodeid}: {exc}", stacklevel=1)
        tab.close()
