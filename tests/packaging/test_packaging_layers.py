"""Layer rule from DESIGN.md: packaging imports only the standard library, itself, the neutral
target loader (to read tool definitions from a user's server object, duck-typed) and the wire facts
of SKILL.md and of the skills extension; only the installer from an MCP server (skill_fetch) talks
to servers, through the client."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import mcp_agent_kit.packaging as packaging
from tests.sources import parse

PACKAGE_DIR = Path(packaging.__file__).parent
ALLOWED_OURS = {"mcp_agent_kit.loader", "mcp_agent_kit.cli_common", "mcp_agent_kit.safefile",
                "mcp_agent_kit.wire.frontmatter", "mcp_agent_kit.wire.skills"}  # all stdlib only
CLIENT_USERS = {"skill_fetch.py"}  # skill install --from-server: a Client fetches (and the wire it speaks)


def test_packaging_imports_only_stdlib_and_itself() -> None:
    for module in sorted(PACKAGE_DIR.glob("*.py")):
        tree = parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if isinstance(node, ast.ImportFrom) and node.module == "mcp_agent_kit.wire":  # `from ..wire import x`
                names = [f"mcp_agent_kit.wire.{alias.name}" for alias in node.names]
            for name in names:
                top = name.split(".")[0]
                allowed = top in sys.stdlib_module_names or top == "__future__" or name in ALLOWED_OURS or (
                    module.name in CLIENT_USERS and name.startswith(("mcp_agent_kit.client.", "mcp_agent_kit.wire.")))
                assert allowed, (module.name, name)


def test_modules_stay_small_and_documented() -> None:
    for module in sorted(PACKAGE_DIR.glob("*.py")):
        text = module.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 500, module.name
        assert ast.get_docstring(parse(text)), module.name
