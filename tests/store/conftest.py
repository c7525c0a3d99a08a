"""Store URLs for the contract tests: every backend (`store_url`), the ones processes share (`shared_url`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_agent_kit.store import Store, open_store


def url_for(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if backend == "memory":
        return "memory:"
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'kit.db'}"  # tmp_path is absolute: sqlite:////...
    return str(request.getfixturevalue("pg_url"))  # a fresh database on the session's server


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return url_for(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return url_for(request.param, request, tmp_path)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def shared_store(shared_url: str) -> Iterator[Store]:
    opened = open_store(shared_url)
    yield opened
    opened.close()
