"""Benchmark the board's live face on loopback: updates to subscribed pages, 1,000 idle subscribers, the page.

The server is the board as `mcp-agent-kit board` serves it, in this process: a real board.board.Board (a
temporary git repository, its sqlite store in a temporary data directory; not started, so no agent runs)
behind board.cli.make_board_http with the web board (board.web_app) and the live API (board.live_http: /ws)
mounted on one port (bench/live_served.py). An "agent update" is what board.runner.TaskRunner.say does
with an agent's message chunk: append `{"type": "message", "text": ...}` to the task's transcript
(board.tasks) and tell the board's "task" listeners (board.runner.tell); every live subscriber of the task
is sent its `task.message` notification from that call.

  a. update latency: from just before the append to the notification arriving at a subscriber of the task,
     one update at a time (each waited for), after a warm-up: in headless Chromium (when /usr/bin/chromium
     exists) on the board's own page at /#task=ID (arrival: the page's WebSocket message event; DOM: the
     page has rendered it, #transcript[data-seq]; bench/live_browser.py), and over a plain WebSocket (the
     kit's httpd.ws_client, and the `websockets` library's sync client) that sent task.subscribe. The
     floor: the same texts sent by our WebSocket hub (httpd.ws_server) with a trivial handler to the same
     kind of client (for Chromium a bare WebSocket in the hub's own page): what the transport alone costs.
  b. N idle subscribers (default 1,000: even ones task.subscribe'd to another task, odd ones
     board.subscribe'd) held by a child process (bench/live_holders.py), so this process's RSS and thread
     count are the server's: before and while held. GET / (a fresh connection each) and an
     orchestrator.status round trip (kit client) timed without and with them held, and an update's latency
     with them held. The open-files limit is raised (up to the hard limit) first.
  c. the page's bytes: GET / and what it loads (its stylesheet and module scripts, followed through their
     imports), and, in Chromium, first render on cold loads of / (fresh browser contexts): navigation start
     to first contentful paint, to the columns built, to the first task card (board.subscribe answered).
Goals (issue #27): an update on the page within 100 ms at p95; N subscribers in bounded memory (at most
MAX_RSS_PER_CONN_KIB per connection) and no thread each (threads added bounded by the pools); the page as
fast with them held (GET / and a status round trip p95 within FAST_MS); the page under 150 KB; first render
under 200 ms. One table: each cell, what was measured, its goal, PASS/FAIL (SKIP: no Chromium). Exit 0
when it ran (whatever the verdicts), 1 when it could not run, 2 on a usage mistake.

    python bench/board_live_bench.py [--quick] [--updates 300] [--subscribers 1000] [--samples 200] [--loads 10]
                                     [--no-browser]

Measured (three runs, 2 shared CPU cores, Python 3.11, headless Chromium 150; docs/board-api.md#performance),
every goal met: an update to the page rendered p50 0.4-0.7 ms, p95 5.8-6.8 ms (floor page p95 0.4-0.5 ms: the
tail is the page's own frames); to the kit's client p50 0.07 ms, p95 0.2-0.7 ms (floor 0.01 ms), to
`websockets` p95 0.15-0.3 ms; 1,000 held: 3.8-4.0 KiB of server RSS each, threads +0/+1, GET / p95 0.5-0.7
ms and a status round trip 0.3 ms either way, an update 0.55 ms p95; the page 42.3 KB; first contentful
paint p95 60-66 ms, the board's cards shown p95 80-89 ms.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.live_served import FloorHub, Served  # noqa: E402
from mcp_agent_kit.board.live_events import last_seq  # noqa: E402
from mcp_agent_kit.httpd import WsConnection  # noqa: E402
from mcp_agent_kit.httpd.ws_client import connect as ws_connect  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
HOLDERS = Path(__file__).resolve().parent / "live_holders.py"
UPDATE_MS = 100.0  # a: one update on a subscribed page, p95
FAST_MS = 50.0  # b: GET / and a status round trip with the subscribers held, p95
MAX_RSS_PER_CONN_KIB = 64.0  # b: the server's memory per held subscriber
PAGE_BYTES = 150_000  # c: HTML + JS + CSS
RENDER_MS = 200.0  # c: navigation start to first render, p95
TIMEOUT_S = 30.0
FULL = {"updates": 300, "subscribers": 1000, "loads": 10, "samples": 200}
QUICK = {"updates": 20, "subscribers": 100, "loads": 2, "samples": 20}
WARMUP = 5


class Client(Protocol):
    """What the bench uses of a blocking WebSocket client (the kit's WsClient, websockets' sync client)."""

    def send(self, message: str) -> None: ...

    def recv(self, timeout: float | None = None) -> str | bytes: ...

    def close(self) -> None: ...


@dataclass
class Row:
    cell: str
    what: str
    measured: str
    goal: str
    ok: bool | None  # None: not measured (SKIP)


# ---- numbers -----------------------------------------------------------------------------------------------
def quantiles(samples: list[float]) -> tuple[float, float, float]:
    """(p50, p95, p99) of the samples."""
    if len(samples) == 1:
        return samples[0], samples[0], samples[0]
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return statistics.median(samples), cuts[94], cuts[98]


def ms(samples: list[float]) -> tuple[float, float, float]:
    p50, p95, p99 = quantiles([s * 1000 for s in samples])
    return p50, p95, p99


def spread(samples: list[float], floor: list[float] | None = None) -> str:
    """'p50 .. p95 .. p99 .. ms' (seconds in), with the floor's p95 and the ratio of the p95s."""
    p50, p95, p99 = ms(samples)
    text = f"p50 {p50:.2f}  p95 {p95:.2f}  p99 {p99:.2f} ms"
    if floor:
        floor95 = ms(floor)[1]
        text += f"; floor p95 {floor95:.2f} ms, x{p95 / floor95:.1f}"
    return text


