"""The browser harness itself (tests/browser/cdp.py, axe.py) against tiny static pages on loopback.

Pages come from http.server in a thread; a `websockets` sync server shows that the page's own WebSocket reaches
loopback from inside headless Chromium. One Chromium per xdist worker (conftest.py), one tab per test.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.browser.axe import assert_accessible, report, scan
from tests.browser.cdp import Browser, CdpError, JsError, Page, require_chromium

GOOD = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Good page</title></head>
<body><main><h1>Tasks</h1>
<form id="f"><label for="prompt">Prompt</label> <input id="prompt" name="prompt">
<button id="go" type="submit">Create</button></form>
<p id="out" role="status"></p></main>
<script src="/app.js"></script></body></html>"""
APP_JS = """document.getElementById("f").addEventListener("submit", event => {
  event.preventDefault();
  document.getElementById("out").textContent = "created: " + document.getElementById("prompt").value;
});"""
BROKEN = """<!doctype html><html><head><title>Broken</title></head><body>
<img src="/pixel.png"><input id="nameless"><button></button>
<p style="color:#bbb;background:#fff">faint text</p></body></html>"""
NOISY = """<!doctype html><html lang="en"><head><title>Noisy</title></head><body>
<img src="/missing.png" alt="gone">
<script src="/noisy.js"></script></body></html>"""
NOISY_JS = """console.error("boom", 42);
setTimeout(() => { throw new Error("kaput"); }, 0);"""
SOCKET = """<!doctype html><html lang="en"><head><title>Socket</title></head><body>
<script src="/socket.js"></script></body></html>"""
SOCKET_JS = """window.got = null;
const ws = new WebSocket("ws://127.0.0.1:" + new URLSearchParams(location.search).get("port") + "/live");
ws.onopen = () => ws.send("ping from the page");
ws.onmessage = event => { window.got = event.data; ws.close(); };"""
PNG = b"\x89PNG\r\n\x1a\n"


@dataclass
class Site:
    base: str
    pages: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # path -> (content type, body)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    """The static pages on a loopback port of the OS's choosing; / sets an HttpOnly cookie."""
    pages = {
        "/": ("text/html; charset=utf-8", GOOD.encode()), "/app.js": ("text/javascript", APP_JS.encode()),
        "/broken": ("text/html; charset=utf-8", BROKEN.encode()),
        "/noisy": ("text/html; charset=utf-8", NOISY.encode()), "/noisy.js": ("text/javascript", NOISY_JS.encode()),
        "/socket": ("text/html; charset=utf-8", SOCKET.encode()),
        "/socket.js": ("text/javascript", SOCKET_JS.encode()),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            kind, body = pages.get(self.path.partition("?")[0], ("text/plain", b""))
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if self.path == "/":
                self.send_header("Set-Cookie", "sid=s3cret; HttpOnly; SameSite=Strict; Path=/")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}", pages)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_navigate_evaluate_and_errors(page: Page, site: Site) -> None:
    page.navigate(site.base + "/")
    assert page.evaluate("document.title") == "Good page"
    assert page.evaluate("new Promise(resolve => setTimeout(() => resolve({sum: 40 + 2}), 5))") == {"sum": 42}
    with pytest.raises(JsError, match="nope"):
        page.evaluate("(() => { throw new TypeError('nope'); })()")
    with pytest.raises(CdpError, match=r"wait_for timed out.*never-there"):
        page.wait_for("document.querySelector('#never-there')", timeout=0.3)
    with pytest.raises(CdpError, match="nothing matches"):
        page.click("#never-there")
    assert page.evaluate("confirm('Discard the task?')") is True  # dialogs never block the page
    page.accept_dialogs = False
    assert page.evaluate("confirm('Cancel it?')") is False
    assert [e.text for e in page.console if e.source == "dialog"] == ["confirm: Discard the task?",
                                                                       "confirm: Cancel it?"]


def test_type_click_and_keys(page: Page, site: Site) -> None:
    page.navigate(site.base + "/")
    page.type_text("#prompt", "draft")
    page.type_text("#prompt", "fix the bug")  # replaces what the field held
    page.click("#go")
    assert page.wait_for("document.getElementById('out').textContent") == "created: fix the bug"
    page.focus("#prompt")
    page.press("Tab")
    assert page.evaluate("document.activeElement.id") == "go"
    page.press("Tab", "Shift")
    assert page.evaluate("document.activeElement.id") == "prompt"
    page.type_text("#prompt", "by keyboard")
    page.press("Enter")  # submits the form, as a person's Enter does
    assert page.wait_for("document.getElementById('out').textContent.endsWith('keyboard') && "
                         "document.getElementById('out').textContent") == "created: by keyboard"


def test_cookies_are_per_test(page: Page, chromium: Browser, site: Site) -> None:
    page.navigate(site.base + "/")
    cookie = page.cookies(site.base + "/")["sid"]
    assert (cookie["value"], cookie["httpOnly"], cookie["sameSite"]) == ("s3cret", True, "Strict")
    assert page.evaluate("document.cookie") == ""  # HttpOnly: the page's script cannot read it
    page.set_cookie("theme", "dark", site.base + "/")
    assert page.evaluate("document.cookie") == "theme=dark"
    with chromium.new_page() as other:
        assert other.cookies(site.base + "/") == {}  # another browser context: no cookie of this one


def test_page_websocket_reaches_loopback(page: Page, site: Site) -> None:
    from websockets.sync.server import ServerConnection, serve

    seen: list[tuple[str | None, str | bytes]] = []

    def echo(connection: ServerConnection) -> None:
        for message in connection:
            seen.append((connection.request.headers.get("Origin") if connection.request else None, message))
            connection.send(f"echo: {message!s}")

    with serve(echo, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            page.navigate(f"{site.base}/socket?port={server.socket.getsockname()[1]}")
            assert page.wait_for("window.got") == "echo: ping from the page"
        finally:
            server.shutdown()
            thread.join(timeout=10)
    assert seen == [(site.base, "ping from the page")]  # the browser names the page's origin


def test_console_and_screenshot(page: Page, site: Site, tmp_path: Path) -> None:
    page.navigate(site.base + "/noisy")
    assert page.wait_console(lambda entry: "kaput" in entry.text).source == "exception"
    page.wait_console(lambda entry: entry.source == "network" and "404" in entry.text)
    assert ("console", "error", "boom 42") in [(e.source, e.level, e.text) for e in page.errors()]
    page.set_viewport(390, 844)  # a phone's width
    assert page.evaluate("window.innerWidth") == 390
    shot = page.screenshot(tmp_path / "noisy.png")
    assert shot.read_bytes().startswith(PNG)
    assert page.artifact is not None and page.screenshot() == page.artifact and page.artifact.is_file()


def test_axe_finds_violations_on_a_broken_page(page: Page, site: Site) -> None:
    page.navigate(site.base + "/broken")
    found = {violation["id"]: violation for violation in scan(page)}
    assert {"image-alt", "label", "button-name", "html-has-lang"} <= found.keys(), report(list(found.values()))
    with pytest.raises(AssertionError, match=r"(?s)serious/critical violation.*image-alt \(critical\).*img"):
        assert_accessible(page)


def test_axe_passes_a_good_page(page: Page, site: Site) -> None:
    page.navigate(site.base + "/")
    assert_accessible(page)


def test_missing_chromium_fails_naming_the_package(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install chromium"):
        require_chromium(tmp_path / "chromium")
