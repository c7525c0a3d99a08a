"""client.oauth.redirect: the browser step of the authorization-code flow.

A redirector has a `redirect_uri` and `authorize(url)`, which returns the query parameters the
authorization server sent back to that URI (`code`, `state`, `iss`, or `error`).
`BrowserRedirect` listens on a loopback port (127.0.0.1, RFC 8252 §7.3) for one `GET /callback`,
prints the authorization URL to stderr and opens a browser when there is one; the wait is
bounded. `HeadlessRedirect` (CI, conformance, pre-approved test servers) GETs the authorization
URL itself and follows redirects, never past a few hops, until one points at its redirect URI.
Rules: only https URLs, or http on loopback, are opened or followed; no shell is involved.
"""

from __future__ import annotations

import contextlib
import http.server
import sys
import threading
import webbrowser
from typing import Protocol
from urllib.parse import parse_qsl, urljoin, urlsplit

from mcp_agent_kit.auth.jwks import check_fetchable
from mcp_agent_kit.client.oauth.errors import OAuthError
from mcp_agent_kit.client.oauth.net import Send, send

MAX_HOPS = 5
WAIT = 300.0
_PAGE = b"<!doctype html><title>Signed in</title><p>You may close this window and return to the terminal.</p>"


class Redirector(Protocol):
    redirect_uri: str

    def authorize(self, url: str) -> dict[str, str]: ...


def _checked(url: str) -> str:
    try:
        check_fetchable(url)
    except ValueError as exc:
        raise OAuthError(f"refusing the authorization URL: {exc}") from None
    return url


def _params(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def _same_endpoint(url: str, redirect_uri: str) -> bool:
    a, b = urlsplit(url), urlsplit(redirect_uri)
    return (a.scheme, a.netloc, a.path) == (b.scheme, b.netloc, b.path)


class HeadlessRedirect:
    """Follow the authorization server's redirects without a browser (it must approve on its own)."""

    def __init__(self, redirect_uri: str = "http://127.0.0.1:8976/callback", transport: Send = send) -> None:
        self.redirect_uri = redirect_uri
        self._send = transport

    def authorize(self, url: str) -> dict[str, str]:
        for _ in range(MAX_HOPS):
            reply = self._send("GET", _checked(url), {"Accept": "text/html"}, None)
            location = reply.headers.get("location")
            if reply.status not in (301, 302, 303, 307, 308) or not location:
                raise OAuthError(f"the authorization server answered HTTP {reply.status} without redirecting "
                                 "(headless mode needs a server that approves on its own)")
            url = urljoin(url, location)
            if _same_endpoint(url, self.redirect_uri):
                return _params(url)
        raise OAuthError(f"more than {MAX_HOPS} redirects before reaching {self.redirect_uri}")


class _Callback(http.server.BaseHTTPRequestHandler):
    server: _CallbackServer

    def do_GET(self) -> None:
        if urlsplit(self.path).path != "/callback":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(_PAGE)))
        self.end_headers()
        self.wfile.write(_PAGE)
        if self.server.result is None:
            self.server.result = _params(self.path)
            self.server.done.set()

    def log_message(self, format: str, *args: object) -> None:  # the query carries the code: never log it
        return


class _CallbackServer(http.server.HTTPServer):
    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Callback)
        self.result: dict[str, str] | None = None
        self.done = threading.Event()


class BrowserRedirect:
    """A loopback listener for the redirect, and the user's browser for the login."""

    def __init__(self, port: int = 0, *, open_browser: bool = True, wait: float = WAIT) -> None:
        self._server: _CallbackServer | None = None
        if port == 0:  # any free port: take it now, so the redirect URI is known
            self._server = self._listen(0)
            port = self._server.server_address[1]
        self.port = port
        self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        self.open_browser = open_browser
        self.wait = wait

    @staticmethod
    def _listen(port: int) -> _CallbackServer:
        try:
            return _CallbackServer(port)
        except OSError as exc:
            raise OAuthError(f"cannot listen on 127.0.0.1:{port} for the login redirect ({exc}): "
                             "choose another redirect port") from None

    def authorize(self, url: str) -> dict[str, str]:
        """Listen (only while a login waits), show the URL, and wait for the browser to come back."""
        server = self._server or self._listen(self.port)
        self._server = None
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        thread.start()
        try:
            print(f"To log in, open this URL in a browser:\n  {_checked(url)}", file=sys.stderr, flush=True)
            if self.open_browser:
                with contextlib.suppress(webbrowser.Error):
                    webbrowser.open(url)
            if not server.done.wait(self.wait):
                raise OAuthError(f"no login redirect arrived at {self.redirect_uri} within {self.wait:g}s")
            return dict(server.result or {})
        finally:
            server.shutdown()
            server.server_close()
