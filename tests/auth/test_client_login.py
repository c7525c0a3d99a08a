"""Our OAuth client against a protected official-SDK server (mcp.server.auth's own authorization server).

The gateway logs in to it (dynamic registration, PKCE, the RFC 8707 resource the SDK binds tokens
to, the headless redirect its auto-approving provider allows) and serves its tools to the official
client; `auth login/status/logout` manage the 0600 token cache; a token about to expire is
refreshed before it is sent; no token appears in the logs or goes to another origin.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_agent_kit.client import Client
from mcp_agent_kit.client.oauth import FileStore, HeadlessRedirect, MemoryTokenStore, OAuth
from tests.auth.conftest import serve_protected
from tests.auth.sdk_as import protected_server
from tests.net import free_port, gateway_args

PY = sys.executable


@pytest.fixture
def short_lived() -> Iterator[str]:
    yield from serve_protected(20)  # a 20 s lifetime: refreshed 5 s (a quarter) before expiry, not 60 s


def test_gateway_logs_in_to_a_protected_sdk_server_and_serves_its_tools(protected: str, tmp_path: Path) -> None:
    from mcp import Client as OfficialClient
    from mcp.client.stdio import StdioServerParameters

    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"calc": {"url": protected, "oauth": {
        "headless": True, "redirectPort": free_port(), "scopes": ["mcp:tools"]}}}}))
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}

    async def scenario() -> tuple[list[str], str]:
        params = StdioServerParameters(command=PY, args=gateway_args(config), env=env)
        async with OfficialClient(params, mode="auto") as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            result = await client.call_tool("add", {"a": 2, "b": 3})
            return tools, result.content[0].text  # type: ignore[union-attr]

    tools, text = anyio.run(scenario)
    assert tools == ["add"]
    assert text == "5"
    cache = tmp_path / "config" / "mcp-agent-kit" / "oauth.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    saved = json.loads(cache.read_text())
    assert [t["resource"] for t in saved["tokens"]] == [protected]


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(home)}
    return subprocess.run([PY, "-m", "mcp_agent_kit", "auth", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_auth_login_status_logout(protected: str, tmp_path: Path) -> None:
    port = str(free_port())
    login = _cli("login", protected, "--headless", "--redirect-port", port, home=tmp_path)
    assert login.returncode == 0, login.stderr
    assert f"logged in to {protected}" in login.stdout
    saved = json.loads((tmp_path / "mcp-agent-kit" / "oauth.json").read_text())
    secret = saved["tokens"][0]["access_token"]
    status = _cli("status", protected, home=tmp_path)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert [entry["resource"] for entry in shown] == [protected] and shown[0]["refreshable"] is True
    assert secret not in status.stdout + login.stdout + login.stderr
    again = _cli("login", protected, "--headless", "--redirect-port", port, home=tmp_path)  # registration reused
    assert again.returncode == 0, again.stderr
    assert len(json.loads((tmp_path / "mcp-agent-kit" / "oauth.json").read_text())["registrations"]) == 1
    logout = _cli("logout", protected, home=tmp_path)
    assert logout.returncode == 0 and "forgot 1 token(s)" in logout.stdout
    assert json.loads(_cli("status", home=tmp_path).stdout) == []
    missing = _cli("logout", home=tmp_path)
    assert missing.returncode != 0 and missing.stderr.count("\n") == 1 and "--all" in missing.stderr


def test_a_token_near_expiry_is_refreshed_and_never_logged(short_lived: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    skew = [0.0]  # the injected clock runs ahead of the server's by this much
    oauth = OAuth(short_lived, redirector=HeadlessRedirect(f"http://127.0.0.1:{free_port()}/callback"),
                  store=MemoryTokenStore(), clock=lambda: time.time() + skew[0])
    seen = []
    with Client.http(short_lived, auth=oauth) as client:
        for a, ahead in enumerate((0.0, 10.0, 16.0, 16.0)):  # 20, 10, 4 (< 5: refresh) and 20 s left
            skew[0] = ahead
            assert client.call_tool("add", {"a": a, "b": 1})["content"][0]["text"] == str(a + 1)
            assert oauth.token is not None
            seen.append(oauth.token.access_token)
    assert seen[0] == seen[1] != seen[2] == seen[3]  # used for most of its life, refreshed once near the end
    assert oauth.headers("POST", "http://127.0.0.1:1/elsewhere") == {}  # never to another origin
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert not any(token in logged for token in seen)


def test_both_halves_our_client_logs_in_to_our_server_through_the_sdk_authorization_server() -> None:
    from mcp_agent_kit.auth.settings import OAuthSettings
    from mcp_agent_kit.client.channel import PeerError
    from tests.auth.sdk_as import SdkAuthorizationServer
    from tests.http.conftest import start

    authority = SdkAuthorizationServer()
    server = protected_server()

    running = start(server.dispatcher, oauth=OAuthSettings(issuer=authority.issuer, jwks_url=authority.issuer + "jwks",
                                                           scopes=("mcp:tools",)))
    redirect = HeadlessRedirect(f"http://127.0.0.1:{free_port()}/callback")
    try:
        oauth = OAuth(running.url, redirector=redirect, store=MemoryTokenStore())
        with Client.http(running.url, auth=oauth) as client:
            assert client.call_tool("whoami", {"text": "hi"})["content"][0]["text"] == "hi"
        assert authority.provider.issued[-1]["aud"] == running.url  # the resource went to the AS verbatim

        authority.provider.audience = "http://127.0.0.1:1/mcp"  # from now on, tokens for another server
        refused = OAuth(running.url, redirector=redirect, store=MemoryTokenStore())
        issued = len(authority.provider.issued)
        with pytest.raises(PeerError, match=r"refuses the token .* just issued .*another resource \(aud\)"), \
                Client.http(running.url, auth=refused) as client:
            client.call_tool("whoami", {"text": "hi"})
        assert len(authority.provider.issued) == issued + 1  # one login; its token refused, no loop of logins
    finally:
        running.server.shutdown()
        running.server.server_close()
        authority.close()


def test_two_clients_sharing_the_cache_do_not_spend_each_others_refresh_tokens(short_lived: str,
                                                                                tmp_path: Path) -> None:
    """The SDK's server rotates refresh tokens: a second process refreshing with the old one would
    be refused. It adopts the token the first one stored instead, and neither logs in again."""
    path, skew = tmp_path / "oauth.json", [0.0]
    redirect = HeadlessRedirect(f"http://127.0.0.1:{free_port()}/callback")
    first = OAuth(short_lived, redirector=redirect, store=FileStore(path), clock=lambda: time.time() + skew[0])
    with Client.http(short_lived, auth=first) as client:
        client.call_tool("add", {"a": 1, "b": 1})
    second = OAuth(short_lived, redirector=redirect, store=FileStore(path), clock=lambda: time.time() + skew[0])
    assert second.token is not None and first.token is not None
    assert second.token.access_token == first.token.access_token  # the cached token, no login
    skew[0] = 16.0  # both see the token as due
    with Client.http(short_lived, auth=first) as client:
        client.call_tool("add", {"a": 1, "b": 2})  # the first refreshes (and rotates the refresh token)
    refreshed = first.token
    with Client.http(short_lived, auth=second) as client:
        assert client.call_tool("add", {"a": 2, "b": 2})["content"][0]["text"] == "4"
    assert second.token is not None and refreshed is not None
    assert second.token.access_token == refreshed.access_token  # adopted, not refreshed again or logged in anew
    assert [t.access_token for t in FileStore(path).tokens()] == [refreshed.access_token]