def proc_status(field: str) -> int:
    """A number from /proc/self/status (VmRSS in kB, Threads); -1 where there is none."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def raise_open_files(needed: int) -> int:
    """Raise the soft open-files limit towards `needed` (up to the hard limit); the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        soft = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return int(soft)


# ---- a. update latency ---------------------------------------------------------------------------------------
def request(client: Client, action: str, payload: dict[str, Any], ident: str) -> dict[str, Any]:
    """Send one request; its response (notifications that come first are skipped)."""
    client.send(json.dumps({"id": ident, "type": "request", "action": action, "payload": payload}))
    while True:
        message: dict[str, Any] = json.loads(client.recv(TIMEOUT_S))
        if message.get("id") == ident and message.get("type") in ("response", "error"):
            if message["type"] == "error":
                raise RuntimeError(f"{action}: {message['payload']}")
            return message


def timed_updates(client: Client, fire: Callable[[int], int], count: int, texts: list[str] | None = None
                  ) -> list[float]:
    """Seconds from `fire(n)` to its task.message notification at `client`, one at a time, after WARMUP."""
    samples = []
    for number in range(WARMUP + count):
        began = time.perf_counter()
        seq = fire(number)
        while True:
            text = client.recv(TIMEOUT_S)
            message = json.loads(text)
            if message.get("action") == "task.message" and message["payload"].get("seq") == seq:
                break
        if number >= WARMUP:
            samples.append(time.perf_counter() - began)
        if texts is not None:
            texts.append(str(text))
    return samples


def sender(conn: WsConnection, texts: list[str]) -> Callable[[int], int]:
    """The floor's fire: send the n-th recorded text as it is; its seq."""
    def fire(number: int) -> int:
        text = texts[number % len(texts)]
        conn.send(text)
        seq: int = json.loads(text)["payload"]["seq"]
        return seq
    return fire


