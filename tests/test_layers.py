"""The layering rules of DESIGN.md, checked on the import statements of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_agent_kit"

# layer -> the layers of ours it must never import
FORBIDDEN: dict[str, set[str]] = {
    "wire": {"core", "transports", "client", "a2a", "packaging", "scaffold", "server", "__main__", "loader"},
    "core": {"transports", "client", "a2a", "packaging", "scaffold", "server", "__main__"},
    "packaging": {"core", "transports", "client", "a2a", "scaffold", "server", "__main__"},
    "httpd": {"wire", "core", "transports", "client", "a2a", "packaging", "scaffold", "server", "__main__", "loader"},
    "transports": {"client", "a2a", "packaging", "scaffold", "__main__"},
    "client": {"transports", "a2a", "packaging", "scaffold", "__main__", "core.dispatcher", "core.methods"},
    "a2a": {"transports", "client", "packaging", "scaffold", "__main__"},
    "scaffold": {"__main__"},
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name.removeprefix("mcp_agent_kit.") for name in found if name.startswith("mcp_agent_kit.")}


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_respects_the_layers(path: Path) -> None:
    forbidden = FORBIDDEN.get(layer_of(path), set())
    bad = sorted(
        name for name in imported_modules(path)
        if any(name == layer or name.startswith(layer + ".") for layer in forbidden)
    )
    # The gateway is a server built from client parts: DESIGN allows it to build a Server.
    if path.name == "gateway.py":
        bad = [name for name in bad if name not in ("server", "server.Server")]
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_nothing_imports_the_cli() -> None:
    for path in MODULES:
        assert "__main__" not in imported_modules(path), path
