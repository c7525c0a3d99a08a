"""Shared fixtures for the client tests: peer commands (the legacy interpreter is in tests/conftest.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

ORACLE_MODERN = textwrap.dedent(
    """
    import sys
    from mcp.server.mcpserver import MCPServer

    app = MCPServer(sys.argv[1] if len(sys.argv) > 1 else "oracle")

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool()
    def whoami() -> str:
        return app.name

    if __name__ == "__main__":
        app.run()
    """
)

ORACLE_LEGACY = textwrap.dedent(
    """
    import sys
    from mcp.server.fastmcp import FastMCP

    app = FastMCP(sys.argv[1] if len(sys.argv) > 1 else "legacy")

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool()
    def whoami() -> str:
        return app.name

    @app.resource("memo://{name}")
    def memo(name: str) -> str:
        return f"memo {name}"

    if __name__ == "__main__":
        app.run()
    """
)


@pytest.fixture(scope="session")
def peer_scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("peers")
    scripts = {"modern": ORACLE_MODERN, "legacy": ORACLE_LEGACY}
    paths = {}
    for name, text in scripts.items():
        path = folder / f"{name}_oracle.py"
        path.write_text(text)
        paths[name] = str(path)
    paths["fake"] = str(HERE / "fake_peer.py")
    paths["metrics"] = str(ROOT / "examples" / "metrics_server.py")
    return paths
