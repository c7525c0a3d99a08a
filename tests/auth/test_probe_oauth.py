"""`probe URL` on an OAuth-protected server (the official SDK's, with its own authorization server):
without a usable token one stderr line and exit 3; with the token `auth login` cached it probes
(refreshing a token that is due); `--login` logs in from probe itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.net import free_port

PY = sys.executable


def _kit(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(home)}
    return subprocess.run([PY, "-m", "mcp_agent_kit", *args], capture_output=True, text=True, env=env, timeout=60)


def _cache(home: Path) -> dict[str, list[dict[str, object]]]:
    return json.loads((home / "mcp-agent-kit" / "oauth.json").read_text())  # type: ignore[no-any-return]


def _documented() -> tuple[str, dict[str, object]]:
    """The stderr line and the report docs/oauth.md shows for a probe without a token."""
    text = (Path(__file__).parents[2] / "docs" / "oauth.md").read_text(encoding="utf-8")
    section = text[text.index("### Probing a protected server"):]
    fences = re.findall(r"^```(\w*)\n(.*?)^```", section, re.S | re.M)
    return fences[0][1].strip(), json.loads(fences[1][1])


def test_probe_without_a_token_says_to_log_in_and_exits_3(protected: str, tmp_path: Path) -> None:
    run = _kit("probe", protected, home=tmp_path)
    assert run.returncode == 3, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    line, report = _documented()
    documented = "https://mcp.example.com/mcp"
    assert run.stderr.strip() == line.replace(documented, protected)  # exactly what the docs show
    assert json.loads(run.stdout) == json.loads(json.dumps(report).replace(documented, protected))
    assert not (tmp_path / "mcp-agent-kit" / "oauth.json").exists()  # nothing was logged in to


def test_probe_uses_the_token_auth_login_cached_and_refreshes_it_when_due(protected: str, tmp_path: Path) -> None:
    login = _kit("auth", "login", protected, "--headless", "--redirect-port", str(free_port()), home=tmp_path)
    assert login.returncode == 0, login.stderr
    run = _kit("probe", protected, home=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["tools"] == ["add"]
    cache = tmp_path / "mcp-agent-kit" / "oauth.json"
    saved = _cache(tmp_path)
    before = saved["tokens"][0]["access_token"]
    saved["tokens"][0].update(issued_at=time.time() - 3590, expires_at=time.time() + 10)  # due: 10 s < 60 s left
    cache.write_text(json.dumps(saved))
    again = _kit("probe", protected, home=tmp_path)
    assert again.returncode == 0, again.stderr
    after = _cache(tmp_path)["tokens"]
    assert len(after) == 1 and after[0]["access_token"] != before  # refreshed, and the cache holds the new one
    assert float(after[0]["expires_at"]) > time.time() + 3000  # type: ignore[arg-type]


def test_probe_login_logs_in_and_caches_the_token(protected: str, tmp_path: Path) -> None:
    run = _kit("probe", "--login", "--headless", "--redirect-port", str(free_port()), protected, home=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["tools"] == ["add"]
    assert [t["resource"] for t in _cache(tmp_path)["tokens"]] == [protected]
    assert _kit("probe", protected, home=tmp_path).returncode == 0  # the next probe needs no login


def test_probe_with_its_own_authorization_header_does_not_use_oauth(protected: str, tmp_path: Path) -> None:
    run = _kit("probe", "--header", "Authorization: Bearer not-a-token", protected, home=tmp_path)
    assert run.returncode == 3 and "refused" in run.stderr and run.stderr.count("\n") == 1