def subscribed(served: Served, client: Client) -> Client:
    request(client, "task.subscribe", {"task_id": served.task["id"], "after": last_seq(served.board,
                                                                                       served.task["id"])}, "sub")
    return client


def websockets_client(url: str) -> Client:
    from websockets.sync.client import connect

    client: Client = connect(url, compression=None, max_size=None, open_timeout=TIMEOUT_S, legacy=True)
    return client


def plain_latency(served: Served, floor: FloorHub, count: int) -> list[Row]:
    """The kit's client and the websockets library's, each against the board and the floor hub."""
    rows = []
    makers: list[tuple[str, str, Callable[[str], Client]]] = [
        ("a.kit", "update -> kit ws_client (task.subscribe)", lambda url: ws_connect(url, timeout=TIMEOUT_S)),
        ("a.websockets", "update -> websockets client (task.subscribe)", websockets_client)]
    for cell, what, make in makers:
        texts: list[str] = []
        client = subscribed(served, make(served.ws_url))
        try:
            samples = timed_updates(client, served.update, count, texts)
        finally:
            client.close()
        previous = floor.conn
        client = make(floor.url)
        try:
            conn = floor.wait_open(previous)
            floor_samples = timed_updates(client, sender(conn, texts), count)
        finally:
            client.close()
        rows.append(Row(cell, what, spread(samples, floor_samples), f"p95 <= {UPDATE_MS:.0f} ms",
                        ms(samples)[1] <= UPDATE_MS))
    return rows


def browser_latency(browser: Any, served: Served, floor: FloorHub, count: int) -> list[Row]:
    from bench import live_browser

    arrived, shown = live_browser.update_latency(browser, served.base, served.task["id"], served.update, count,
                                                 WARMUP)
    client = subscribed(served, ws_connect(served.ws_url, timeout=TIMEOUT_S))
    texts: list[str] = []
    try:  # the texts the floor sends: real notifications, recorded by a plain subscriber
        timed_updates(client, served.update, count, texts)
    finally:
        client.close()
    previous = floor.conn
    floor_samples = live_browser.floor_latency(browser, floor.page, floor.url,
                                               lambda: sender(floor.wait_open(previous), texts), count, WARMUP)
    goal = f"p95 <= {UPDATE_MS:.0f} ms"
    return [Row("a.page.dom", "update -> Chromium page, rendered", spread(shown, floor_samples), goal,
                ms(shown)[1] <= UPDATE_MS),
            Row("a.page.msg", "update -> Chromium page, message event", spread(arrived, floor_samples), goal,
                ms(arrived)[1] <= UPDATE_MS)]


# ---- b. idle subscribers -------------------------------------------------------------------------------------
def get_page(port: int) -> float:
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"GET / answered {response.status}")
    finally:
        conn.close()
    return time.perf_counter() - began


def status_trips(client: Client, count: int) -> list[float]:
    samples = []
    for number in range(count):
        began = time.perf_counter()
        request(client, "orchestrator.status", {}, f"status-{number}")
        samples.append(time.perf_counter() - began)
    return samples


def page_speed(served: Served, samples: int) -> tuple[list[float], list[float]]:
    """(GET / seconds, orchestrator.status round-trip seconds), `samples` of each."""
    for _ in range(WARMUP):
        get_page(served.port)
    gets = [get_page(served.port) for _ in range(samples)]
    client = ws_connect(served.ws_url, timeout=TIMEOUT_S)
    try:
        status_trips(client, WARMUP)
        trips = status_trips(client, samples)
    finally:
        client.close()
    return gets, trips


