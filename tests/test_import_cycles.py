"""No import cycles inside mcp_agent_kit: the graph of module-level imports is acyclic.

Imports inside functions (the lazy ones that keep start-up cheap) and under `if TYPE_CHECKING:`
are not edges: they never run while a module is being imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_agent_kit"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported (not in defs, not TYPE_CHECKING)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                found += _module_level(node.body)
            found += _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                found += _module_level(block)
        elif isinstance(node, ast.With):
            found += _module_level(node.body)
    return found


def _resolve(name: str) -> str | None:
    """The module of ours that importing `name` runs: itself, or the nearest package above it.
    (The parent packages a submodule import runs first are not edges: they are already importing.)"""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def edges_of(name: str, path: Path) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _module_level(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:  # `from pkg import module` needs the module; `from m import name`, m
            targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    resolved = {_resolve(target) for target in targets if target.split(".")[0] == "mcp_agent_kit"}
    return {target for target in resolved if target is not None and target != name}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = {name: edges_of(name, path) for name, path in MODULES.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    tasks = edges_of("mcp_agent_kit.core.tasks", MODULES["mcp_agent_kit.core.tasks"])
    assert tasks >= {"mcp_agent_kit.core.task_table", "mcp_agent_kit.core.call"}
    assert "mcp_agent_kit.core.legacy_tasks" not in tasks


def test_the_two_task_eras_do_not_import_each_other_even_lazily() -> None:
    """core.tasks and core.legacy_tasks share core.task_table; neither reaches for the other."""
    for mine, other in (("tasks", "legacy_tasks"), ("legacy_tasks", "tasks")):
        tree = ast.parse(MODULES[f"mcp_agent_kit.core.{mine}"].read_text(encoding="utf-8"))
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                 for alias in node.names}
        modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert other not in names and f"mcp_agent_kit.core.{other}" not in modules, mine
