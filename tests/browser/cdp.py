"""A small driver for headless Chromium over the Chrome DevTools Protocol (CDP), for the web board's tests.

Why our own: the kit and its tests depend on no browser driver; CDP is JSON over one WebSocket, and the
pinned `websockets` library (its sync client) carries it. Debian's `chromium` package is the browser
(.ci/run installs it); `require_chromium()` FAILS a test when it is missing, naming `apt-get install chromium`.

How it works:
- `Browser.launch()` starts `/usr/bin/chromium --headless --remote-debugging-port=0` with a fresh profile in a
  temp dir, waits (bounded) for `<profile>/DevToolsActivePort` (the port and the browser's WebSocket path), and
  opens ONE WebSocket to the browser. A reader thread answers each command's id and hands each event to the
  page whose flat session (`Target.attachToTarget(flatten=True)`) it names. `Browser.close()` ends it all.
- `Browser.new_page()` makes a new browser context (`Target.createBrowserContext`: own cookies, storage and
  cache, so tests never see each other's session) with one `about:blank` tab; `Page.close()` disposes of both.
- `Page` methods, each one CDP round trip or a few:
  `navigate(url)` (returns once the new document's `load` fired, matched by loader id; a same-document
  navigation returns at once), `evaluate(js)` (`Runtime.evaluate`, promises awaited, the value returned as JSON;
  a thrown error raises `JsError`), `wait_for(js)` (the expression polled INSIDE the page on every DOM
  mutation, animation frame and 100 ms tick until truthy; its value returned; `CdpError` naming it on time-out),
  `click(selector)` (a real mouse press at the element's centre, after scrolling it into view: whatever covers
  it gets the click, as for a person), `type_text(selector, text)` (focus, select what is there, insert),
  `press(key)` (`KEYS` names: Enter, Tab, Escape, arrows...; or one character; modifiers "Shift" etc.),
  `set_cookie` / `cookies` (HttpOnly ones included), `set_viewport(width, height)` (a phone's width),
  `screenshot(path)` (PNG; by default the page's artifact path). `type_text` inserts text as an IME would
  (input events, no key events); `press` sends real key events. alert/confirm/prompt dialogs are answered at
  once (`accept_dialogs`, OK by default) and logged in `console` with source "dialog".
- `Page.console` collects, in order, `console.*` calls, uncaught exceptions (`Runtime.exceptionThrown`) and the
  browser's own log (`Log.entryAdded`: failed loads, CSP violations); `errors()` keeps the level "error" ones,
  `wait_console(predicate)` waits (on a condition, no sleeping) for one to arrive.
All waits are bounded; every failure raises `CdpError` (or `JsError`) with one readable line.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.net import until

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions", "--disable-dev-shm-usage", "--mute-audio", "--hide-scrollbars",
         "--remote-debugging-port=0")
# key name -> (DOM `code`, Windows virtual key code, text it types)
KEYS: dict[str, tuple[str, int, str]] = {
    "Enter": ("Enter", 13, "\r"), "Tab": ("Tab", 9, ""), "Escape": ("Escape", 27, ""),
    "Backspace": ("Backspace", 8, ""), "Delete": ("Delete", 46, ""), " ": ("Space", 32, " "),
    "ArrowUp": ("ArrowUp", 38, ""), "ArrowDown": ("ArrowDown", 40, ""), "ArrowLeft": ("ArrowLeft", 37, ""),
    "ArrowRight": ("ArrowRight", 39, ""), "Home": ("Home", 36, ""), "End": ("End", 35, ""),
    "PageUp": ("PageUp", 33, ""), "PageDown": ("PageDown", 34, ""),
}
MODIFIERS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}
CONSOLE_LEVELS = {"error": "error", "assert": "error", "warning": "warning"}  # other console.* kinds: "info"

WAIT_JS = """new Promise((resolve, reject) => {
  let done = false, last = null, observer = null, frame = 0, ticker = 0, timer = 0;
  const probe = () => { try { return (%s); } catch (e) { last = String(e); return undefined; } };
  const finish = (settle, value) => {
    if (done) return; done = true;
    if (observer) observer.disconnect();
    cancelAnimationFrame(frame); clearInterval(ticker); clearTimeout(timer); settle(value);
  };
  const tick = () => { if (done) return; const value = probe(); if (value) finish(resolve, value); };
  const onFrame = () => { tick(); if (!done) frame = requestAnimationFrame(onFrame); };
  tick();
  if (done) return;
  observer = new MutationObserver(tick);
  observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  frame = requestAnimationFrame(onFrame);
  ticker = setInterval(tick, 100);  // state outside the DOM (a variable a WebSocket message set) mutates nothing
  timer = setTimeout(() => finish(reject, new Error(
    "wait_for timed out after %d ms: " + %s + (last ? " (last error: " + last + ")" : ""))), %d);
})"""


class CdpError(RuntimeError):
    """A CDP command failed, timed out, or the browser went away."""


class JsError(CdpError):
    """JavaScript evaluated in the page threw."""


@dataclass(frozen=True)
class ConsoleEntry:
    source: str  # "console", "exception", or the browser log's source ("network", "security", ...)
    level: str  # "error", "warning", "info", ...
    text: str


def require_chromium(path: Path = CHROMIUM) -> Path:
    """`path` when it is a program; pytest.fail (never a skip) naming the Debian package otherwise."""
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is missing: the browser tests need Debian's chromium (apt-get install chromium)",
                    pytrace=False)
    return path


def _remote_text(value: dict[str, Any]) -> str:
    """A console argument (a CDP RemoteObject) as the console would print it."""
    if "value" in value:
        item = value["value"]
        return item if isinstance(item, str) else json.dumps(item)
    return str(value.get("unserializableValue") or value.get("description") or value.get("type", ""))


class Connection:
    """One CDP WebSocket: commands answered by id, events routed to their session's listener."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect  # pinned test dependency, imported when a browser starts

        self._ws = connect(url, max_size=None, compression=None, open_timeout=20, ping_interval=None, legacy=True)
        self._lock = threading.Lock()
        self._next = 0
        self._pending: dict[int, Future[dict[str, Any]]] = {}
        self._listeners: dict[str, Callable[[str, dict[str, Any]], None]] = {}
        self._gone: str | None = None
        self._reader = threading.Thread(target=self._read, name="cdp-reader", daemon=True)
        self._reader.start()

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 30.0) -> dict[str, Any]:
        """Send one command and return its result; CdpError on an error reply, a time-out or a lost browser."""
        future: Future[dict[str, Any]] = Future()
        ident = self.post(method, params, session, future)
        try:
            reply = future.result(timeout)
        except TimeoutError:
            raise CdpError(f"{method}: no answer from the browser in {timeout} s") from None
        finally:
            with self._lock:
                self._pending.pop(ident, None)
        if "error" in reply:
            error = reply["error"]
            raise CdpError(f"{method}: {error.get('message')} {error.get('data', '')}".rstrip())
        result: dict[str, Any] = reply.get("result", {})
        return result

    def post(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             future: Future[dict[str, Any]] | None = None) -> int:
        """Send one command without waiting; its reply goes to `future` (none: ignored). Its id."""
        with self._lock:
            if self._gone is not None:
                raise CdpError(f"{method}: the browser connection is gone ({self._gone})")
            self._next += 1
            ident = self._next
            if future is not None:
                self._pending[ident] = future
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        try:
            self._ws.send(json.dumps(message))  # thread-safe; outside our lock, so the reader never waits on it
        except Exception as exc:
            with self._lock:
                self._pending.pop(ident, None)
            raise CdpError(f"{method}: could not send ({exc})") from exc
        return ident

    def listen(self, session: str, listener: Callable[[str, dict[str, Any]], None] | None) -> None:
        """Route `session`'s events to `listener` (None: forget the session)."""
        with self._lock:
            if listener is None:
                self._listeners.pop(session, None)
            else:
                self._listeners[session] = listener

    def close(self) -> None:
        self._ws.close()
        self._reader.join(timeout=10)

    def _read(self) -> None:
        reason = "closed"
        try:
            for raw in self._ws:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        future = self._pending.get(message["id"])
                    if future is not None:
                        future.set_result(message)
                    continue
                with self._lock:
                    listener = self._listeners.get(message.get("sessionId", ""))
                if listener is not None:
                    listener(message.get("method", ""), message.get("params", {}))
        except Exception as exc:  # the socket broke, or a listener failed: either way nobody will answer now
            reason = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._gone = reason
                waiting = list(self._pending.values())
            for future in waiting:
                if not future.done():
                    future.set_exception(CdpError(f"the browser connection is gone ({reason})"))


