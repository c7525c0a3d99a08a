"""No import cycles inside mcp_agent_kit (DESIGN.md: "import cycles anywhere" is a never).

Two graphs. In the import-time graph, A -> B when module A imports module B while it is itself
being imported: at module level or in a class body, including `try:` blocks, but not inside
functions (those run later) nor under `if TYPE_CHECKING:` (never at run time). The full graph
adds both: a cycle broken only by a deferred import or by a type-only import is still two
modules that need each other (tests/test_layers.py forbids those too). `from pkg import name` is an edge
to the submodule `pkg.name` when there is one, else to `pkg`. The implicit import of a parent
package is not an edge (the parent is in sys.modules before any of its submodules starts;
counting it would flag every package whose __init__ re-exports its own modules).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.sources import parse

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_agent_kit"


def module_name(path: Path) -> str:
    parts = ["mcp_agent_kit", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(body: list[ast.stmt], *, lazy: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run while the module is imported; with lazy, also those in
    functions (run later) and under `if TYPE_CHECKING:` (never run): still dependencies."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not lazy:
            continue
        elif isinstance(node, ast.If) and _is_type_checking(node.test) and not lazy:
            yield from import_nodes(node.orelse, lazy=lazy)
        else:  # class and function bodies, if/try/with/for/match blocks: walk their statements
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from import_nodes([child], lazy=lazy)
                elif isinstance(child, ast.excepthandler | ast.match_case):
                    yield from import_nodes(child.body, lazy=lazy)


def edges_of(name: str, path: Path, *, lazy: bool) -> set[str]:
    is_package = path.name == "__init__.py"
    package = name.split(".") if is_package else name.split(".")[:-1]
    targets: set[str] = set()
    for node in import_nodes(parse(path.read_text(encoding="utf-8")).body, lazy=lazy):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package[: len(package) - node.level + 1]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            targets.add(sub if sub in MODULES else base)
    return {target for target in targets if target in MODULES and target != name} | (
        {name} if name in targets else set()
    )


def graph(*, lazy: bool = False) -> dict[str, set[str]]:
    return {name: edges_of(name, path, lazy=lazy) for name, path in MODULES.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One concrete cycle per strongly connected component (Tarjan), as [a, b, ..., a]."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                components.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_path_through(sorted(component), edges) for component in components]


def _path_through(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest cycle from the component's first module back to itself, inside the component."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(edges[node] & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if nxt not in previous:
                    previous[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - a component always has one


def test_the_cycle_finder_finds_and_prints_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(edges) == [["a", "b", "c", "a"], ["e", "e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_time_graph_skips_functions_and_type_checking_the_full_one_does_not() -> None:
    client, lazy = graph()["mcp_agent_kit.client.client"], graph(lazy=True)["mcp_agent_kit.client.client"]
    assert "mcp_agent_kit.client.stdio" not in client and "mcp_agent_kit.client.stdio" in lazy  # in Client.stdio()
    assert "mcp_agent_kit.client.channel" in client
    server, full = graph()["mcp_agent_kit.server"], graph(lazy=True)["mcp_agent_kit.server"]
    assert "mcp_agent_kit.store.base" not in server and "mcp_agent_kit.store.base" in full  # TYPE_CHECKING


def test_no_import_cycles_at_import_time() -> None:
    found = cycles(graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def test_no_import_cycles_through_lazy_or_type_only_imports_either() -> None:
    """A cycle broken only by moving an import into a function, or under `if TYPE_CHECKING:`, is
    still a cycle of dependencies: the shared piece belongs a layer down (a Protocol, a small type)."""
    found = cycles(graph(lazy=True))
    assert not found, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)
