"""Both servers as OAuth resource servers, against a loopback authorization server whose tokens PyJWT
signs: the RFC 9728 document at both well-known URLs, 401/403 challenges, tokens for another
audience refused, the subject as the principal, the JWK Set fetched once, the A2A card's scheme,
and the CLI's one-line errors."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from mcp_agent_kit.a2a.engine import TaskEngine
from mcp_agent_kit.a2a.http import A2AServer
from mcp_agent_kit.auth.settings import OAuthSettings
from tests.a2a.conftest import METRICS, call, user_message
from tests.auth.fake_as import FakeAuthorizationServer
from tests.auth.sdk_as import protected_server
from tests.http.conftest import Running, start

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def auth_server() -> Iterator[FakeAuthorizationServer]:
    server = FakeAuthorizationServer()
    yield server
    server.close()


@pytest.fixture
def mcp(auth_server: FakeAuthorizationServer) -> Iterator[Running]:
    server = protected_server()

    running = start(server.dispatcher, oauth=OAuthSettings(issuer=auth_server.issuer, scopes=("mcp:tools",)))
    yield running
    running.server.shutdown()
    running.server.server_close()


def get(port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def test_the_protected_resource_metadata_is_served_at_both_well_known_urls(mcp: Running,
                                                                          auth_server: FakeAuthorizationServer) -> None:
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        status, headers, body = get(mcp.port, path)
        assert status == 200 and headers["content-type"] == "application/json"
        assert headers["access-control-allow-origin"] == "*"
        assert json.loads(body) == {"resource": mcp.url, "authorization_servers": [auth_server.issuer],
                                    "bearer_methods_supported": ["header"], "scopes_supported": ["mcp:tools"],
                                    "resource_name": "protected"}


def test_no_token_gets_the_challenge_without_an_error_code(mcp: Running) -> None:
    status, headers, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert status == 401
    prm = (f'resource_metadata="http://127.0.0.1:{mcp.port}/.well-known/oauth-protected-resource/mcp", '
           'scope="mcp:tools"')
    assert headers["www-authenticate"] == f'Bearer {prm}, DPoP algs="ES256 RS256 PS256", {prm}'


def test_tokens_for_another_audience_or_without_the_scope_are_refused(mcp: Running,
                                                                      auth_server: FakeAuthorizationServer) -> None:
    other = auth_server.token("http://127.0.0.1:1/mcp")
    status, _ = mcp.modern("tools/list", headers={"Authorization": f"Bearer {other}"})
    assert status == 401
    status, headers, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                                  {"Authorization": f"Bearer {other}"})
    assert status == 401 and headers["www-authenticate"].startswith('Bearer error="invalid_token"')
    narrow = auth_server.token(mcp.url, scope="other")
    status, headers, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                                  {"Authorization": f"Bearer {narrow}"})
    assert status == 403 and 'error="insufficient_scope"' in headers["www-authenticate"]
    assert 'scope="mcp:tools"' in headers["www-authenticate"]


def test_a_good_token_calls_tools_and_keys_are_fetched_once(mcp: Running,
                                                            auth_server: FakeAuthorizationServer) -> None:
    before = auth_server.jwks_fetches
    for n in range(10):
        good = auth_server.token(mcp.url, subject=f"user{n}")
        status, reply = mcp.modern("tools/call", {"name": "whoami", "arguments": {"text": f"hi {n}"}},
                                   headers={"Authorization": f"Bearer {good}"})
        assert status == 200 and reply["result"]["content"][0]["text"] == f"hi {n}", reply
    assert auth_server.jwks_fetches - before <= 1


# ---- A2A ------------------------------------------------------------------------------------------------
@pytest.fixture
def agent(auth_server: FakeAuthorizationServer) -> Iterator[A2AServer]:
    from mcp_agent_kit.a2a.cli import build_agent
    from mcp_agent_kit.loader import load_target

    engine = TaskEngine(build_agent(load_target(METRICS)), None)
    server = A2AServer(engine, "127.0.0.1", 0, oauth=OAuthSettings(issuer=auth_server.issuer))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def rpc(server: A2AServer, method: str, params: dict[str, Any], token: str | None) -> tuple[int, dict[str, str], Any]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request("POST", "/a2a", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                     headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(response.read())
    finally:
        conn.close()


def test_the_a2a_card_declares_the_oauth_flow(agent: A2AServer, auth_server: FakeAuthorizationServer) -> None:
    card = json.loads(get(agent.server_address[1], "/.well-known/agent-card.json")[2])
    scheme = card["securitySchemes"]["oauth"]["oauth2SecurityScheme"]
    assert scheme["flows"]["authorizationCode"] == {"authorizationUrl": auth_server.issuer + "/authorize",
                                                    "tokenUrl": auth_server.issuer + "/token", "scopes": {},
                                                    "pkceRequired": True}
    assert scheme["oauth2MetadataUrl"] == auth_server.issuer + "/.well-known/oauth-authorization-server"
    assert card["securityRequirements"] == [{"schemes": {"oauth": {"list": []}}}]


def test_a2a_tokens_are_checked_and_each_subject_sees_only_its_tasks(agent: A2AServer,
                                                                     auth_server: FakeAuthorizationServer) -> None:
    status, headers, reply = rpc(agent, "ListTasks", {}, None)
    assert status == 401 and reply["error"]["code"] == -32600
    assert headers["www-authenticate"].startswith("Bearer resource_metadata=")
    mcp_audience = auth_server.token("http://127.0.0.1:1/mcp")
    assert rpc(agent, "ListTasks", {}, mcp_audience)[0] == 401  # never a token meant for another server
    alice, bob = (auth_server.token(agent.base_url, subject=who) for who in ("alice", "bob"))
    status, _, sent = rpc(agent, "SendMessage", {"message": user_message(call([1, 2]))}, alice)
    assert status == 200 and "result" in sent, sent
    assert len(rpc(agent, "ListTasks", {}, alice)[2]["result"]["tasks"]) == 1
    assert rpc(agent, "ListTasks", {}, bob)[2]["result"].get("tasks", []) == []


# ---- CLI --------------------------------------------------------------------------------------------------
def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


def test_cli_mistakes_are_one_line() -> None:
    done = run_cli("serve", "examples/everything_server.py:server", "--http", "127.0.0.1:0", "--oauth-scopes", "x")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--oauth-issuer" in done.stderr, done.stderr
    done = run_cli("serve", "examples/everything_server.py:server", "--http", "127.0.0.1:0",
                   "--oauth-issuer", "http://127.0.0.1:9")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "OAuth: no authorization server metadata for http://127.0.0.1:9" in done.stderr


# ---- the official SDK's client with its own OAuth provider, against a real authorization server -----------
class _Storage:
    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


async def _official_client_session(url: str) -> tuple[list[str], str, int]:
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    redirected: dict[str, str | None] = {}

    async def redirect(authorize_url: str) -> None:  # the user's browser: the server auto-approves
        async with httpx2.AsyncClient() as browser:
            answer = await browser.get(authorize_url, follow_redirects=False)
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        redirected.update({name: (query.get(name) or [None])[0] for name in ("code", "state", "iss")})

    async def callback() -> AuthorizationCodeResult:
        assert redirected.get("code"), redirected
        return AuthorizationCodeResult(code=str(redirected["code"]), state=redirected["state"], iss=redirected["iss"])

    metadata = OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"], client_name="official-sdk-test",
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="none")
    storage = _Storage()
    provider = OAuthClientProvider(url, metadata, storage, redirect_handler=redirect, callback_handler=callback)
    async with httpx2.AsyncClient(auth=provider) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        tools = await client.list_tools()
        result = await client.call_tool("whoami", {"text": "through OAuth"})
        assert not result.is_error, result
        return [tool.name for tool in tools.tools], result.content[0].text, len(storage.tokens.access_token)


def test_the_official_client_logs_in_through_a_real_authorization_server_and_calls_a_tool() -> None:
    from tests.auth.sdk_as import SdkAuthorizationServer

    authority = SdkAuthorizationServer()
    server = protected_server()

    settings = OAuthSettings(issuer=authority.issuer, jwks_url=authority.issuer + "jwks", scopes=("mcp:tools",))
    running = start(server.dispatcher, oauth=settings)
    try:
        names, text, _ = asyncio.run(asyncio.wait_for(_official_client_session(running.url), 60))
        assert (names, text) == (["whoami"], "through OAuth")
        issued = authority.provider.issued
        assert issued and issued[-1]["aud"] == running.url  # RFC 8707: the token names this server

        # The same client, given a token for another server: refused, with the challenge that says why.
        authority.provider.audience = "http://127.0.0.1:1/mcp"
        from mcp.shared.exceptions import MCPError

        with pytest.raises(BaseExceptionGroup) as caught:  # the SDK gives up: its task group carries the error
            asyncio.run(asyncio.wait_for(_official_client_session(running.url), 60))
        assert caught.group_contains(MCPError, depth=2), caught.value
        assert authority.provider.issued[-1]["aud"] == "http://127.0.0.1:1/mcp"
        status, headers, _ = running.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                                          {"Authorization": f"Bearer {authority.provider.tokens[-1]}"})
        assert status == 401
        assert headers["www-authenticate"].startswith(
            'Bearer error="invalid_token", error_description="the token is meant for another resource (aud)", '
            f'resource_metadata="{running.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")}"')
    finally:
        running.server.shutdown()
        running.server.server_close()
        authority.close()


def test_the_gateway_takes_the_same_oauth_flags(tmp_path: Path, auth_server: FakeAuthorizationServer) -> None:
    """`gateway --http ... --oauth-issuer`: its endpoint is protected like `serve`'s (a subprocess,
    through the public CLI); on stdio the flags are a one-line mistake."""
    from tests.net import free_port, wait_listening

    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {
        "command": sys.executable, "args": [str(ROOT / "examples" / "everything_server.py")],
        "env": {"PYTHONPATH": str(ROOT)}}}}))
    done = run_cli("gateway", str(config), "--oauth-issuer", auth_server.issuer)
    assert done.returncode == 2 and "--http" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mcp_agent_kit", "gateway", str(config), "--http",
                             f"127.0.0.1:{port}", "--oauth-issuer", auth_server.issuer], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        status, _, body = get(port, "/.well-known/oauth-protected-resource/mcp")
        assert status == 200 and json.loads(body)["resource"] == f"http://127.0.0.1:{port}/mcp"
        running = Running.__new__(Running)
        running.host, running.port, running.url = "127.0.0.1", port, f"http://127.0.0.1:{port}/mcp"
        assert running.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})[0] == 401
        good = auth_server.token(running.url)
        status, reply = running.modern("tools/list", headers={"Authorization": f"Bearer {good}"})
        assert status == 200 and reply["result"]["tools"], reply
    finally:
        proc.terminate()
        proc.wait(15)
