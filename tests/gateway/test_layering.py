"""The probe front door lives in gateway.cli but stays as light as the client: loading it (as
`mcp-agent-kit probe` does) imports neither the server nor the gateway's own modules."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("mcp_agent_kit.server", "mcp_agent_kit.core.dispatcher", "mcp_agent_kit.gateway.merged")


def test_the_probe_command_does_not_load_the_server() -> None:
    code = (
        "import sys\n"
        "import mcp_agent_kit.gateway.cli\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_the_package_names_load_on_first_use() -> None:
    code = "import mcp_agent_kit.gateway as g\nprint(g.Gateway.__module__, g.ConfigError.__module__)\n"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["mcp_agent_kit.gateway.merged", "mcp_agent_kit.gateway.config"]
