"""The web board's OAuth sign-in (board.web_oauth through board.web_app) against the fake authorization
server's auto-approving code flow, driven by urllib with a cookie jar as a browser would (no browser): the
whole flow ends in the session cookie naming the token's subject; a forged or replayed state, a token for
another audience and the authorization server's refusal each leave the person signed out with one line
saying what failed."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from mcp_agent_kit.auth.settings import OAuthSettings
from mcp_agent_kit.board.cli import make_board_http
from mcp_agent_kit.board.web_app import mount_web
from mcp_agent_kit.store.memory import MemoryStore
from tests.auth.fake_as import FakeAuthorizationServer
from tests.board.fake_board import FakeBoard


class Reply:
    def __init__(self, status: int, url: str, headers: Any, body: str) -> None:
        self.status, self.url, self.body = status, url, body
        self.cookies: list[str] = headers.get_all("Set-Cookie") or []
        self.location: str = headers.get("Location") or ""


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:
        return None  # the 3xx comes back as it is


class Browser:
    """A cookie jar, following redirects or not."""

    def __init__(self) -> None:
        self.jar = CookieJar()
        cookies = urllib.request.HTTPCookieProcessor(self.jar)
        self.follow = urllib.request.build_opener(cookies)
        self.stay = urllib.request.build_opener(cookies, _Stay)

    def get(self, url: str, follow: bool = True, headers: dict[str, str] | None = None) -> Reply:
        try:
            request = urllib.request.Request(url, headers=headers or {})
            with (self.follow if follow else self.stay).open(request, timeout=30) as answer:
                return Reply(answer.status, answer.url, answer.headers, answer.read().decode())
        except urllib.error.HTTPError as exc:
            with exc:
                return Reply(exc.code, exc.url, exc.headers, exc.read().decode())

    def cookie(self, name: str) -> str | None:
        return next((c.value for c in self.jar if c.name == name), None)


class Served:
    def __init__(self, origin: str, issuer: FakeAuthorizationServer) -> None:
        self.origin, self.issuer = origin, issuer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    issuer = FakeAuthorizationServer(code=True)
    board = FakeBoard(None, Path(tmp_path_factory.mktemp("web-oauth")))
    store = MemoryStore()
    http, tools = make_board_http(board, "127.0.0.1", 0, oauth=OAuthSettings(issuer=issuer.issuer))
    mount_web(http, store)
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{http.server_address[1]}", issuer)
    finally:
        tools.close()
        http.shutdown()
        http.server_close()
        thread.join(10)
        board.close()
        store.close()
        issuer.close()


def test_sign_in_through_the_issuer_sets_the_session(served: Served) -> None:
    browser = Browser()
    page = browser.get(served.origin + "/login")
    assert page.status == 200 and f">Sign in with {served.issuer.issuer}<" in page.body
    assert '<div id="login-token-part" hidden>' in page.body  # OAuth only: no token field
    start = browser.get(served.origin + "/login/oauth?next=/%3Ftask%3D7", follow=False)
    asked = parse_qs(urlsplit(start.location).query)
    assert start.status == 303 and start.location.startswith(served.issuer.issuer + "/authorize?")
    assert asked["code_challenge_method"] == ["S256"] and asked["resource"] == [served.origin + "/mcp"]
    assert asked["redirect_uri"] == [served.origin + "/login/callback"] and asked["response_type"] == ["code"]
    flags = {part.strip() for part in start.cookies[0].split(";")}
    assert start.cookies[0].startswith("mak_oauth=") and {"HttpOnly", "SameSite=Lax", "Path=/login"} <= flags
    done = browser.get(start.location)  # the issuer approves, the board exchanges the code
    assert done.status == 200 and done.url.startswith(served.origin + "/login/callback?")
    assert '<meta http-equiv="refresh" content="0;url=/?task=7">' in done.body  # same-site: the cookie goes along
    assert browser.cookie("mak_oauth") is None and browser.cookie("mak_session")
    page = browser.get(served.origin + "/?task=7")
    assert page.status == 200 and 'id="new-task-form"' in page.body
    session = browser.get(served.origin + "/api/session")
    assert '"principal": "oauth:alice"' in session.body and '"auth": true' in session.body


def test_a_forged_or_replayed_state_is_refused(served: Served) -> None:
    browser = Browser()
    start = browser.get(served.origin + "/login/oauth", follow=False)
    state = parse_qs(urlsplit(start.location).query)["state"][0]
    forged = browser.get(f"{served.origin}/login/callback?code=any&state=forged{state}")
    assert forged.status == 400 and "state does not match" in forged.body
    assert browser.cookie("mak_session") is None and browser.cookie("mak_oauth") is None  # that flow is over
    stranger = Browser().get(f"{served.origin}/login/callback?code=any&state={state}")  # not the browser's
    assert stranger.status == 400 and "no sign-in was started in this browser" in stranger.body
    browser = Browser()
    start = browser.get(served.origin + "/login/oauth", follow=False)
    held = browser.cookie("mak_oauth")
    callback = browser.get(start.location, follow=False).location
    assert browser.get(callback).status == 200 and browser.cookie("mak_session")
    again = browser.get(callback)  # the same answer twice: its flow cookie is gone
    assert again.status == 400 and "no sign-in was started" in again.body
    copied = Browser().get(callback, headers={"Cookie": f"mak_oauth={held}"})  # a copy of the spent cookie
    assert copied.status == 502 and "could not exchange the authorization code" in copied.body


def test_a_token_for_another_audience_is_refused(served: Served) -> None:
    served.issuer.audience = "http://127.0.0.1:9/elsewhere"
    try:
        browser = Browser()
        reply = browser.get(served.origin + "/login/oauth")
    finally:
        served.issuer.audience = ""
    assert reply.status == 401 and "is not one this board accepts" in reply.body
    assert browser.cookie("mak_session") is None and browser.cookie("mak_oauth") is None


def test_the_issuers_refusal_is_shown(served: Served) -> None:
    served.issuer.deny = "access_denied"
    try:
        browser = Browser()
        reply = browser.get(served.origin + "/login/oauth")
    finally:
        served.issuer.deny = ""
    assert reply.status == 403 and "refused: access_denied" in reply.body and browser.cookie("mak_session") is None
    assert 'role="alert">Not signed in' in reply.body and "eyJ" not in reply.body  # one line, never a token


def test_a_configured_client_id_is_used_without_registering(served: Served) -> None:
    from mcp_agent_kit.board.web_oauth import WebOAuth

    resource = OAuthSettings(issuer=served.issuer.issuer).build("https://board.example/mcp")
    registered = dict(served.issuer.clients)
    asked = WebOAuth(resource, MemoryStore(), client_id="the-board").start()
    sent = parse_qs(urlsplit(asked.url).query)
    assert sent["client_id"] == ["the-board"] and sent["redirect_uri"] == ["https://board.example/login/callback"]
    assert served.issuer.clients == registered
