"""board.webhooks: signed deliveries to a real local receiver, order per task under retries, backoff driven
by an injected clock (nothing waits on real time), the filter, the queue bound, the signature's refusals,
no secret or URL token in any log line, no redirect followed, the config's checks."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcp_agent_kit.board.webhooks import (
    Webhook,
    WebhookInvalid,
    WebhookSender,
    http_post,
    parse_webhooks,
    sign,
    verify_signature,
)
from mcp_agent_kit.wire.implementation import VERSION
from tests.net import free_port

SECRET = "whsec-do-not-log-7f3a9c"
TOKEN = "tok-in-query-5e1d"
EPOCH = 1_700_000_000
LOGGER = "mcp_agent_kit.board.webhooks"


class Clock:
    """The sender's injected monotonic clock: time moves only when the test says."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def event(task: str, n: int, kind: str = "task.review") -> dict[str, Any]:
    return {"id": f"{task}-{n}", "type": kind, "time": "2025-01-02T03:04:05Z",
            "task": {"id": task, "state": "review", "title": "é ✓"}}


class Receiver:
    """What a webhook endpoint saw: every request (path, headers, body) and the answer it gave."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, dict[str, str], bytes, int]] = []
        self.failures: dict[str, int] = {}  # delivery id -> how many attempts still get a 500
        self.redirect = False
        self.url = ""

    def answer(self, path: str, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            delivery = headers.get("X-Board-Delivery", "")
            status = 302 if self.redirect else 200
            if self.failures.get(delivery, 0) > 0:
                self.failures[delivery] -= 1
                status = 500
            self.seen.append((path, headers, body, status))
            return status

    def delivered(self) -> list[str]:
        with self.lock:
            return [headers["X-Board-Delivery"] for _, headers, _, status in self.seen if status == 200]

    def attempts(self, delivery: str) -> int:
        with self.lock:
            return sum(headers.get("X-Board-Delivery") == delivery for _, headers, _, _ in self.seen)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = rec.answer(self.path, dict(self.headers.items()), body)
            self.send_response(status)
            if status == 302:
                self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    rec.url = f"http://127.0.0.1:{server.server_address[1]}/hook?token={TOKEN}"
    yield rec
    server.shutdown()
    server.server_close()


@pytest.fixture
def senders() -> Iterator[Callable[..., WebhookSender]]:
    made: list[WebhookSender] = []

    def make(hooks: list[Webhook], **options: Any) -> WebhookSender:
        options.setdefault("random", lambda: 0.0)  # no jitter unless a test asks
        sender = WebhookSender(hooks, **options)
        made.append(sender)
        return sender

    yield make
    for sender in made:
        sender.close(timeout=5)


def hook(url: str = "https://hooks.example/board", events: frozenset[str] = frozenset()) -> Webhook:
    return Webhook(url, SECRET.encode(), events)


class Recorder:
    """An injected post: records (url, event id, fake time) and answers `status`, or raises `error`."""

    def __init__(self, clock: Clock, status: int = 200, error: Exception | None = None) -> None:
        self.clock, self.status, self.error = clock, status, error
        self.calls: list[tuple[str, str, float]] = []

    def __call__(self, url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> int:
        self.calls.append((url, headers["X-Board-Delivery"], self.clock.now))
        if self.error is not None:
            raise self.error
        return self.status


def test_a_delivery_is_a_signed_json_post(receiver: Receiver, senders: Callable[..., WebhookSender]) -> None:
    sender = senders([hook(receiver.url)])
    sent = event("t1", 1, "task.needs_input")
    assert sender.deliver(sent) == 1
    assert sender.wait_idle(20)
    [(path, headers, body, status)] = receiver.seen
    assert (path, status) == (f"/hook?token={TOKEN}", 200)
    assert json.loads(body) == sent
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"] == f"mcp-agent-kit/{VERSION}"
    assert (headers["X-Board-Event"], headers["X-Board-Delivery"]) == ("task.needs_input", "t1-1")
    signature = headers["X-Board-Signature"]
    stamp = int(signature.split(",")[0].removeprefix("t="))
    assert verify_signature(signature, body, SECRET.encode(), now=stamp)
    assert not verify_signature(signature, body.replace(b"t1", b"t2"), SECRET.encode(), now=stamp)
    assert not verify_signature(signature, body, b"another secret", now=stamp)
    assert sender.pending() == 0


def test_order_per_task_under_retries(receiver: Receiver, senders: Callable[..., WebhookSender]) -> None:
    clock = Clock()
    receiver.failures["a-1"] = 2
    sender = senders([hook(receiver.url)], clock=clock, wall=lambda: EPOCH + clock.now)
    for sent in (event("a", 1), event("a", 2), event("b", 1), event("b", 2)):
        sender.deliver(sent)
    assert sender.wait_idle(20)
    # a-1 failed and waits for its retry; a-2 waits behind it; task b is not held
    assert receiver.delivered() == ["b-1", "b-2"]
    assert (receiver.attempts("a-1"), receiver.attempts("a-2")) == (1, 0)
    clock.now = 1.0
    assert sender.wait_idle(20)
    assert (receiver.attempts("a-1"), receiver.attempts("a-2"), receiver.delivered()) == (2, 0, ["b-1", "b-2"])
    clock.now = 3.0
    assert sender.wait_idle(20)
    assert receiver.delivered() == ["b-1", "b-2", "a-1", "a-2"]
    for _, headers, body, _ in receiver.seen:  # every attempt signed afresh, over the same bytes
        assert verify_signature(headers["X-Board-Signature"], body, SECRET.encode(), now=EPOCH)
    assert sender.pending() == 0


@pytest.mark.parametrize(("draw", "scale"), [(0.0, 1.0), (1.0, 0.75)])
def test_backoff_doubles_up_to_the_cap_then_gives_up(draw: float, scale: float, caplog: pytest.LogCaptureFixture,
                                                     senders: Callable[..., WebhookSender]) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    clock = Clock()
    post = Recorder(clock, status=503)
    sender = senders([hook()], post=post, clock=clock, random=lambda: draw, attempts=9, max_age=10_000)
    sender.deliver(event("t", 1))
    assert sender.wait_idle(20)
    assert len(post.calls) == 1
    for delay in (1, 2, 4, 8, 16, 32, 60, 60):
        before = len(post.calls)
        clock.now += delay * scale - 0.25
        assert sender.wait_idle(20)
        assert len(post.calls) == before, f"retried before its {delay * scale} s"
        clock.now += 0.25
        assert sender.wait_idle(20)
        assert len(post.calls) == before + 1
        assert post.calls[-1][2] == clock.now
    assert sender.pending() == 0
    gave_up = [r for r in caplog.records if "gave up" in r.getMessage()]
    assert len(gave_up) == 1 and gave_up[0].levelno == logging.WARNING
    assert "after 9 attempts, last: HTTP 503" in gave_up[0].getMessage()


def test_an_event_older_than_max_age_is_dropped_on_its_next_failure(senders: Callable[..., WebhookSender]) -> None:
    clock = Clock()
    post = Recorder(clock, error=ConnectionRefusedError(111, "Connection refused"))
    sender = senders([hook()], post=post, clock=clock, attempts=100, max_age=5)
    sender.deliver(event("t", 1))
    for now in (0.0, 1.0, 3.0, 7.0):  # attempts at 0, 1, 3; the one at 7 fails past max_age
        clock.now = now
        assert sender.wait_idle(20)
    assert [at for _, _, at in post.calls] == [0.0, 1.0, 3.0, 7.0]
    assert sender.pending() == 0


def test_the_filter_picks_event_types_per_hook(senders: Callable[..., WebhookSender]) -> None:
    clock = Clock()
    post = Recorder(clock)
    questions = hook("https://questions.example/", frozenset({"task.needs_input"}))
    sender = senders([questions, hook("https://all.example/")], post=post, clock=clock)
    assert sender.deliver(event("t", 1, "task.needs_input")) == 2
    assert sender.deliver(event("t", 2, "task.review")) == 1
    assert sender.wait_idle(20)
    assert sorted((url, delivery) for url, delivery, _ in post.calls) == [
        ("https://all.example/", "t-1"), ("https://all.example/", "t-2"), ("https://questions.example/", "t-1")]


def test_a_full_queue_drops_the_oldest_waiting_event(caplog: pytest.LogCaptureFixture,
                                                     senders: Callable[..., WebhookSender]) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    started, release = threading.Event(), threading.Event()
    delivered: list[str] = []

    def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> int:
        if not delivered:
            started.set()
            assert release.wait(20)
        delivered.append(headers["X-Board-Delivery"])
        return 204

    sender = senders([hook()], post=post, max_queue=2)
    sender.deliver(event("a", 0))
    assert started.wait(20)  # a-0 is in flight, its worker held in the post
    for n in range(1, 5):
        sender.deliver(event("a", n))
    assert sender.pending() == 3  # a-0 in flight, a-3 and a-4 waiting
    release.set()
    assert sender.wait_idle(20)
    assert delivered == ["a-0", "a-3", "a-4"]
    dropped = [r.getMessage() for r in caplog.records if "dropped the oldest" in r.getMessage()]
    assert len(dropped) == 2 and "a-1" in dropped[0] and "a-2" in dropped[1]


def test_a_redirect_is_a_failure_and_is_not_followed(receiver: Receiver, caplog: pytest.LogCaptureFixture,
                                                     senders: Callable[..., WebhookSender]) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    receiver.redirect = True
    sender = senders([hook(receiver.url)], attempts=1)
    sender.deliver(event("t", 1))
    assert sender.wait_idle(20)
    assert [(path, status) for path, _, _, status in receiver.seen] == [(f"/hook?token={TOKEN}", 302)]
    assert any("HTTP 302" in r.getMessage() for r in caplog.records)


def test_no_secret_or_url_token_reaches_a_log_line(caplog: pytest.LogCaptureFixture,
                                                   senders: Callable[..., WebhookSender]) -> None:
    caplog.set_level(logging.DEBUG)
    clock = Clock()
    url = f"https://hooks.example/board?token={TOKEN}"
    post = Recorder(clock, error=RuntimeError(f"cannot reach {url} with {SECRET}"))
    sender = senders([hook(url)], post=post, clock=clock, attempts=2, max_queue=2)
    for n in range(4):  # failures, retries, a full queue
        sender.deliver(event("t", n))
    assert sender.wait_idle(20)
    clock.now = 1.0
    assert sender.wait_idle(20)
    sender.close(timeout=5)  # and what was left at close
    assert "gave up" in caplog.text and "dropped the oldest" in caplog.text
    assert "https://hooks.example/board" in caplog.text
    for secret in (SECRET, TOKEN):
        assert secret not in caplog.text
        assert secret not in repr(hook(url)) and secret not in repr(sender.__dict__)
    with pytest.raises(WebhookInvalid) as refused:
        Webhook.from_config({"url": f"ftp://hooks.example/?token={TOKEN}", "secretEnv": "HOOK_SECRET"},
                            environ={"HOOK_SECRET": SECRET})
    assert TOKEN not in str(refused.value) and SECRET not in str(refused.value)


def test_close_drops_what_waits_for_a_retry_and_takes_no_more(caplog: pytest.LogCaptureFixture,
                                                            senders: Callable[..., WebhookSender]) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    clock = Clock()
    post = Recorder(clock, status=500)
    sender = senders([hook()], post=post, clock=clock)
    sender.deliver(event("t", 1))
    sender.deliver(event("t", 2))
    assert sender.wait_idle(20)
    sender.close(timeout=5)
    assert [delivery for _, delivery, _ in post.calls] == ["t-1"]
    assert sender.pending() == 0
    assert any("2 events not delivered" in r.getMessage() for r in caplog.records)
    assert sender.deliver(event("t", 3)) == 0


def test_a_malformed_event_is_refused_without_raising(senders: Callable[..., WebhookSender]) -> None:
    sender = senders([hook()], post=Recorder(Clock()))
    assert sender.deliver({"id": "x", "type": "task.review"}) == 0
    assert sender.deliver({"id": "x", "type": "task.review", "task": {"id": "t", "bad": object()}}) == 0
    assert sender.pending() == 0


BODY = b'{"id":"e1","type":"task.done","time":"2025-01-02T03:04:05Z","task":{"id":"t1"}}'
GOOD = sign(BODY, SECRET.encode(), EPOCH)
MAC = GOOD.partition(",v1=")[2]


def test_verify_signature_takes_a_fresh_signature() -> None:
    assert verify_signature(GOOD, BODY, SECRET.encode(), now=EPOCH)
    assert verify_signature(GOOD, BODY, SECRET.encode(), now=EPOCH + 300)
    assert verify_signature(f" v1={MAC}, t={EPOCH}", BODY, SECRET.encode(), now=EPOCH)


@pytest.mark.parametrize(("header", "now"), [
    (GOOD, EPOCH + 301),  # too old
    (GOOD, EPOCH - 301),  # from the future
    (f"t={EPOCH},v1={MAC[:-1]}", EPOCH),  # truncated
    (f"t={EPOCH},v1=", EPOCH),  # empty
    (f"t={EPOCH},v1={MAC}0", EPOCH),  # extended
    (f"t={EPOCH},v1={MAC.upper()}", EPOCH),
    (f"t={EPOCH + 1},v1={MAC}", EPOCH),  # another time than the one signed
    (f"v1={MAC}", EPOCH), (f"t={EPOCH}", EPOCH), ("", EPOCH), ("garbage", EPOCH),
    (f"t={EPOCH},v1={MAC},v1={MAC}", EPOCH), (f"t={EPOCH},v1={MAC},v2={MAC}", EPOCH),
    (f"t=-{EPOCH},v1={MAC}", EPOCH), (f"t=１７,v1={MAC}", EPOCH), (f"t={EPOCH}.0,v1={MAC}", EPOCH),
])
def test_verify_signature_refuses(header: str, now: float) -> None:
    assert not verify_signature(header, BODY, SECRET.encode(), now=now)


def test_verify_signature_refuses_a_tampered_body_or_an_empty_secret() -> None:
    assert not verify_signature(GOOD, BODY.replace(b"done", b"failed"), SECRET.encode(), now=EPOCH)
    assert not verify_signature(GOOD, BODY + b" ", SECRET.encode(), now=EPOCH)
    assert not verify_signature(GOOD, BODY, b"", now=EPOCH)


def test_http_post_reports_a_refused_connection() -> None:
    with pytest.raises(OSError):
        http_post(f"http://127.0.0.1:{free_port()}/", b"{}", {}, 5)


def test_config_entries_are_checked_with_their_place() -> None:
    env = {"HOOK_SECRET": SECRET}
    [one] = parse_webhooks([{"url": "https://h.example/x", "secretEnv": "HOOK_SECRET", "events": ["task.done"]}],
                           environ=env)
    assert (one.url, one.secret, one.events) == ("https://h.example/x", SECRET.encode(), frozenset({"task.done"}))
    assert one.wants("task.done") and not one.wants("task.review")
    assert parse_webhooks(None) == ()
    refusals = {
        "board.webhooks[0].secretEnv: environment variable MISSING_SECRET is not set":
            {"url": "https://h.example/", "secretEnv": "MISSING_SECRET"},
        "environment variable EMPTY is empty": {"url": "https://h.example/", "secretEnv": "EMPTY"},
        "board.webhooks[0].url is required": {"secretEnv": "HOOK_SECRET"},
        "secretEnv is required": {"url": "https://h.example/"},
        "must be an http:// or https:// URL, not ftp": {"url": "ftp://h.example/", "secretEnv": "HOOK_SECRET"},
        "must be an http:// or https:// URL, not one without a scheme":
            {"url": "h.example/hook", "secretEnv": "HOOK_SECRET"},
        "has no host": {"url": "https:///hook", "secretEnv": "HOOK_SECRET"},
        "not a valid URL": {"url": "https://h.example:99999/", "secretEnv": "HOOK_SECRET"},
        "must not carry a user name or password":
            {"url": "https://me:pw@h.example/", "secretEnv": "HOOK_SECRET"},
        "unknown task.started": {"url": "https://h.example/", "secretEnv": "HOOK_SECRET", "events": ["task.started"]},
        "events must be a list": {"url": "https://h.example/", "secretEnv": "HOOK_SECRET", "events": "task.done"},
        "unknown key secret": {"url": "https://h.example/", "secretEnv": "HOOK_SECRET", "secret": "x"},
    }
    for message, entry in refusals.items():
        with pytest.raises(WebhookInvalid, match=message.replace(".", r"\.").replace("[", r"\[")):
            parse_webhooks([entry], environ={**env, "EMPTY": ""})
    with pytest.raises(WebhookInvalid, match="must be a list"):
        parse_webhooks({"url": "https://h.example/"}, environ=env)
    with pytest.raises(WebhookInvalid, match=r"board\.webhooks\[1\] must be an object"):
        parse_webhooks([{"url": "https://h.example/", "secretEnv": "HOOK_SECRET"}, "https://h.example/"],
                       environ=env)
    with pytest.raises(WebhookInvalid, match="secret is empty"):
        Webhook("https://h.example/", b"")
    assert isinstance(WebhookInvalid("x"), ValueError)