class Browser:
    """A headless Chromium process and its CDP connection; `new_page()` for each test."""

    def __init__(self, process: subprocess.Popen[bytes], profile: Path, connection: Connection) -> None:
        self.process = process
        self.profile = profile
        self.connection = connection

    @classmethod
    def launch(cls, executable: Path = CHROMIUM, timeout: float = 30.0) -> Browser:
        """Start Chromium with a temp profile; ready once `DevToolsActivePort` names its port (bounded)."""
        profile = Path(tempfile.mkdtemp(prefix="mak-chromium-"))
        log = open(profile / "chromium.log", "wb")  # noqa: SIM115 -- the process writes it until it ends
        process = subprocess.Popen([str(executable), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        log.close()
        active = profile / "DevToolsActivePort"

        def ready() -> list[str] | None:
            if process.poll() is not None:
                tail = (profile / "chromium.log").read_text(errors="replace")[-1500:]
                raise CdpError(f"{executable} exited with {process.returncode} before it listened: {tail}")
            lines = active.read_text().split("\n") if active.is_file() else []
            return lines if len(lines) >= 2 and lines[0].isdigit() and lines[1] else None

        try:
            port, path = until(ready, f"{active} (Chromium's DevTools port)", seconds=timeout)[:2]
            connection = Connection(f"ws://127.0.0.1:{port}{path}")
        except BaseException:
            _stop(process, grace=0)
            shutil.rmtree(profile, ignore_errors=True)
            raise
        return cls(process, profile, connection)

    def new_page(self, artifact: Path | None = None, width: int = 1280, height: int = 800) -> Page:
        """A tab in a new browser context (its own cookies and storage), attached and ready for commands."""
        context = self.connection.call("Target.createBrowserContext", {"disposeOnDetach": True})["browserContextId"]
        target = self.connection.call("Target.createTarget", {"url": "about:blank", "browserContextId": context,
                                                              "width": width, "height": height})["targetId"]
        session = self.connection.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self.connection, session, target, context, artifact)
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            page.call(domain)
        page.call("Page.setLifecycleEventsEnabled", enabled=True)
        page.set_viewport(width, height)
        return page

    def close(self) -> None:
        with contextlib.suppress(CdpError):  # already gone: _stop below makes sure
            self.connection.call("Browser.close", timeout=10)
        self.connection.close()
        _stop(self.process, grace=5)
        shutil.rmtree(self.profile, ignore_errors=True)


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """End Chromium: `grace` seconds to exit by itself (after Browser.close), then SIGTERM, then SIGKILL to its
    process group (its renderers and helpers with it)."""
    for signal_number, wait in ((0, grace), (15, 5.0), (9, 5.0)):
        if signal_number:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal_number)
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class Page:
    """One tab in its own browser context; see the module docstring for the methods."""

    def __init__(self, connection: Connection, session: str, target: str, context: str,
                 artifact: Path | None) -> None:
        self.connection = connection
        self.session = session
        self.target = target
        self.context = context
        self.artifact = artifact
        self.console: list[ConsoleEntry] = []
        self.accept_dialogs = True  # alert/confirm/prompt are answered at once (OK when True), and logged
        self._events: list[tuple[str, dict[str, Any]]] = []  # lifecycle events since the last navigate()
        self._changed = threading.Condition()
        connection.listen(session, self._on_event)

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        """A CDP command on this page's session."""
        return self.connection.call(method, params, session=self.session, timeout=timeout)

    def close(self) -> None:
        self.connection.listen(self.session, None)
        self.connection.call("Target.disposeBrowserContext", {"browserContextId": self.context})

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- navigation and script ---------------------------------------------------------------------------------
    def navigate(self, url: str, timeout: float = 30.0) -> None:
        """Load `url`; return once that document's `load` event fired."""
        with self._changed:
            self._events.clear()
        result = self.call("Page.navigate", url=url, timeout=timeout)
        if result.get("errorText"):
            raise CdpError(f"navigate {url}: {result['errorText']}")
        loader = result.get("loaderId")
        if loader is None:
            return  # a same-document navigation (a #fragment): no new document, no load event

        def loaded() -> bool:
            return any(method == "Page.lifecycleEvent" and params.get("name") == "load"
                       and params.get("loaderId") == loader for method, params in self._events)

        with self._changed:
            if not self._changed.wait_for(loaded, timeout):
                raise CdpError(f"navigate {url}: no load event in {timeout} s")

    def evaluate(self, expression: str, await_promise: bool = True, by_value: bool = True,
                 timeout: float = 30.0) -> Any:
        """The expression's value (JSON-able; a promise awaited); JsError when it throws."""
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=await_promise,
                           returnByValue=by_value, userGesture=True, timeout=timeout)
        details = result.get("exceptionDetails")
        if details is not None:
            thrown = details.get("exception") or {}
            raise JsError(str(thrown.get("description") or details.get("text") or details).split("\n")[0])
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 15.0) -> Any:
        """Wait inside the page until `expression` is truthy and return its value (errors count as falsy)."""
        millis = int(timeout * 1000)
        script = WAIT_JS % (expression, millis, json.dumps(expression), millis)
        try:
            return self.evaluate(script, timeout=timeout + 10)
        except JsError as exc:
            raise CdpError(str(exc).removeprefix("Error: ")) from None

    def text(self, selector: str) -> str | None:
        """The element's innerText, or None when nothing matches."""
        value = self.evaluate(f"document.querySelector({json.dumps(selector)})?.innerText ?? null")
        return None if value is None else str(value)

    # -- input ----------------------------------------------------------------------------------------------------
    def click(self, selector: str) -> None:
        """A left-button click at the centre of the first element matching `selector`."""
        box = self.evaluate(f"""(() => {{
          const el = document.querySelector({json.dumps(selector)});
          if (!el) return null;
          el.scrollIntoView({{block: "center", inline: "center"}});
          const r = el.getBoundingClientRect();
          return {{x: r.left + r.width / 2, y: r.top + r.height / 2, visible: r.width > 0 && r.height > 0}};
        }})()""")
        if box is None:
            raise CdpError(f"click: nothing matches {selector!r}")
        if not box["visible"]:
            raise CdpError(f"click: {selector!r} has no box on screen (hidden?)")
        for kind, button in (("mouseMoved", "none"), ("mousePressed", "left"), ("mouseReleased", "left")):
            self.call("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button=button, clickCount=1)

    def focus(self, selector: str) -> None:
        found = self.evaluate(f"""(() => {{
          const el = document.querySelector({json.dumps(selector)});
          if (!el) return "missing";
          el.focus();
          return document.activeElement === el ? "ok" : "unfocusable";
        }})()""")
        if found != "ok":
            raise CdpError(f"focus: {selector!r} is {'not there' if found == 'missing' else 'not focusable'}")

    def type_text(self, selector: str, text: str, replace: bool = True) -> None:
        """Focus the field and type `text` (one input event), replacing what it held unless `replace` is False."""
        self.focus(selector)
        if replace:
            self.evaluate("document.activeElement.select?.()")
        self.call("Input.insertText", text=text)

    def press(self, key: str, *modifiers: str) -> None:
        """Press and release one key: a KEYS name or a single character, with modifiers ("Shift", "Control")."""
        if key in KEYS:
            code, virtual, text = KEYS[key]
        elif len(key) == 1:
            code, virtual, text = (f"Key{key.upper()}" if key.isalpha() else ""), ord(key.upper()), key
        else:
            raise CdpError(f"press: unknown key {key!r} (one character, or one of {', '.join(KEYS)})")
        unknown = [name for name in modifiers if name not in MODIFIERS]
        if unknown:
            raise CdpError(f"press: unknown modifier {unknown[0]!r} (one of {', '.join(MODIFIERS)})")
        mask = sum(MODIFIERS[name] for name in modifiers)
        common: dict[str, Any] = {"key": key, "code": code, "windowsVirtualKeyCode": virtual, "modifiers": mask}
        typed = text if mask in (0, MODIFIERS["Shift"]) else ""
        self.call("Input.dispatchKeyEvent", type="keyDown" if typed else "rawKeyDown", text=typed, **common)
        self.call("Input.dispatchKeyEvent", type="keyUp", **common)

    # -- cookies, viewport, screenshots ---------------------------------------------------------------------
    def set_cookie(self, name: str, value: str, url: str, **extra: Any) -> None:
        """Set a cookie for `url` in this page's context (extra: httpOnly, sameSite, path, expires...)."""
        if not self.call("Network.setCookie", name=name, value=value, url=url, **extra).get("success", True):
            raise CdpError(f"set_cookie: the browser refused {name} for {url}")

    def cookies(self, url: str | None = None) -> dict[str, dict[str, Any]]:
        """name -> cookie (value, httpOnly, sameSite, ...) for `url`, or for the current page."""
        params: dict[str, Any] = {"urls": [url]} if url else {}
        return {cookie["name"]: cookie for cookie in self.call("Network.getCookies", **params)["cookies"]}

    def set_viewport(self, width: int, height: int, mobile: bool = False) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=mobile)

    def screenshot(self, path: Path | None = None) -> Path:
        """The viewport as a PNG at `path` (default: this page's artifact path); the path written."""
        target = path or self.artifact
        if target is None:
            raise CdpError("screenshot: no path given and the page has no artifact path")
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.part")
        partial.write_bytes(data)
        partial.replace(target)
        return target

    # -- console ----------------------------------------------------------------------------------------------
    def errors(self) -> list[ConsoleEntry]:
        with self._changed:
            return [entry for entry in self.console if entry.level == "error"]

    def wait_console(self, predicate: Callable[[ConsoleEntry], bool], timeout: float = 15.0) -> ConsoleEntry:
        """The first console entry (past or coming) for which `predicate` holds; CdpError after `timeout`."""
        def found() -> ConsoleEntry | None:
            return next((entry for entry in self.console if predicate(entry)), None)

        with self._changed:
            if not self._changed.wait_for(found, timeout):
                seen = "; ".join(f"{e.level}: {e.text}" for e in self.console) or "nothing"
                raise CdpError(f"wait_console: no matching entry in {timeout} s (seen: {seen})")
            entry = found()
        assert entry is not None
        return entry

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        """On the reader thread: keep console output and lifecycle events, wake whoever waits."""
        entry = None
        if method == "Runtime.consoleAPICalled":
            text = " ".join(_remote_text(arg) for arg in params.get("args", []))
            entry = ConsoleEntry("console", CONSOLE_LEVELS.get(params.get("type", ""), "info"), text)
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            thrown = details.get("exception") or {}
            entry = ConsoleEntry("exception", "error", str(thrown.get("description") or details.get("text")))
        elif method == "Log.entryAdded":
            log = params.get("entry", {})
            entry = ConsoleEntry(log.get("source", "other"), log.get("level", "info"), log.get("text", ""))
        elif method == "Page.javascriptDialogOpening":  # a dialog blocks the page's script until answered
            entry = ConsoleEntry("dialog", "info", f"{params.get('type')}: {params.get('message')}")
            with contextlib.suppress(CdpError):  # posted: this thread delivers replies, it cannot wait for one
                self.connection.post("Page.handleJavaScriptDialog", {"accept": self.accept_dialogs}, self.session)
        elif not method.startswith("Page."):
            return
        with self._changed:
            if entry is not None:
                self.console.append(entry)
            else:
                self._events.append((method, params))
            self._changed.notify_all()
