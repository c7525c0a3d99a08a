"""Gateway and board `acp` entries with `"url"` (a remote agent over ACP's network transport) in place of `"command"`.

The config: `url` with `headers` and `tokenEnv` parse into an AgentSpec, and each misuse is one ConfigError
naming the key. The backend: an AcpBackend for such an entry connects (its token read from the environment
when it connects) to the official SDK's server (tests/acp/sdk_remote.py, which wants that token) and opens
a session there; an unset tokenEnv is a clear refusal, not a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.gateway import agent_backend as ab
from mcp_agent_kit.gateway.acp_backend import AcpBackend
from mcp_agent_kit.gateway.agents_config import parse_agents
from mcp_agent_kit.gateway.config import ConfigError
from tests.acp.sdk_remote import remote_urls, sdk_server


def _parse(acp: dict[str, Any]) -> Any:
    return parse_agents({"agents": {"dev/far": {"acp": acp}}})["dev/far"]


def test_a_url_entry_parses() -> None:
    spec = _parse({"url": "wss://host.example/acp", "headers": {"X-Team": "a"}, "tokenEnv": "FAR_TOKEN",
                   "approve": "all", "cwd": "/srv/work"})
    assert (spec.kind, spec.url, spec.command, spec.headers, spec.token_env) == (
        "acp", "wss://host.example/acp", "", {"X-Team": "a"}, "FAR_TOKEN")
    assert spec.approve == "all" and spec.cwd == "/srv/work" and spec.sandbox is None


@pytest.mark.parametrize("acp, named", [
    ({"url": "ftp://h/acp"}, "acp url"),
    ({"url": "ws://h/acp", "command": "agent"}, "acp command"),
    ({"url": "ws://h/acp", "sandbox": "bwrap"}, "acp sandbox"),
    ({"url": "ws://h/acp", "env": {}}, "acp env"),
    ({"url": "ws://h/acp", "headers": {"Bad Name": "x"}}, "acp headers"),
    ({"url": "ws://h/acp", "headers": {"X": "a\nb"}}, "acp headers"),
    ({"url": "ws://h/acp", "tokenEnv": "not a name"}, "acp tokenEnv"),
    ({"command": "agent", "tokenEnv": "T"}, "acp tokenEnv"),
    ({"command": "agent", "headers": {}}, "acp headers"),
])
def test_misused_url_keys_are_one_config_error_naming_the_key(acp: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _parse(acp)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_the_backend_reaches_a_remote_agent_with_its_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with sdk_server(token="far-secret") as (base, _):
        spec = _parse({"url": remote_urls(base)["ws"], "tokenEnv": "FAR_TOKEN", "cwd": str(tmp_path)})
        backend = AcpBackend(spec)
        try:
            assert backend.info().ready
            with pytest.raises(ab.SessionRefused, match="tokenEnv FAR_TOKEN is not set"):
                backend.new_session()
            monkeypatch.setenv("FAR_TOKEN", "far-secret")
            session_id = backend.new_session()
            assert backend.agent is not None and session_id in backend.agent.sessions
        finally:
            backend.close()
