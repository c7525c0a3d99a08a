"""Shared OAuth test peers: the official SDK's protected server (sdk_protected_server.py) in a
subprocess, over Streamable HTTP (mcp 2.x, this venv) or the 2024-11-05 HTTP+SSE transport
(mcp 1.x, the legacy oracle)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.net import serving

SERVER = Path(__file__).with_name("sdk_protected_server.py")


def serve_protected(expires_in: int, python: str = sys.executable, sse: bool = False) -> Iterator[str]:
    """Run the protected server until the generator is closed; yields the MCP URL."""
    with serving(lambda port: [python, str(SERVER), str(port), str(expires_in), *(["sse"] if sse else [])],
                 f"http://127.0.0.1:{{port}}/{'sse' if sse else 'mcp'}") as url:
        yield url


@pytest.fixture(scope="session")
def protected() -> Iterator[str]:
    """One long-lived-token protected server for every test that only logs in and calls tools."""
    yield from serve_protected(3600)
