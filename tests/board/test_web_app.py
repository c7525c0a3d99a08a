"""The web board's HTTP face (board.web_app, board.web_auth) on a served board: sign-in and the cookie's
attributes, forged and expired cookies refused, CSRF and Origin checks on state-changing requests, the
security headers on every response, only the shipped static files, and the page itself (under 150 KB, no
inline script, style or event attribute, no markup built from data). The page in a browser is tests/browser's."""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from mcp_agent_kit.board.cli import make_board_http
from mcp_agent_kit.board.web_app import CSP, mount_web, shipped
from mcp_agent_kit.board.web_auth import COOKIE, WebAuth, cookie_value
from mcp_agent_kit.store.memory import MemoryStore
from tests.board.fake_board import FakeBoard

TOKEN = "web-board-token"
WEB = Path(__file__).resolve().parents[2] / "mcp_agent_kit" / "board" / "web"


class Served:
    """A board's MCP endpoint with the web board mounted, on a free loopback port."""

    def __init__(self, port: int, web: Any, store: MemoryStore) -> None:
        self.port, self.web, self.store = port, web, store
        self.origin = f"http://127.0.0.1:{port}"

    def request(self, method: str, path: str, body: dict[str, str] | None = None, headers: dict[str, str] | None = None
                ) -> tuple[int, dict[str, str], str, list[str]]:
        """(status, headers in lower case, body text, every Set-Cookie) of one request; a form body as a form."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        sent = dict(headers or {})
        data = None
        if body is not None:
            data = urlencode(body).encode()
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        try:
            conn.request(method, path, data, sent)
            reply = conn.getresponse()
            text = reply.read().decode("utf-8", "replace")
            return (reply.status, {k.lower(): v for k, v in reply.getheaders()}, text,
                    reply.headers.get_all("Set-Cookie") or [])
        finally:
            conn.close()

    def sign_in(self) -> str:
        status, headers, _, cookies = self.request("POST", "/login", {"token": TOKEN}, {"Origin": self.origin})
        assert status == 303 and headers["location"] == "/", (status, headers)
        value = cookie_value(cookies[0].split(";")[0])
        assert value
        return f"{COOKIE}={value}"


def _serve(tmp: Path, **options: Any) -> Iterator[Served]:
    board = FakeBoard(None, tmp)
    store = MemoryStore()
    http, tools = make_board_http(board, "127.0.0.1", 0, **options)
    web = mount_web(http, store)
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Served(int(http.server_address[1]), web, store)
    finally:
        tools.close()
        http.shutdown()
        http.server_close()
        thread.join(10)
        board.close()
        store.close()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from _serve(tmp_path_factory.mktemp("web"), tokens={TOKEN: "alice"})


@pytest.fixture(scope="module")
def open_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from _serve(tmp_path_factory.mktemp("web-open"))


def test_sign_in_sets_a_strict_http_only_cookie(guarded: Served) -> None:
    status, headers, _, _ = guarded.request("GET", "/")
    assert status == 303 and headers["location"] == "/login"
    status, _, form, _ = guarded.request("GET", "/login")
    assert status == 200 and 'name="token"' in form and 'role="alert" hidden' in form
    status, _, again, cookies = guarded.request("POST", "/login", {"token": "wrong"}, {"Origin": guarded.origin})
    assert status == 401 and 'name="token"' in again and "not one this board accepts" in again and not cookies
    status, headers, _, cookies = guarded.request("POST", "/login", {"token": TOKEN}, {"Origin": guarded.origin})
    assert status == 303 and headers["location"] == "/"
    attributes = [part.strip() for part in cookies[0].split(";")]
    assert attributes[0].startswith(f"{COOKIE}=") and {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attributes)
    assert "Secure" not in attributes  # plain http on loopback; over TLS (or secure=True) it is set
    cookie = attributes[0]
    status, _, page, _ = guarded.request("GET", "/", headers={"Cookie": cookie})
    assert status == 200 and 'id="new-task-form"' in page
    status, _, body, _ = guarded.request("GET", "/api/session", headers={"Cookie": f"other=1; {cookie}"})
    session = json.loads(body)
    assert status == 200 and session["auth"] is True and session["principal"] == "alice"
    assert guarded.web.auth.csrf_ok(guarded.web.auth.session(cookie_value(cookie)), session["csrf"])
    assert guarded.request("GET", "/login", headers={"Cookie": cookie})[1]["location"] == "/"  # signed in already
    status, _, body, _ = guarded.request("GET", "/api/session", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and json.loads(body)["csrf"] is None  # a program: no cookie, no CSRF token
    assert guarded.request("GET", "/api/session")[0] == 401


def test_forged_expired_and_foreign_cookies_are_refused(guarded: Served) -> None:
    cookie = guarded.sign_in()
    name, _, value = cookie.partition("=")
    version, principal, expires, nonce, signature = value.split(".")
    forged = [
        ".".join([version, "bWFsbG9yeQ", expires, nonce, signature]),  # another principal, the old signature
        ".".join([version, principal, str(int(expires) + 10**6), nonce, signature]),  # a later expiry
        value[:-2] + ("AA" if not value.endswith("AA") else "BB"),  # a changed signature
        "garbage", "", "." * 5, value + ".extra",
    ]
    forged.append(WebAuth(bytes(32)).issue("token:someone"))  # well formed, signed with another key
    expired = WebAuth.for_store(guarded.store, clock=lambda: 1000.0).issue("token:x")  # the board's key, long expired
    for bad in [*forged, expired]:
        status, headers, _, _ = guarded.request("GET", "/", headers={"Cookie": f"{name}={bad}"})
        assert status == 303 and headers["location"] == "/login", bad
        assert guarded.request("GET", "/api/session", headers={"Cookie": f"{name}={bad}"})[0] == 401, bad


def test_csrf_is_required_to_sign_out(guarded: Served) -> None:
    cookie = guarded.sign_in()
    csrf = json.loads(guarded.request("GET", "/api/session", headers={"Cookie": cookie})[2])["csrf"]
    other = json.loads(guarded.request("GET", "/api/session", headers={"Cookie": guarded.sign_in()})[2])["csrf"]
    assert other != csrf  # bound to the session, not to the principal
    origin = {"Origin": guarded.origin, "Cookie": cookie}
    for form in ({}, {"csrf": ""}, {"csrf": "wrong"}, {"csrf": other}):
        status, _, text, cookies = guarded.request("POST", "/logout", form, origin)
        assert status == 403 and "CSRF" in text and not cookies, form
    assert guarded.request("POST", "/logout", {"csrf": csrf}, {"Origin": guarded.origin})[0] == 403  # no session
    status, headers, _, cookies = guarded.request("POST", "/logout", {}, {**origin, "X-CSRF-Token": csrf})
    assert status == 303 and headers["location"] == "/login" and "Max-Age=0" in cookies[0]
    status, headers, _, cookies = guarded.request("POST", "/logout", {"csrf": csrf}, origin)
    assert status == 303 and cookies  # the form field works as well
    auth = guarded.web.auth
    session = auth.session(cookie.partition("=")[2])
    assert auth.csrf_ok(session, csrf) and not auth.csrf_ok(session, other) and not auth.csrf_ok(None, csrf)
    assert not auth.csrf_ok(session, None) and not auth.csrf_ok(session, 42)  # what a message carries: any JSON
    assert session is not None and auth.csrf_check(session)(csrf) and not auth.csrf_check(session)(other)


def test_another_origin_or_host_is_refused(guarded: Served) -> None:
    cookie = guarded.sign_in()
    csrf = json.loads(guarded.request("GET", "/api/session", headers={"Cookie": cookie})[2])["csrf"]
    evil = "http://evil.example"
    status, _, text, cookies = guarded.request("POST", "/login", {"token": TOKEN}, {"Origin": evil})
    assert status == 403 and "--allow-origin" in text and not cookies
    status, _, _, cookies = guarded.request("POST", "/logout", {"csrf": csrf}, {"Origin": evil, "Cookie": cookie})
    assert status == 403 and not cookies
    assert guarded.request("GET", "/", headers={"Host": "evil.example", "Cookie": cookie})[0] == 403  # rebinding


def test_security_headers_on_every_response(guarded: Served) -> None:
    cookie = guarded.sign_in()
    app_js = shipped()["app.js"]
    asks = [("GET", "/", None, {}), ("GET", "/", None, {"Cookie": cookie}), ("GET", "/login", None, {}),
            ("POST", "/login", {"token": "no"}, {}), ("GET", "/api/session", None, {}),
            ("GET", "/static/app.js", None, {}), ("GET", "/static/app.js", None, {"If-None-Match": app_js.etag}),
            ("GET", "/static/nope.js", None, {}), ("POST", "/logout", {}, {"Cookie": cookie}),
            ("GET", "/logout", None, {}), ("PUT", "/", None, {}),
            ("POST", "/login", {"token": "x"}, {"Origin": "null"}),
            ("HEAD", "/login", None, {})]
    statuses = set()
    for method, path, form, headers in asks:
        status, got, _, _ = guarded.request(method, path, form, headers)
        statuses.add(status)
        assert got["content-security-policy"] == CSP, (method, path)
        assert got["x-content-type-options"] == "nosniff" and got["referrer-policy"] == "same-origin", (method, path)
    assert {200, 303, 304, 401, 403, 404, 405} <= statuses
    assert "script-src 'self'" in CSP and "'unsafe-inline'" not in CSP and "frame-ancestors 'none'" in CSP


def test_static_serves_only_the_shipped_files(guarded: Served) -> None:
    for name, file in shipped().items():
        status, headers, body, _ = guarded.request("GET", f"/static/{name}?v=1")
        if name.endswith(".html"):
            assert status == 404, name  # the pages are / and /login
            continue
        assert status == 200 and body.encode() == file.body, name
        assert headers["etag"] == file.etag and headers["cache-control"] == "no-cache"
        assert headers["content-type"].startswith("text/javascript" if name.endswith(".js") else "text/css")
        assert guarded.request("GET", f"/static/{name}", headers={"If-None-Match": file.etag})[0] == 304
    for path in ("/static/../web_app.py", "/static/..%2fweb_auth.py", "/static/%2e%2e/web_app.py", "/static/",
                 "/static/web/app.js", "/static//etc/passwd", "/static/app.js/", "/static/APP.JS",
                 "/static/__init__.py", "/static/index.html", "/static"):
        assert guarded.request("GET", path)[0] == 404, path
    assert set(shipped()) == {p.name for p in WEB.iterdir()}


class Markup(HTMLParser):
    """What the pages reference and anything inline: scripts, styles, event attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []
        self.refs: list[str] = []
        self.ids: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        self.ids += [named["id"] or ""] if "id" in named else []
        self.inline += [f"{tag} {name}" for name, _ in attrs if name.startswith("on") or name == "style"]
        if tag == "style":
            self.inline.append("<style>")
        if tag == "script":
            self.inline += [] if named.get("src") else ["<script> without src"]
            self._script = True
        self.refs += [str(named[key]) for key in ("src", "href") if str(named.get(key) or "").startswith("/static/")]
        if str(named.get("href") or "").startswith("javascript:"):
            self.inline.append("javascript: URL")

    def handle_endtag(self, tag: str) -> None:
        self._script = self._script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self._script and data.strip():
            self.inline.append("script text")


