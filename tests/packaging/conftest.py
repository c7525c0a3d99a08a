"""Shared helpers for the packaging tests: the skills-ref oracle and skill directory makers."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ORACLE_VERSION = "0.1.1"


def load_oracle() -> ModuleType:
    """skills-ref's validator module; a missing oracle FAILS the test (CI installs it)."""
    try:
        module = importlib.import_module("skills_ref")
    except ImportError:  # pragma: no cover - only on a misconfigured machine
        pytest.fail(f"skills-ref=={ORACLE_VERSION} is required for the oracle tests")
    version = getattr(module, "__version__", None)
    if version != ORACLE_VERSION:  # pragma: no cover
        pytest.fail(f"skills-ref {version} installed; the oracle tests pin {ORACLE_VERSION}")
    return module


@pytest.fixture(scope="session")
def oracle() -> Callable[[Path], list[str]]:
    """``oracle(path)`` -> skills-ref's error list (empty means skills-ref accepts)."""
    module = load_oracle()

    def validate(path: Path) -> list[str]:
        result: list[str] = module.validate(path)
        return result

    return validate


@pytest.fixture(scope="session")
def oracle_module() -> ModuleType:
    """The skills_ref package itself (``read_properties`` etc.)."""
    return load_oracle()


SkillMaker = Callable[..., Path]


@pytest.fixture
def make_skill(tmp_path: Path) -> SkillMaker:
    """``make_skill(dir_name, text, files={relpath: text}, skill_md="SKILL.md")`` -> skill dir."""

    def make(
        dir_name: str,
        text: str | bytes,
        files: dict[str, str] | None = None,
        skill_md: str = "SKILL.md",
    ) -> Path:
        root = tmp_path / "skills" / dir_name
        root.mkdir(parents=True)
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        (root / skill_md).write_bytes(data)
        for rel, content in (files or {}).items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        return root

    return make
