"""The token cache: the refresh margin (min(60 s, a quarter of the lifetime)) by an injected clock,
and FileStore's read-modify-write under a file lock, so processes writing at once lose nothing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from mcp_agent_kit.client.oauth.store import FileStore, Registration, Token
from tests.together import READY_THEN_WAIT, release


def _token(resource: str, issued: float, lifetime: float | None, refresh: str | None = "r") -> Token:
    return Token("at", "Bearer", resource, "https://as.example", "c", None if lifetime is None else issued + lifetime,
                 refresh, issued_at=issued)


def test_the_refresh_margin_is_at_most_a_quarter_of_the_lifetime() -> None:
    short = _token("https://a.example/mcp", 1000.0, 30.0)
    assert short.refresh_margin() == 7.5
    assert not short.refresh_due(1000.0) and not short.refresh_due(1022.0)  # used for most of its life
    assert short.refresh_due(1023.0)
    hour = _token("https://a.example/mcp", 1000.0, 3600.0)
    assert hour.refresh_margin() == 60.0 and not hour.refresh_due(4539.0) and hour.refresh_due(4541.0)
    assert not _token("https://a.example/mcp", 1000.0, None).refresh_due(1e12)  # no expiry: never due
    legacy = Token("at", "Bearer", "https://a.example/mcp", "https://as.example", "c", 1030.0)  # no issued_at
    assert legacy.refresh_margin() == 60.0 and legacy.refresh_due(1000.0)


def test_the_cache_reads_what_another_store_wrote(tmp_path: Path) -> None:
    path = tmp_path / "oauth.json"
    first, second = FileStore(path), FileStore(path)
    first.put_token(_token("https://a.example/mcp", time.time(), 60.0))
    second.put_registration(Registration("https://as.example", "client-1", redirect_uri="http://127.0.0.1:1/cb"))
    assert [t.resource for t in second.tokens()] == ["https://a.example/mcp"]
    assert first.registration("https://as.example", "http://127.0.0.1:1/cb") is not None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "oauth.json.lock").stat().st_mode) == 0o600


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from mcp_agent_kit.client.oauth.store import FileStore, Token

    path, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    store = FileStore(path)
    READY_THEN_WAIT  # both writers begin together
    for i in range(count):
        store.put_token(Token(f"t{i}", "Bearer", f"https://{name}.example/mcp/{i}", "https://as.example", name))
    """
).replace("READY_THEN_WAIT", READY_THEN_WAIT)


def test_two_processes_writing_different_keys_at_once_both_survive(tmp_path: Path) -> None:
    path, count = tmp_path / "oauth.json", 40
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(count)], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for name in ("one", "two")]
    release(writers)
    for writer in writers:
        writer.communicate(timeout=60)
        assert writer.returncode == 0
    saved = json.loads(path.read_text())
    kept = {(t["client_id"], t["resource"]) for t in saved["tokens"]}
    assert len(kept) == 2 * count, f"lost {2 * count - len(kept)} of {2 * count} writes"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".oauth-")]  # no temporary files left
