"""board.web_app: the web board's HTTP face — the page, sign-in, sign-out, its static files, the session.

Routes (an httpd engine app mounted on the board's server, beside /mcp, /a2a and [live]'s /ws):
`GET /` the page (board/web/index.html; with auth required and no valid session, 303 to /login),
`GET /login` the sign-in form, `POST /login` (form field `token`: one of the board's tokens, or an OAuth
access token its issuer signed, pasted) sets `mak_session` and 303s to /; a wrong token gets 401 and
the form again; `POST /logout` (CSRF) clears it; `GET /static/NAME` only the files shipped in
board/web/ (looked up by exact name: no path is ever joined), with ETag and `Cache-Control: no-cache`;
`GET /api/session` → {principal, csrf, auth} (401 when auth is required and neither a session nor a
bearer token is sent). Every response carries CSP (no inline script or style), nosniff, no referrer
elsewhere and no framing. Every request passes the board's gate (httpd.gate.Policy: Host, and Origin when sent);
state-changing ones also need the session's CSRF token (form field `csrf` or X-CSRF-Token). No token
and no OAuth (a loopback bind): no sign-in, principal None. The cookie is `Secure` when the request came
over TLS (or `secure=True`: the board is reached through an https proxy). With --oauth-issuer the form
offers "Sign in with <issuer>" (the token field only when tokens are configured too): `GET /login/oauth`
(`?next=/local/path` optional) sets the signed `mak_oauth` cookie (state, PKCE verifier, return path) and
303s to the issuer's authorization endpoint; `GET /login/callback` checks and exchanges what comes back
(board.web_oauth), sets `mak_session` for the token's subject and answers a page that moves on to the
return path at once (a meta refresh: a same-site navigation, so the Strict cookie goes with it); any failure
shows the form with one line naming it. A pasted access token is still accepted by `POST /login`.
Rules: HTTP and wiring only; the cookie and CSRF are board.web_auth's, the live wire board.live's.
"""

from __future__ import annotations

import hashlib
import re
import ssl
from dataclasses import dataclass
from functools import cache
from html import escape
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from mcp_agent_kit.board.live_http import Signed
from mcp_agent_kit.board.web_auth import Flow, WebAuth, WebSession
from mcp_agent_kit.board.web_oauth import CALLBACK, START, SignInError, WebOAuth
from mcp_agent_kit.httpd.handler import Handler

if TYPE_CHECKING:
    from mcp_agent_kit.httpd.engine import App, Request, Server
    from mcp_agent_kit.httpd.gate import Policy
    from mcp_agent_kit.store.base import Store

__all__ = ["CSP", "PATHS", "SECURITY_HEADERS", "STATIC", "WebApp", "mount_web", "shipped"]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = (("Content-Security-Policy", CSP), ("X-Content-Type-Options", "nosniff"),
                    ("Referrer-Policy", "same-origin"),  # no-referrer: a form POST would say "Origin: null"
                    ("X-Frame-Options", "DENY"))
PATHS = ("/", "/login", "/logout", "/api/session", START, CALLBACK)
STATIC = "/static"
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
PAGES = ("index.html", "login.html", "signed-in.html")  # served at /, /login, /login/callback; not under /static
LOGIN_ERROR = '<p id="login-error" class="error" role="alert" hidden></p>'
WRONG_TOKEN = "That token is not one this board accepts."
NO_FLOW = "Not signed in: no sign-in was started in this browser, or it took too long. Start again."
OAUTH_LINK = ('<p id="login-oauth" hidden>', '<p id="login-oauth">')
OAUTH_NAME = ">Sign in with the authorization server<"
TOKEN_PART = ('<div id="login-token-part">', '<div id="login-token-part" hidden>')
MAX_FORM = 16384
_LOCAL = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*")


@dataclass(frozen=True)
class Shipped:
    body: bytes
    type: str
    etag: str


