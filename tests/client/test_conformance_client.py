"""The MCP conformance suite's client scenarios for 2026-07-28, run against our conformance client.

Runs `npx -p node@22 -p @modelcontextprotocol/conformance@0.2.0-alpha.12 -- conformance client
--requirements 2026-07-28`; every required scenario except auth/* must pass without a FAILURE.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
REQUIRED = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
]



def test_required_client_scenarios_pass(tmp_path: Path) -> None:
    from tests.pinned import require_tool

    require_tool("npx", f"Node's npx runs the pinned conformance suite {CONFORMANCE}")  # a failure, not a skip
    command = f"{sys.executable} -m mcp_agent_kit.client.conformance_client"
    run = subprocess.run(
        [
            "npx",
            "-y",
            "-p",
            "node@22",
            "-p",
            CONFORMANCE,
            "--",
            "conformance",
            "client",
            "--command",
            command,
            "--requirements",
            "2026-07-28",
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    summary = run.stdout[run.stdout.find("=== SUITE SUMMARY ===") :]
    results: dict[str, list[dict[str, object]]] = {}
    for checks in tmp_path.glob("*/checks.json"):
        scenario = checks.parent.name.rsplit("-", 6)[0]  # strip the ISO timestamp suffix
        results[scenario] = json.loads(checks.read_text())
    for scenario in REQUIRED:
        assert scenario in results, f"{scenario} did not run\n{summary}"
        failed = [check for check in results[scenario] if check["status"] == "FAILURE"]
        assert not failed, f"{scenario}: {failed}"
        assert any(check["status"] == "SUCCESS" for check in results[scenario])
    assert f"✓ {REQUIRED[0]}" in summary
