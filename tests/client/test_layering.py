"""The client reuses wire/ (and core.schema) but never the server dispatcher (DESIGN.md layers)."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("mcp_agent_kit.core.dispatcher", "mcp_agent_kit.core.methods", "mcp_agent_kit.server")


def test_client_modules_do_not_import_the_server_side() -> None:
    code = (
        "import sys\n"
        "import mcp_agent_kit.client, mcp_agent_kit.client.cli, mcp_agent_kit.client.http\n"
        "import mcp_agent_kit.client.stdio, mcp_agent_kit.client.merge, mcp_agent_kit.client.conformance_client\n"
        f"print([m for m in {FORBIDDEN!r} if m in sys.modules])\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
