"""The OAuth client's `state` (client.oauth.session, RFC 6749 §10.12): the authorization response
is taken only when it carries back exactly the state the request sent. An empty, a missing, a
truncated, an extended, a same-length other and a non-ASCII state are each refused with an
OAuthError naming the state, through HeadlessRedirect's real parsing of the redirect URL."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from mcp_agent_kit.client.oauth import HeadlessRedirect, MemoryStore, OAuth, OAuthError
from mcp_agent_kit.client.oauth.discovery import Discovery
from mcp_agent_kit.client.oauth.grants import ClientAuth
from mcp_agent_kit.client.oauth.net import Response
from tests.forgeries import text_forgeries

ISSUER = "https://as.example"
CALLBACK = "http://127.0.0.1:8976/callback"
FOUND = Discovery(resource="https://mcp.example/mcp", issuer=ISSUER,
                  metadata={"issuer": ISSUER, "authorization_endpoint": ISSUER + "/authorize"})


class TamperingServer:
    """An authorization server that approves at once and hands `state` back through `tamper`."""

    def __init__(self, tamper: str | None) -> None:
        self.tamper = tamper

    def __call__(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> Response:
        sent = dict(parse_qsl(urlsplit(url).query))
        state = sent["state"]
        if self.tamper is not None:
            state = "" if self.tamper == "missing" else text_forgeries(state)[self.tamper]
        answer = {"code": "the-code"} | ({} if self.tamper == "missing" else {"state": state})
        return Response(302, {"location": f"{CALLBACK}?{urlencode(answer)}"})


def _grant(tamper: str | None) -> dict[str, str]:
    oauth = OAuth("https://mcp.example/mcp", redirector=HeadlessRedirect(CALLBACK, transport=TamperingServer(tamper)),
                  store=MemoryStore(), transport=TamperingServer(None))
    return oauth._authorization_code(FOUND, ClientAuth("c1"), ["mcp:tools"])


def test_the_genuine_state_is_accepted() -> None:
    grant = _grant(None)
    assert grant["grant_type"] == "authorization_code" and grant["code"] == "the-code"


@pytest.mark.parametrize("case", ["missing", *sorted(text_forgeries("0123456789"))])
def test_any_other_state_is_refused(case: str) -> None:
    with pytest.raises(OAuthError, match="state does not match"):
        _grant(case)