def test_the_page_is_small_and_has_nothing_inline() -> None:
    files = shipped()
    assert sum(len(f.body) for f in files.values()) < 150_000
    for page in ("index.html", "login.html"):
        markup = Markup()
        markup.feed(files[page].body.decode())
        assert markup.inline == [], (page, markup.inline)
        assert len(markup.ids) == len(set(markup.ids)), page
        for ref in markup.refs:
            assert ref.removeprefix("/static/") in files, (page, ref)
    scripts = {name: f.body.decode() for name, f in files.items() if name.endswith(".js")}
    for name, text in scripts.items():
        for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert banned not in text, (name, banned)
        for module in re.findall(r"from '\./([\w.]+)'", text):
            assert module in files, (name, module)
    hooks = scripts["app.js"].split("import ", 1)[0]  # the documented test hooks exist in the page
    page = files["index.html"].body.decode()
    for hook in ("new-task-prompt", "new-task-submit", "transcript", "question-options", "diff", "task-accept",
                 "task-discard", "task-cancel", "status-line"):
        assert f"#{hook}" in hooks and f'id="{hook}"' in page, hook


def test_without_a_token_there_is_no_sign_in(open_board: Served) -> None:
    status, _, page, _ = open_board.request("GET", "/")
    assert status == 200 and "/static/app.js" in page
    assert json.loads(open_board.request("GET", "/api/session")[2]) == {"principal": None, "csrf": None, "auth": False}
    assert open_board.request("GET", "/login")[1]["location"] == "/"
    status, _, _, cookies = open_board.request("POST", "/login", {"token": "x"}, {"Origin": open_board.origin})
    assert status == 303 and not cookies


def test_the_key_is_shared_through_the_store() -> None:
    store = MemoryStore()
    try:
        one, two = WebAuth.for_store(store), WebAuth.for_store(store)  # two replicas on one store
        value = one.issue("alice")
        session = two.session(value)
        assert session is not None and session.principal == "alice" and two.csrf(session) == one.csrf(session)
        assert "; Secure" in one.cookie(value, secure=True) and "; Secure" not in one.cookie(value, secure=False)
        assert WebAuth.for_store(MemoryStore()).session(value) is None  # another board's key
    finally:
        store.close()
