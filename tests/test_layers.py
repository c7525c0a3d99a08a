"""The layering rules of DESIGN.md, checked on the import statements of every module.

Every import counts, also the ones inside functions (a lazy import is still a dependency) and
under `if TYPE_CHECKING:`, and together they may form no circle. Two kinds of rule: a layer's
forbidden layers, and for client/ and the gateway the complete list of what they may import (an
allowlist, with no exemptions).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.sources import parse

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_agent_kit"
ROOT = "(package root)"  # `from mcp_agent_kit import X`: the lazy public facade, which may load anything

# layer -> the layers of ours it must never import
FORBIDDEN: dict[str, set[str]] = {
    "wire": {"core", "transports", "client", "gateway", "httpd", "a2a", "packaging", "scaffold", "server",
             "__main__", "loader"},
    "core": {"transports", "client", "gateway", "httpd", "a2a", "packaging", "scaffold", "server", "__main__"},
    "packaging": {"core", "transports", "gateway", "httpd", "a2a", "scaffold", "server", "__main__"},
    "httpd": {"wire", "core", "transports", "client", "gateway", "a2a", "packaging", "scaffold", "server",
              "__main__", "loader"},
    "transports": {"client", "gateway", "a2a", "packaging", "scaffold", "__main__"},
    "a2a": {"transports", "client", "gateway", "packaging", "scaffold", "__main__"},
    "scaffold": {"__main__"},
}

# layer -> the only layers of ours it may import (its own included)
ALLOWED: dict[str, set[str]] = {
    "wire": {"wire"},
    # The client talks to servers; it knows the wire and nothing of the server side or the CLI.
    "client": {"client", "wire", "auth", "process", "line_peer"},
    # The one child-process manager (process group, minimal environment, SIGTERM then SIGKILL): the
    # lowest layer that may do I/O, below both client/ and acp/, so every spawned peer goes through it.
    "process": {"process"},
    # bubblewrap's command line for a sandboxed agent (`"sandbox": "bwrap"`): builds argv, starts nothing.
    "sandbox": {"sandbox"},
    # The one threaded JSON-RPC line peer (reader, writer lock, concurrency) over wire.peer's sans-IO part:
    # under the MCP stdio server and client and both ACP ends, so beside process, below client/ and acp/.
    "line_peer": {"line_peer", "wire"},
    # OAuth: token validation and metadata documents, pure and standard library; the servers call it.
    "auth": {"auth"},
    # Records that outlive a request, for one or many replicas: no protocol, nothing of ours.
    "store": {"store"},
    # Running git and a checkout's changes (diff, commit): protocol-free, shared by the board and the agent host.
    "gitwork": {"gitwork"},
    # The gateway builds a Server from client parts and serves it; its cli.py is a front door.
    "gateway": {"gateway", "client", "server", "core", "wire", "transports", "cli_common", "safefile",
                "store",  # agent sessions on a shared store (gateway --store URL)
                "a2a",  # the A2A client (a2a/client.py) and wire facts, for the agents-as-tools A2A backend
                "acp",  # the ACP client, for the agents-as-tools ACP backend
                "turns",  # the one turn engine the ACP backend drives its turns with
                "sandbox"},  # an acp entry's `"sandbox": "bwrap"` keys
    # The one turn engine (running ⇄ paused(question) → ended) for every surface: ACP and nothing of a surface.
    "turns": {"turns", "acp", "wire", "logs"},
    # ACP v1 (client and agent framework): the wire facts and the neutral helpers, nothing else.
    "acp": {"acp", "wire", "safefile", "cli_common", "logs", "process", "line_peer", "sandbox",
            "httpd"},  # httpd.ws_client: the WebSocket profile of ACP's network transport (acp.client.remote)
    # call / list / check / dev: front doors over the client, the loader and the design rules.
    "devtools": {"devtools", "client", "wire", "cli_common", "loader", "scaffold", "gateway"},
    # The agent host serves ACP agents over the network: acp/ (the known agents), httpd/, the process manager and
    # the sandbox, the gateway's `agents` config shape, the store; nothing of a surface above it.
    "hosts": {"hosts", "acp", "httpd", "process", "sandbox", "store", "gateway", "auth", "addresses", "cli_common",
              "wire", "logs", "gitwork"},
    # The board sits above every protocol layer (DESIGN.md): it may use them all, never the scaffold,
    # the CLI front doors, the dev tools or the test helpers.
    "board": {"board", "hosts", "gateway", "turns", "a2a", "acp", "client", "packaging", "transports", "httpd",
              "store", "core", "wire", "server", "auth", "safefile", "logs", "process", "line_peer", "cli_common",
              "addresses", "loader", "sandbox", "gitwork"},
}

# Inside acp/: the two ends never import each other; both stand on the shared acp.connection (the ACP
# connection on the one line driver) and wire/, which in turn knows neither end. acp/__init__.py names the
# client's modules only as strings, for its lazy table.
ACP_SIDES: dict[str, set[str]] = {
    "acp.agent": {"acp.client"},
    "acp.client": {"acp.agent"},
    "acp.connection": {"acp.agent", "acp.client"},
}


def imported_modules(path: Path) -> set[str]:
    """Every module of ours `path` imports, relative to the package (`client.channel`), with
    `name.attr` added for `from name import attr`; the package root itself is ROOT."""
    return imports_in(path.read_text(encoding="utf-8"), ["mcp_agent_kit", *path.relative_to(PACKAGE).parent.parts])


def imports_in(source: str, package: list[str]) -> set[str]:
    """imported_modules for the source of a module in `package` (["mcp_agent_kit", "client"])."""
    tree = parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    ours = {name for name in found if name == "mcp_agent_kit" or name.startswith("mcp_agent_kit.")}
    return {ROOT if name == "mcp_agent_kit" else name.removeprefix("mcp_agent_kit.") for name in ours}


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def layer_of_name(name: str) -> str:
    return name.split(".", 1)[0]


MODULES = sorted(PACKAGE.rglob("*.py"))
IDS = [str(p.relative_to(PACKAGE)) for p in MODULES]


@pytest.mark.parametrize("path", MODULES, ids=IDS)
def test_module_respects_the_layers(path: Path) -> None:
    forbidden = FORBIDDEN.get(layer_of(path), set())
    bad = sorted(name for name in imported_modules(path) if layer_of_name(name) in forbidden)
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


@pytest.mark.parametrize("path", [p for p in MODULES if layer_of(p) in ALLOWED],
                         ids=[i for p, i in zip(MODULES, IDS, strict=True) if layer_of(p) in ALLOWED])
def test_module_imports_only_what_its_layer_allows(path: Path) -> None:
    allowed = ALLOWED[layer_of(path)]
    bad = sorted(name for name in imported_modules(path) if layer_of_name(name) not in allowed)
    assert not bad, f"{path.relative_to(PACKAGE)} may import only {sorted(allowed)}, but imports {bad}"



def acp_side_of(path: Path) -> str:
    """acp.agent, acp.client or acp.connection for a module under acp/ ("" elsewhere and for acp/__init__.py)."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:2]) if parts[0] == "acp" and len(parts) > 1 and parts[1] != "__init__" else ""


