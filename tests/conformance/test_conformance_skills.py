"""The MCP conformance suite's Skills (SEP-2640) scenarios, both legs, on both spec versions.

Server leg: `sep-2640-skills-enumeration`, `-manifest` and `-directory` against
examples/everything_server.py over HTTP. Client leg: `sep-2640-client-no-prefetch`,
`-verify-digest`, `-verify-size` and `-verify-frontmatter` through
mcp_agent_kit.client.conformance_client. Extension scenarios are off the spec timeline, so each
run passes `--spec-version V --force`. Every check must be SUCCESS; the only SKIPPED allowed is
the suite's own "not applicable on negotiated protocol" (the cache checks on 2025-11-25).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.net import serving

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
VERSIONS = ("2026-07-28", "2025-11-25")
SERVER_SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")
CLIENT_SCENARIOS = ("sep-2640-client-no-prefetch", "sep-2640-client-verify-digest",
                    "sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter")
NOT_APPLICABLE = "not applicable on negotiated protocol"


def _conformance(args: list[str], out: Path) -> list[dict[str, object]]:
    from tests.pinned import npx_program

    command, env = npx_program("conformance", "node@22", CONFORMANCE)  # a missing npx FAILS, never skips
    run = subprocess.run([*command, *args, "-o", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env=env)
    found = sorted(out.glob("*/checks.json"))
    assert len(found) == 1, run.stdout[-3000:] + run.stderr[-2000:]
    checks: list[dict[str, object]] = json.loads(found[0].read_text())
    assert checks, run.stdout[-3000:]
    return checks


def _only_successes(checks: list[dict[str, object]], version: str) -> None:
    bad = [
        check for check in checks
        if check["status"] != "SUCCESS"
        and not (check["status"] == "SKIPPED" and version < "2026-07-28"
                 and NOT_APPLICABLE in str(check.get("errorMessage", "")))
    ]
    assert not bad, json.dumps(bad, indent=1)[:4000]


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    with serving(lambda port: [sys.executable, str(ROOT / "examples/everything_server.py"), "--http",
                               f"127.0.0.1:{port}"], "http://127.0.0.1:{port}/mcp") as url:
        yield url


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_server_scenario(everything_url: str, scenario: str, version: str, tmp_path: Path) -> None:
    checks = _conformance(["server", "--url", everything_url, "--scenario", scenario,
                           "--spec-version", version, "--force"], tmp_path)
    _only_successes(checks, version)
    ids = {check["id"] for check in checks}
    assert any(str(i).startswith("sep-2640-") for i in ids), ids
    if scenario == "sep-2640-skills-directory":  # the optional part really ran: directoryRead is declared
        assert "sep-2640-directory-read-subdir-mimetype" in ids


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_client_scenario(scenario: str, version: str, tmp_path: Path) -> None:
    command = f"{sys.executable} -m mcp_agent_kit.client.conformance_client"
    checks = _conformance(["client", "--command", command, "--scenario", scenario,
                           "--spec-version", version, "--force"], tmp_path)
    _only_successes(checks, version)
    assert any(str(check["id"]).startswith("sep-2640-host-") for check in checks), checks
