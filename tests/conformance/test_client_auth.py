"""The conformance suite's client scenarios, OAuth ones included, against conformance_client.

Every scenario of `--requirements 2026-07-28` (39, of which 25 scored auth + 6 extensions) and of
2025-11-25 (25, of which 14 + 6 auth), the six extension scenarios once more with `--force` at an
explicit revision, and the two 2025-03-26 back-compat scenarios: each must end with no FAILURE
and no WARNING (the suite's own verdict, and the checks.json file of every scenario, auth or not;
the required non-auth ones must also show a SUCCESS). This is the one run of each set (the
2026-07-28 set used to run twice). The suite starts a set's scenarios all at once; on a loaded
machine they start slowly, so each may take up to SCENARIO_TIMEOUT_MS (the suite's default is
30 s) — a bound on waiting, not on what is checked. Needs npx (Node 22 comes from the npm registry).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pinned import npx_program

CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
AUTH_IN_SET = {"2026-07-28": 31, "2025-11-25": 20}
SCENARIOS_IN_SET = {"2026-07-28": 39, "2025-11-25": 25}
EXTENSIONS = ["client-credentials-basic", "client-credentials-jwt", "enterprise-managed-authorization",
              "wif-jwt-bearer", "dpop", "dpop-nonce"]
BACKCOMPAT = ["2025-03-26-oauth-metadata-backcompat", "2025-03-26-oauth-endpoint-fallback"]
REQUIRED_OTHERS = {"2026-07-28": ["tools_call", "request-metadata", "sep-2322-client-request-state",
                                  "http-standard-headers", "http-custom-headers", "http-invalid-tool-headers",
                                  "json-schema-ref-no-deref"]}
SCENARIO_TIMEOUT_MS = 180_000


def _command(out: Path, *selection: str) -> tuple[list[str], dict[str, str]]:
    """The suite's client leg against conformance_client (what `npx -y -p node@22 -p CONFORMANCE` runs)."""
    client = f"{sys.executable} -m mcp_agent_kit.client.conformance_client"
    command, env = npx_program("conformance", "node@22", CONFORMANCE)  # a missing npx FAILS, never skips
    return [*command, "client", "--command", client, "--timeout", str(SCENARIO_TIMEOUT_MS), "-o", str(out),
            *selection], env


def _verdicts(out: Path, under: str = "auth") -> dict[str, list[dict[str, object]]]:
    """{scenario name: its checks} for every scenario written under `out/under` (the timestamp cut off)."""
    found = {}
    for checks in (out / under).glob("*/checks.json"):
        found[checks.parent.name.rsplit("-", 6)[0]] = json.loads(checks.read_text())
    return found


def _bad(checks: list[dict[str, object]]) -> list[dict[str, object]]:
    return [check for check in checks if check["status"] in ("FAILURE", "WARNING")]


@pytest.mark.parametrize("revision", sorted(AUTH_IN_SET))
def test_every_auth_scenario_of_a_revision_passes(revision: str, tmp_path: Path) -> None:
    command, env = _command(tmp_path, "--requirements", revision)
    run = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    verdicts = _verdicts(tmp_path)
    summary = run.stdout[run.stdout.find("=== SUITE SUMMARY ===") :][-3000:]
    assert len(verdicts) == AUTH_IN_SET[revision], (sorted(verdicts), summary)
    for scenario, checks in verdicts.items():
        assert checks and not _bad(checks), (scenario, _bad(checks))
        assert f"✓ auth/{scenario}:" in run.stdout, (scenario, summary)
    others = _verdicts(tmp_path, ".")
    assert len(others) == SCENARIOS_IN_SET[revision] - AUTH_IN_SET[revision], (sorted(others), summary)
    for scenario, checks in others.items():
        assert checks and not _bad(checks), (scenario, _bad(checks))
    for scenario in REQUIRED_OTHERS.get(revision, []):
        assert any(check["status"] == "SUCCESS" for check in others.get(scenario, [])), (scenario, summary)
    # and the whole set, auth or not: every scenario passed, nothing failed or warned
    assert f"Running requirements {revision} ({SCENARIOS_IN_SET[revision]} scenarios)" in run.stdout, summary
    assert len(re.findall(r"^✓ ", run.stdout, re.MULTILINE)) == SCENARIOS_IN_SET[revision], summary
    assert re.search(r"^Total: \d+ passed, 0 failed, 0 warnings$", run.stdout, re.MULTILINE), summary


def test_extensions_forced_and_backcompat_pass(tmp_path: Path) -> None:
    runs = {name: (["--scenario", f"auth/{name}", "--spec-version", "2026-07-28", "--force"]) for name in EXTENSIONS}
    runs.update({name: ["--scenario", f"auth/{name}"] for name in BACKCOMPAT})
    commands = {name: _command(tmp_path / name, *args) for name, args in runs.items()}
    started = {name: subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
               for name, (command, env) in commands.items()}
    for name, process in started.items():
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0 and "OVERALL: PASSED" in output, (name, output[-3000:])
        verdicts = _verdicts(tmp_path / name)
        assert list(verdicts) == [name], (name, sorted(verdicts))
        assert not _bad(verdicts[name]), (name, _bad(verdicts[name]))