@cache
def shipped() -> dict[str, Shipped]:
    """board/web/'s files by name (read once): what /, /login and /static/NAME serve, nothing else."""
    found: dict[str, Shipped] = {}
    for entry in (resources.files("mcp_agent_kit.board") / "web").iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if entry.is_file() and suffix in TYPES:
            body = entry.read_bytes()
            found[entry.name] = Shipped(body, TYPES[suffix], '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
    return found


class WebApp:
    """The web board on one server: the gate it shares with /mcp, the session signer, https or not."""

    def __init__(self, policy: Policy, auth: WebAuth, *, secure: bool = False, oauth: WebOAuth | None = None) -> None:
        self.policy, self.auth, self.secure, self.oauth = policy, auth, secure, oauth

    def app(self) -> App:
        handle: App = WebHandler.serve(self)
        return handle

    def mount(self, server: Server) -> None:
        server.mount(self.app(), paths=PATHS, trees=(STATIC,))

    def signed(self, request: Request) -> Signed | None:
        """The page's sign-in a request carries (its session cookie), for /ws: who, and its CSRF check."""
        session = self.auth.from_headers(request.headers)
        return None if session is None else Signed(session.principal, self.auth.csrf_check(session))


def mount_web(server: Any, store: Store, *, secure: bool = False, client_id: str | None = None,
              client_secret: str | None = None) -> WebApp:
    """Serve the web board on `server` (an engine Server with a `policy`, such as the board's MCP endpoint),
    its sessions signed with the key `store` keeps; the WebApp (its `auth` is what /ws checks cookies with).
    With OAuth on the policy, the page signs in with its issuer, as `client_id` (with `client_secret`) when
    given, else as the client it registers there (kept in `store`)."""
    resource = server.policy.oauth
    oauth = None if resource is None else WebOAuth(resource, store, client_id=client_id, client_secret=client_secret)
    web = WebApp(server.policy, WebAuth.for_store(store), secure=secure, oauth=oauth)
    web.mount(server)
    return web


class WebHandler(Handler):
    server: WebApp  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:  # quiet, as the other faces
        pass

    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS:
            self.send_header(name, value)
        super().end_headers()

    # ---- replies -----------------------------------------------------------------------------------
    def _reply(self, status: int, body: bytes = b"", content_type: str = "text/plain; charset=utf-8",
               headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _text(self, status: int, text: str) -> None:
        self._reply(status, text.encode() + b"\n", headers=(("Cache-Control", "no-store"),))

    def _json(self, status: int, value: dict[str, Any]) -> None:
        import json

        self._reply(status, json.dumps(value).encode(), "application/json",
                    (("Cache-Control", "no-store"),))

    def _see_other(self, where: str, *cookies: str) -> None:
        self._reply(303, b"", headers=(("Location", where), ("Cache-Control", "no-store"),
                                       *(("Set-Cookie", c) for c in cookies)))

    def _page(self, name: str, status: int = 200, swaps: tuple[tuple[str, str], ...] = (),
              cookies: tuple[str, ...] = ()) -> None:
        body = shipped()[name].body
        for old, new in swaps:
            body = body.replace(old.encode(), new.encode())
        self._reply(status, body, shipped()[name].type,
                    (("Cache-Control", "no-store"), *(("Set-Cookie", c) for c in cookies)))

    def _login_page(self, status: int = 200, error: str | None = None, cookies: tuple[str, ...] = ()) -> None:
        """The sign-in form: the OAuth link when OAuth is configured, the token field when tokens are
        (or nothing else signs in), and `error` as its one alert line."""
        swaps: list[tuple[str, str]] = []
        if self.server.oauth is not None:
            swaps += [OAUTH_LINK, (OAUTH_NAME, f">Sign in with {escape(self.server.oauth.issuer)}<")]
            if not self.server.policy.has_tokens:
                swaps.append(TOKEN_PART)
        if error is not None:
            swaps.append((LOGIN_ERROR, f'<p id="login-error" class="error" role="alert">{escape(error)}</p>'))
        self._page("login.html", status, tuple(swaps), cookies)

    # ---- who is asking -----------------------------------------------------------------------------
    @property
    def path_only(self) -> str:
        return self.path.partition("?")[0]

    @property
    def https(self) -> bool:
        return self.server.secure or isinstance(self.connection, ssl.SSLSocket)

    def _session(self) -> WebSession | None:
        return self.server.auth.from_headers(self.headers)

    def _gate(self) -> bool:
        """Host and Origin (DNS rebinding, cross-site requests): False after a 403."""
        refused = self.server.policy.refusal(self.headers.get("Host"), self.headers.get("Origin"), "the board")
        if refused is not None:
            self._text(403, refused)
        return refused is None

    def _form(self) -> dict[str, str] | None:
        """The url-encoded form body (first value of each field); None after a 413/415."""
        body = self.rfile.read(MAX_FORM + 1)
        if not self.body_complete or len(body) > MAX_FORM:
            self._text(413, "the form is too large")
            return None
        kind = (self.headers.get("Content-Type") or "").partition(";")[0].strip().lower()
        if kind not in ("application/x-www-form-urlencoded", ""):
            self._text(415, "send the form as application/x-www-form-urlencoded")
            return None
        text = body.decode("utf-8", "replace")
        return {key: values[0] for key, values in parse_qs(text, max_num_fields=20).items()}

    # ---- routes ------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        if not self._gate():
            return
        path = self.path_only
        if path.startswith(STATIC + "/"):
            self._static(path[len(STATIC) + 1:])
            return
        route = {"/": self._index, "/login": self._login_form, "/api/session": self._api_session,
                 START: self._oauth_start, CALLBACK: self._oauth_callback}.get(path)
        if route is None:
            self._text(405 if path == "/logout" else 404, "sign out with POST /logout" if path == "/logout"
                       else "no such page")
            return
        route()

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        if not self._gate():
            return
        route = {"/login": self._login, "/logout": self._logout}.get(self.path_only)
        if route is None:
            self.send_header_allow()
            return
        route()

    def method_missing(self) -> None:
        self.send_header_allow()

    def send_header_allow(self) -> None:
        allow = "POST" if self.path_only == "/logout" else "GET, HEAD, POST" if self.path_only == "/login" \
            else "GET, HEAD"
        self._reply(405, b"method not allowed here\n", headers=(("Allow", allow),))

    def _index(self) -> None:
        if self.server.policy.auth_required and self._session() is None:
            self._see_other("/login")
            return
        self._page("index.html")

    def _login_form(self) -> None:
        if not self.server.policy.auth_required or self._session() is not None:
            self._see_other("/")
            return
        self._login_page()

    def _oauth_start(self) -> None:
        """Send the browser to the issuer, the flow's state and verifier in the `mak_oauth` cookie."""
        oauth = self.server.oauth
        if oauth is None:
            self._text(404, "this board has no OAuth sign-in (start it with --oauth-issuer)")
            return
        if self._session() is not None:
            self._see_other("/")
            return
        try:
            asked = oauth.start()
        except SignInError as exc:
            self._login_page(exc.status, str(exc))
            return
        flow = Flow(asked.state, asked.verifier, _local_path(self._query().get("next")))
        self._see_other(asked.url, self.server.auth.flow_cookie(self.server.auth.flow(flow), secure=self.https))

    def _oauth_callback(self) -> None:
        """The issuer's answer: checked against this browser's `mak_oauth`, which goes either way."""
        from mcp_agent_kit.client.oauth.session import AuthorizationRequest

        oauth = self.server.oauth
        if oauth is None:
            self._text(404, "this board has no OAuth sign-in (start it with --oauth-issuer)")
            return
        cleared = self.server.auth.flow_cookie("", secure=self.https)
        flow = self.server.auth.flow_of(self.headers)
        if flow is None:
            self._login_page(400, NO_FLOW, (cleared,))
            return
        try:
            principal = oauth.finish(AuthorizationRequest("", flow.state, flow.verifier, oauth.redirect_uri),
                                     self._query())
        except SignInError as exc:
            self._login_page(exc.status, str(exc), (cleared,))
            return
        # a page that moves on, not a 303: the browser came here from the issuer's site, and a redirect
        # would keep that navigation cross-site, so it would not send the SameSite=Strict cookie just set
        back = escape(flow.back)
        self._page("signed-in.html", 200, (('content="0;url=/"', f'content="0;url={back}"'),
                                           ('href="/">', f'href="{back}">')),
                   (cleared, self.server.auth.cookie(self.server.auth.issue(principal), secure=self.https)))

    def _query(self) -> dict[str, str]:
        """The request's query parameters (first value of each)."""
        text = self.path.partition("?")[2]
        return {key: values[0] for key, values in parse_qs(text, max_num_fields=20).items()}

    def _login(self) -> None:
        if not self.server.policy.auth_required:
            self._see_other("/")
            return
        form = self._form()
        if form is None:
            return
        principal = self._principal_of((form.get("token") or "").strip())
        if principal is None:
            self._login_page(401, WRONG_TOKEN)
            return
        self._see_other("/", self.server.auth.cookie(self.server.auth.issue(principal), secure=self.https))

    def _principal_of(self, token: str) -> str | None:
        """The principal a pasted token names (a board token, or an OAuth access token), None when refused."""
        from mcp_agent_kit.auth.resource import Refusal

        if not token or len(token) > 8192:
            return None
        try:
            return self.server.policy.authorize("Bearer " + token, "GET", "/")
        except Refusal:
            return None

    def _logout(self) -> None:
        form = self._form()
        if form is None:
            return
        session = self._session()
        token = self.headers.get("X-CSRF-Token") or form.get("csrf")
        if self.server.policy.auth_required and not self.server.auth.csrf_ok(session, token):
            self._text(403, "the CSRF token is missing or wrong: reload the page and sign out again")
            return
        self._see_other("/login" if self.server.policy.auth_required else "/",
                        self.server.auth.cleared(secure=self.https))

    def _api_session(self) -> None:
        if not self.server.policy.auth_required:
            self._json(200, {"principal": None, "csrf": None, "auth": False})
            return
        session = self._session()
        if session is not None:
            self._json(200, {"principal": session.principal, "csrf": self.server.auth.csrf(session), "auth": True,
                             "expires": session.expires})
            return
        principal = self._principal_of(self._bearer())
        if principal is None:
            self._json(401, {"error": "sign in first", "login": "/login"})
            return
        self._json(200, {"principal": principal, "csrf": None, "auth": True})

    def _bearer(self) -> str:
        scheme, _, credentials = (self.headers.get("Authorization") or "").strip().partition(" ")
        return credentials.strip() if scheme.lower() == "bearer" else ""

    def _static(self, name: str) -> None:
        file = None if name in PAGES else shipped().get(name)
        if file is None:
            self._text(404, "no such file")
            return
        cached = (("ETag", file.etag), ("Cache-Control", "no-cache"))
        if file.etag in (tag.strip() for tag in (self.headers.get("If-None-Match") or "").split(",")):
            self.send_response(304)
            for header in cached:
                self.send_header(*header)
            self.end_headers()
            return
        self._reply(200, file.body, file.type, cached)


def _local_path(value: str | None) -> str:
    """`value` when it is a path on this board (URL characters only; never another site, never the sign-in
    itself), else "/"."""
    if not value or len(value) > 512 or value.startswith(("//", "/login")) or not _LOCAL.fullmatch(value):
        return "/"
    return value