ACP_MODULES = [p for p in MODULES if acp_side_of(p) in ACP_SIDES]


def test_both_acp_ends_and_the_shared_connection_are_checked() -> None:
    assert {acp_side_of(p) for p in ACP_MODULES} == set(ACP_SIDES)


@pytest.mark.parametrize("path", ACP_MODULES, ids=[str(p.relative_to(PACKAGE)) for p in ACP_MODULES])
def test_the_acp_ends_never_import_each_other(path: Path) -> None:
    forbidden = ACP_SIDES[acp_side_of(path)]
    bad = sorted(name for name in imported_modules(path)
                 if any(name == side or name.startswith(side + ".") for side in forbidden))
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad} (acp.agent and acp.client meet only in acp.connection)"

def test_the_rules_see_relative_and_root_imports() -> None:
    """The checker itself: neither a relative import nor the package root slips past it."""
    source = "from ..core import content\nfrom . import merge\nfrom mcp_agent_kit import __version__\n"
    found = imports_in(source, ["mcp_agent_kit", "client"])
    assert {"core", "core.content", "client", "client.merge", ROOT, "__version__"} <= found


def test_no_import_cycles_type_level_ones_included() -> None:
    """Layers only work if modules form no circle: every import counts here, also those inside
    functions and under `if TYPE_CHECKING:` (the graph and cycle finder of test_import_cycles)."""
    from tests.test_import_cycles import cycles, graph

    found = cycles(graph(lazy=True))
    assert not found, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def test_nothing_imports_the_cli() -> None:
    for path in MODULES:
        assert "__main__" not in imported_modules(path), path


def test_every_package_ships_in_the_wheel() -> None:
    """pyproject.toml lists the packages by hand: a new one left out would be missing from the wheel
    (an ImportError only for users who install it, not in an editable checkout)."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_only_the_board_may_import_the_agent_host() -> None:
    """hosts/ is a front door (`agent-host`): the CLI names it by string, the board may drive it, nothing else."""
    bad = [str(path.relative_to(PACKAGE)) for path in MODULES if layer_of(path) not in ("hosts", "board")
           and any(layer_of_name(name) == "hosts" for name in imported_modules(path))]
    assert not bad, f"these import hosts/: {bad}"