@contextmanager
def holders(served: Served, count: int) -> Iterator[None]:
    """`count` idle subscribers held by bench/live_holders.py until the block ends."""
    child = subprocess.Popen([sys.executable, str(HOLDERS), served.ws_url, str(count), served.idle["id"]],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stderr is not None
        line = child.stdout.readline()
        if line.strip() != f"held {count}":
            child.wait(TIMEOUT_S)
            raise RuntimeError(f"the holders failed: {line.strip() or child.stderr.read().strip()}")
        yield
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def settle_websockets(served: Served, count: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while served.http.websocket_count != count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{served.http.websocket_count} WebSockets open, expected {count}")
        time.sleep(0.01)


def held_subscribers(served: Served, count: int, samples: int) -> list[Row]:
    gets, trips = page_speed(served, samples)
    settle_websockets(served, 0)
    gc.collect()
    rss_before, threads_before = proc_status("VmRSS"), proc_status("Threads")
    with holders(served, count):
        settle_websockets(served, count)
        gc.collect()
        rss_held, threads_held = proc_status("VmRSS"), proc_status("Threads")
        held_gets, held_trips = page_speed(served, samples)
        client = subscribed(served, ws_connect(served.ws_url, timeout=TIMEOUT_S))
        try:
            updates = timed_updates(client, served.update, samples)
        finally:
            client.close()
    per_conn = (rss_held - rss_before) / count
    added = threads_held - threads_before
    from mcp_agent_kit.httpd import ws_server
    from mcp_agent_kit.httpd.engine import Limits

    pools = Limits().workers + ws_server.WORKERS
    return [
        Row("b.rss", f"server RSS per held subscriber ({count})",
            f"{per_conn:.1f} KiB ({rss_before / 1024:.1f} -> {rss_held / 1024:.1f} MiB)",
            f"<= {MAX_RSS_PER_CONN_KIB:.0f} KiB", per_conn <= MAX_RSS_PER_CONN_KIB),
        Row("b.threads", f"server threads with {count} held", f"{threads_before} -> {threads_held} ({added:+d})",
            f"+ <= {pools} (the pools)", added <= pools),
        Row("b.get", f"GET / with {count} held", f"{spread(held_gets)}; without p95 {ms(gets)[1]:.2f} ms",
            f"p95 <= {FAST_MS:.0f} ms", ms(held_gets)[1] <= FAST_MS),
        Row("b.status", f"orchestrator.status with {count} held",
            f"{spread(held_trips)}; without p95 {ms(trips)[1]:.2f} ms", f"p95 <= {FAST_MS:.0f} ms",
            ms(held_trips)[1] <= FAST_MS),
        Row("b.update", f"update -> kit ws_client with {count} held", spread(updates),
            f"p95 <= {UPDATE_MS:.0f} ms", ms(updates)[1] <= UPDATE_MS)]


# ---- c. the page ---------------------------------------------------------------------------------------------
LINKS = re.compile(r"""(?:src|href)="(/static/[^"]+)"|(?:from|import)\s*['"](\./[^'"]+)['"]""")


def page_bytes(port: int) -> tuple[int, dict[str, int]]:
    """Total bytes of / and every file it loads (followed through module imports); bytes per path."""
    sizes: dict[str, int] = {}
    todo = ["/"]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    try:
        while todo:
            path = todo.pop()
            if path in sizes:
                continue
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"GET {path} answered {response.status}")
            sizes[path] = len(body)
            if path == "/" or path.endswith(".js"):
                for static, relative in LINKS.findall(body.decode()):
                    todo.append(static or "/static/" + relative.removeprefix("./"))
    finally:
        conn.close()
    return sum(sizes.values()), sizes


def page_rows(served: Served, browser: Any, loads: int, why: str) -> list[Row]:
    total, sizes = page_bytes(served.port)
    kinds = {kind: sum(size for path, size in sizes.items() if path.endswith(ext) or (kind == "html" and path == "/"))
             for kind, ext in (("html", ".html"), ("js", ".js"), ("css", ".css"))}
    rows = [Row("c.bytes", f"the page: {len(sizes)} files (HTML+JS+CSS)",
                f"{total / 1000:.1f} KB (" + ", ".join(f"{k} {v / 1000:.1f}" for k, v in kinds.items()) + ")",
                f"< {PAGE_BYTES / 1000:.0f} KB", total < PAGE_BYTES)]
    goal = f"p95 < {RENDER_MS:.0f} ms"
    names = (("c.fcp", "first contentful paint", "fcp"), ("c.columns", "the columns built", "columns"),
             ("c.cards", "the board's cards shown (board.subscribe)", "cards"))
    if browser is None:
        return rows + [Row(cell, f"navigation -> {what}", why, goal, None)
                       for cell, what, _ in names]
    from bench import live_browser

    marks = live_browser.first_render(browser, served.base, loads)
    for cell, what, key in names:
        p50, p95, _ = quantiles(marks[key])
        rows.append(Row(cell, f"navigation -> {what} ({loads} cold loads)",
                        f"p50 {p50:.1f}  p95 {p95:.1f}  max {max(marks[key]):.1f} ms", goal, p95 < RENDER_MS))
    return rows


# ---- the run -------------------------------------------------------------------------------------------------
def report(header: str, rows: list[Row]) -> None:
    print(header)
    widths = [max(len(r.cell) for r in rows), max(len(r.what) for r in rows), max(len(r.measured) for r in rows),
              max(len(r.goal) for r in rows)]
    print(f"{'cell':<{widths[0]}}  {'what':<{widths[1]}}  {'measured':<{widths[2]}}  {'goal':<{widths[3]}}  result")
    for r in rows:
        verdict = "SKIP" if r.ok is None else "PASS" if r.ok else "FAIL"
        print(f"{r.cell:<{widths[0]}}  {r.what:<{widths[1]}}  {r.measured:<{widths[2]}}  {r.goal:<{widths[3]}}  "
              f"{verdict}")


def launch_browser(wanted: bool) -> Any:
    if not wanted or not CHROMIUM.is_file():
        return None
    from tests.browser.cdp import Browser

    return Browser.launch(CHROMIUM)


def run(args: argparse.Namespace) -> int:
    raise_open_files(2 * args.subscribers + 512)
    with tempfile.TemporaryDirectory(prefix="board-live-bench-") as temp:
        served, floor, browser = Served(Path(temp)), FloorHub(), None
        try:
            browser = launch_browser(not args.no_browser)
            why = "not measured: --no-browser" if args.no_browser else "not measured: no Chromium"
            rows = plain_latency(served, floor, args.updates)
            if browser is not None:
                rows = browser_latency(browser, served, floor, args.updates) + rows
            else:
                rows = [Row(cell, what, why, f"p95 <= {UPDATE_MS:.0f} ms", None) for cell, what in (
                    ("a.page.dom", "update -> Chromium page, rendered"),
                    ("a.page.msg", "update -> Chromium page, message event"))] + rows
            rows += held_subscribers(served, args.subscribers, args.samples)
            rows += page_rows(served, browser, args.loads, why)
            from bench import live_browser

            product = live_browser.version(browser) if browser is not None else "no Chromium"
        finally:
            if browser is not None:
                browser.close()
            floor.close()
            served.close()
    report(f"board live bench: loopback, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {product}; "
           f"{args.updates} updates (+{WARMUP} warm-up), {args.subscribers} subscribers, {args.samples} samples, "
           f"{args.loads} page loads", rows)
    return 0


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--quick", action="store_true", help="a small run: " + ", ".join(f"{k} {v}" for k, v in
                                                                                      QUICK.items()))
    for name, default in FULL.items():
        cli.add_argument(f"--{name}", type=int, default=None, help=f"(default {default})")
    cli.add_argument("--no-browser", action="store_true", help="leave Chromium out (its cells say SKIP)")
    args = cli.parse_args()
    for name, default in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, default)
        if getattr(args, name) < 1:
            cli.error(f"--{name} must be at least 1")
    try:
        return run(args)
    except (RuntimeError, OSError) as exc:
        print(f"board live bench: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
