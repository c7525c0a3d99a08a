"""The Chromium half of bench/board_live_bench.py: the board's page in headless Chromium, timed from inside it.

Driven over the DevTools protocol by tests/browser/cdp.py (the tests' own driver; the bench imports it as
bench/store_bench.py imports tests.store). HOOK_JS goes into every page before its scripts run
(Page.addScriptToEvaluateOnNewDocument; DevTools-injected, so the page's CSP does not apply): it wraps
`WebSocket` so that every incoming message is stamped (`performance.timeOrigin + performance.now()`, the
wall clock in ms, sub-ms resolution) before the page's own listener sees it, and a MutationObserver stamps
the moment `#transcript[data-seq]` (what the page has rendered of the task's transcript), the board's columns
and its first task card appear. `__bench.until(seq)` is a promise that resolves once event `seq` is
rendered (or, on a floor page, has arrived): the bench waits on it through one Runtime.evaluate.

  update_latency  the page at /#task=ID subscribed (the page's own task.subscribe answered); per update: the
                  wall time before the append, then the page's arrival and render stamps of that seq
  floor_latency   the trivial hub's own page with a bare WebSocket to it, sent the same texts
  first_render    fresh browser contexts (cold cache) loading /: navigation start -> first contentful paint
                  (the Paint Timing entry), -> the columns built, -> the first task card (board.subscribe
                  answered and rendered), all relative to performance.timeOrigin
Rules: every wait bounded (cdp.py's timeouts); a page is closed (its context disposed) after use.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from tests.browser.cdp import Browser, Page

HOOK_JS = r"""(() => {
  if (window.__bench) return;
  const bench = window.__bench = {arrived: {}, shown: {}, subscribed: false, floor: false, waiters: [],
                                  columns: null, cards: null};
  const wall = () => performance.timeOrigin + performance.now();
  const wake = () => {
    bench.waiters = bench.waiters.filter(([seq, resolve]) => {
      const done = (bench.floor ? bench.arrived : bench.shown)[seq] !== undefined;
      if (done) resolve(true);
      return !done;
    });
  };
  bench.until = (seq) => new Promise((resolve) => { bench.waiters.push([seq, resolve]); wake(); });
  bench.record = (data) => {
    const at = wall();
    let message;
    try { message = JSON.parse(data); } catch { return; }
    if (message.type === 'response' && message.action === 'task.subscribe') bench.subscribed = true;
    const payload = message.payload || {};
    if (message.type === 'notification' && message.action === 'task.message' && typeof payload.seq === 'number') {
      if (bench.arrived[payload.seq] === undefined) bench.arrived[payload.seq] = at;
      if (bench.floor) wake();
    }
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => bench.record(event.data));
    }
  };
  const seen = () => {
    if (bench.columns === null && document.querySelector('#columns section')) bench.columns = performance.now();
    if (bench.cards === null && document.querySelector('#columns article')) bench.cards = performance.now();
    const transcript = document.getElementById('transcript');
    const seq = transcript ? Number(transcript.dataset.seq) : 0;
    if (seq && bench.shown[seq] === undefined) {
      bench.shown[seq] = wall();
      wake();
    }
  };
  new MutationObserver(seen).observe(document, {subtree: true, childList: true, attributes: true,
                                                attributeFilter: ['data-seq']});
})();"""

FIRST_RENDER_JS = """(() => {
  const bench = window.__bench;
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  if (!bench || bench.cards === null || bench.columns === null || !paint) return null;
  return {fcp: paint.startTime, columns: bench.columns, cards: bench.cards};
})()"""

Fire = Callable[[int], int]  # update number -> the seq it made (after it was sent)


def hooked_page(browser: Browser) -> Page:
    page = browser.new_page()
    page.call("Page.addScriptToEvaluateOnNewDocument", source=HOOK_JS)
    return page


def _timed(page: Page, fire: Fire, count: int, warmup: int) -> list[tuple[int, float]]:
    """(seq, wall time before it was fired) of each counted update, each waited for in the page."""
    started: list[tuple[int, float]] = []
    for number in range(warmup + count):
        began = time.time()
        seq = fire(number)
        page.evaluate(f"window.__bench.until({seq})", timeout=30)
        if number >= warmup:
            started.append((seq, began))
    return started


def update_latency(browser: Browser, base: str, task_id: str, fire: Fire, count: int, warmup: int
                   ) -> tuple[list[float], list[float]]:
    """(seconds to arrive, seconds to render) of `count` updates to the board's page watching `task_id`."""
    page = hooked_page(browser)
    try:
        page.navigate(f"{base}/#task={task_id}")
        page.wait_for("window.__bench.subscribed", timeout=30)
        started = _timed(page, fire, count, warmup)
        stamps: dict[str, dict[str, float]] = page.evaluate("({arrived: __bench.arrived, shown: __bench.shown})")
    finally:
        page.close()
    arrived = [stamps["arrived"][str(seq)] / 1000 - began for seq, began in started]
    shown = [stamps["shown"][str(seq)] / 1000 - began for seq, began in started]
    return arrived, shown


def floor_latency(browser: Browser, page_url: str, ws_url: str, opened: Callable[[], Fire], count: int,
                  warmup: int) -> list[float]:
    """Seconds to arrive of `count` messages the trivial hub sends to a bare WebSocket in its page;
    `opened()` waits for the hub's side of it and gives the fire that sends there."""
    page = hooked_page(browser)
    try:
        page.navigate(page_url)
        page.evaluate(f"window.__bench.floor = true; window.__floor = new WebSocket({json.dumps(ws_url)}); 1")
        started = _timed(page, opened(), count, warmup)
        arrived: dict[str, float] = page.evaluate("__bench.arrived")
    finally:
        page.close()
    return [arrived[str(seq)] / 1000 - began for seq, began in started]


def first_render(browser: Browser, base: str, loads: int) -> dict[str, list[float]]:
    """Milliseconds from navigation start to each milestone (fcp, columns, cards), one per cold load of /."""
    found: dict[str, list[float]] = {"fcp": [], "columns": [], "cards": []}
    for _ in range(loads):
        page = hooked_page(browser)
        try:
            page.navigate(f"{base}/")
            marks = page.wait_for(FIRST_RENDER_JS, timeout=30)
        finally:
            page.close()
        for name in found:
            found[name].append(float(marks[name]))
    return found


def version(browser: Browser) -> str:
    product = browser.connection.call("Browser.getVersion").get("product", "Chromium")
    return str(product)
