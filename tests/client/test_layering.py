"""At run time too, client/ loads wire/, auth/ (JOSE and metadata URLs, for its OAuth client),
process (the one child-process manager, for stdio servers), line_peer (the one JSON-RPC line
peer, for stdio servers) and itself only (DESIGN.md layers;
tests/test_layers.py checks the import statements): importing every client module leaves no
other module of ours in sys.modules but the package root, which Python imports first and which
loads nothing eagerly."""

from __future__ import annotations

import subprocess
import sys


def test_client_modules_load_only_wire_auth_process_line_peer_and_client() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import mcp_agent_kit.client as client\n"
        "for info in pkgutil.walk_packages(client.__path__, 'mcp_agent_kit.client.'):\n"
        "    importlib.import_module(info.name)\n"
        "layers = ('mcp_agent_kit.client', 'mcp_agent_kit.wire', 'mcp_agent_kit.auth', 'mcp_agent_kit.process',\n"
        "          'mcp_agent_kit.line_peer')\n"
        "print(sorted(m for m in sys.modules if m.startswith('mcp_agent_kit') and m != 'mcp_agent_kit'\n"
        "             and not any(m == layer or m.startswith(layer + '.') for layer in layers)))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
