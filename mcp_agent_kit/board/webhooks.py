"""board.webhooks: the board's semantic events, delivered as signed JSON POSTs to the configured webhooks.

Job: `parse_webhooks` / `Webhook.from_config` turn the `board.webhooks` entries (`{"url", "secretEnv",
"events"}`) into checked hooks: an http or https URL with no user name or password in it, the signing secret
read from the environment variable `secretEnv` names (checked when the config is read, not at the first
event), the event filter (empty: every event). `WebhookSender(hooks).deliver(event)` queues one semantic
event `{"id", "type", "time", "task"}` for every hook whose filter takes it and returns at once;
`verify_signature` checks a delivery's `X-Board-Signature` (for receivers and tests).

Rules:
- `deliver` never blocks and never raises: it is the board's event listener. One worker thread per hook
  posts, one POST at a time, so a slow or dead endpoint holds back only its own hook.
- Order per task: a task's events reach a hook in the order they were given. While one waits for a retry,
  the later events of the SAME task wait behind it; other tasks' events go on.
- The body is the event as given, as JSON, built once per event: those exact bytes are signed and sent.
  Headers: Content-Type application/json, User-Agent mcp-agent-kit/<version>, X-Board-Event (the type),
  X-Board-Delivery (the event id) and `X-Board-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
  "<t>.<body>" with the secret>`, t taken afresh for every attempt (a receiver refuses old timestamps).
- A 2xx is delivered. Anything else is a failure: another status (a 3xx too: redirects are never followed),
  a connection error, no answer within `timeout` seconds. A failed event is retried after
  min(max_delay, base_delay * 2**(n-1)) seconds less up to a quarter of that at random (jitter), n the
  attempts so far; after `attempts` attempts, or on a failure once it has been queued longer than
  `max_age`, it is dropped with one warning.
- Bounded: at most `max_queue` events wait per hook. One more drops the OLDEST waiting event, with a
  warning: a notification is worth its news, and the newest events say where the tasks are now.
- No secret, and nothing of a URL beyond scheme://host:port/path (no query, where tokens live), ever
  reaches a log line, an error message or a repr.
- Not durable: the queue lives in memory. `close(timeout)` makes one attempt at every event due now and
  drops (one warning) what still waits for a retry.
- Standard library only; http.client, which follows no redirect. A2A push notifications are not here.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import random as _random
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .errors import BoardError
from .states import SEMANTIC_EVENTS

if TYPE_CHECKING:
    import logging

EVENT_TYPES = frozenset(SEMANTIC_EVENTS.values())
ENTRY_KEYS = ("url", "secretEnv", "events")
JITTER = 0.25  # a retry's delay is shortened by up to this share, at random, so hooks do not retry in step

# post(url, body, headers, timeout) -> the HTTP status; raises on a connection error or a timeout
Post = Callable[[str, bytes, Mapping[str, str], float], int]


class WebhookInvalid(BoardError, ValueError):
    """A `board.webhooks` entry is malformed or its secret is missing; the message names the key and the fix."""


def _log() -> logging.Logger:
    from ..logs import logger

    return logger("mcp_agent_kit.board.webhooks")


@dataclass(frozen=True, repr=False)
class Webhook:
    """One endpoint: where to POST, the secret to sign with, which event types it wants (empty: all)."""

    url: str
    secret: bytes = field(compare=False)
    events: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        problem = _url_problem(self.url)
        if problem:
            raise WebhookInvalid(f"webhook url: {problem}")
        if not isinstance(self.secret, bytes) or not self.secret:
            raise WebhookInvalid("webhook secret is empty: give it a long random value")
        unknown = sorted(str(kind) for kind in self.events if kind not in EVENT_TYPES)
        if unknown:
            raise WebhookInvalid(f"webhook events: unknown {', '.join(unknown)} "
                                 f"(known: {', '.join(sorted(EVENT_TYPES))}; none for every event)")

    @property
    def shown(self) -> str:
        """The URL as logs show it: scheme://host[:port]/path, never its query or fragment."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}{parts.path}"

    def __repr__(self) -> str:
        return f"Webhook({self.shown!r}, events={sorted(self.events)!r})"

    def wants(self, event_type: str) -> bool:
        return not self.events or event_type in self.events

    @classmethod
    def from_config(cls, entry: object, *, where: str = "webhook",
                    environ: Mapping[str, str] | None = None) -> Webhook:
        """One `board.webhooks` entry; `where` names it in errors (`board.webhooks[0]`)."""
        if not isinstance(entry, dict):
            raise WebhookInvalid(f"{where} must be an object with {', '.join(ENTRY_KEYS)}")
        extra = sorted(set(entry) - set(ENTRY_KEYS))
        if extra:
            raise WebhookInvalid(f"{where}: unknown key {', '.join(map(str, extra))} (known: {', '.join(ENTRY_KEYS)})")
        url, name, events = entry.get("url"), entry.get("secretEnv"), entry.get("events", [])
        if not isinstance(url, str) or not url:
            raise WebhookInvalid(f"{where}.url is required: the http(s) URL to POST the events to")
        if not isinstance(name, str) or not name:
            raise WebhookInvalid(f"{where}.secretEnv is required: the name of the environment variable "
                                 "holding the signing secret")
        if not isinstance(events, list) or not all(isinstance(kind, str) for kind in events):
            raise WebhookInvalid(f"{where}.events must be a list of event types (empty or absent: every event)")
        secret = (os.environ if environ is None else environ).get(name)
        if not secret:
            raise WebhookInvalid(f"{where}.secretEnv: environment variable {name} is "
                                 f"{'empty' if secret == '' else 'not set'}: export {name} with the signing secret")
        try:
            return cls(url, secret.encode("utf-8"), frozenset(events))
        except WebhookInvalid as exc:
            raise WebhookInvalid(f"{where}: {exc}") from None


def parse_webhooks(value: object, *, where: str = "board.webhooks",
                   environ: Mapping[str, str] | None = None) -> tuple[Webhook, ...]:
    """The `board.webhooks` list (absent: None, no hooks), each entry checked by Webhook.from_config."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise WebhookInvalid(f"{where} must be a list of {{url, secretEnv, events}} objects")
    return tuple(Webhook.from_config(entry, where=f"{where}[{i}]", environ=environ) for i, entry in enumerate(value))


def _url_problem(url: object) -> str | None:
    """What is wrong with a webhook URL (never quoting it: it may carry a token), or None."""
    if not isinstance(url, str):
        return "must be a string"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError:
        return "is not a valid URL (check the host and port)"
    if parts.scheme not in ("http", "https"):
        return f"must be an http:// or https:// URL, not {parts.scheme or 'one without a scheme'}"
    if not parts.hostname:
        return "has no host"
    if parts.username is not None or parts.password is not None:
        return "must not carry a user name or password; the signature (secretEnv) authenticates the events"
    if any(ch.isspace() or ord(ch) < 0x20 for ch in url):
        return "must not contain spaces or control characters"
    return None


def sign(body: bytes, secret: bytes, timestamp: int) -> str:
    """The X-Board-Signature value for `body` sent at `timestamp` (unix seconds)."""
    mac = hmac.new(secret, b"%d." % timestamp + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signature(header: str, body: bytes, secret: bytes, *, now: float, tolerance: float = 300) -> bool:
    """Whether `header` (X-Board-Signature: exactly `t=<digits>,v1=<64 lowercase hex>`) signs `body` with
    `secret`, at a time within `tolerance` seconds of `now` either way. Constant-time comparison."""
    if not isinstance(header, str) or not isinstance(body, bytes) or not secret:
        return False
    fields: dict[str, str] = {}
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep or key in fields:
            return False
        fields[key] = value
    if fields.keys() != {"t", "v1"}:
        return False
    stamp, given = fields["t"], fields["v1"]
    if not (0 < len(stamp) <= 12 and stamp.isascii() and stamp.isdigit()) or abs(now - int(stamp)) > tolerance:
        return False
    if len(given) != 64 or any(ch not in "0123456789abcdef" for ch in given):
        return False
    expected = hmac.new(secret, stamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), given.encode("ascii"))


def http_post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> int:
    """POST `body` to `url` once; the response status. Follows no redirect (a 3xx is just its status)."""
    import http.client

    parts = urlsplit(url)
    https = parts.scheme == "https"
    kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
    conn = kind(parts.hostname or "", parts.port or (443 if https else 80), timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request("POST", target, body=body, headers=dict(headers))
        response = conn.getresponse()
        response.read(65536)  # the answer is not used; read a little so the server is not cut short
        return response.status
    finally:
        conn.close()


@dataclass(eq=False)
class _Outgoing:
    """One event on its way to one hook (the body bytes are shared by every hook)."""

    event_id: str
    event_type: str
    task_id: str
    body: bytes
    seq: int
    queued: float
    due: float = float("-inf")  # a lane's head is attempted once the clock reaches this
    attempts: int = 0


@dataclass(eq=False)
class _HookLine:
    """One hook's queue: a lane per task (its events in order), every waiting event by age, its worker."""

    hook: Webhook
    cond: threading.Condition = field(default_factory=threading.Condition)
    lanes: dict[str, deque[_Outgoing]] = field(default_factory=dict)
    waiting: OrderedDict[int, _Outgoing] = field(default_factory=OrderedDict)
    inflight: _Outgoing | None = None
    closing: bool = False
    abandon: bool = False
    thread: threading.Thread | None = None


class WebhookSender:
    """Delivers the board's semantic events to `hooks` (the module docstring has the rules).

    `post` sends one request (http_post); `clock` (monotonic seconds) schedules retries and ages; `wall`
    (unix seconds) stamps signatures; `random` (0..1) draws the jitter. With an injected clock nothing
    waits on real time: advance the clock, then `wait_idle` lets the workers catch up."""

    def __init__(self, hooks: Iterable[Webhook], *, post: Post = http_post,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time,
                 random: Callable[[], float] = _random.random, attempts: int = 8, max_age: float = 600.0,
                 base_delay: float = 1.0, max_delay: float = 60.0, max_queue: int = 1000,
                 timeout: float = 10.0) -> None:
        if attempts < 1 or max_queue < 1:
            raise ValueError("webhook attempts and max_queue must be at least 1")
        if min(base_delay, max_delay, timeout, max_age) <= 0:
            raise ValueError("webhook delays, timeout and max_age must be positive")
        from ..wire.implementation import NAME, VERSION

        self._agent = f"{NAME}/{VERSION}"
        self._post, self._clock, self._wall, self._random = post, clock, wall, random
        self._attempts, self._max_age, self._max_queue, self._timeout = attempts, max_age, max_queue, timeout
        self._base_delay, self._max_delay = base_delay, max_delay
        self._seq = itertools.count(1)
        self._lines = [_HookLine(hook) for hook in hooks]
        for line in self._lines:
            line.thread = threading.Thread(target=self._run, args=(line,), daemon=True,
                                           name=f"webhook {line.hook.shown}")
            line.thread.start()

    def deliver(self, event: Mapping[str, Any]) -> int:
        """Queue `event` for every hook that wants its type; how many hooks took it. Never blocks or raises."""
        if not self._lines:
            return 0
        try:
            event_id, event_type, task_id = str(event["id"]), str(event["type"]), str(event["task"]["id"])
            body = json.dumps(event, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (KeyError, TypeError, ValueError) as exc:
            _log().error("webhooks: an event without id, type and task.id, or not JSON, was not sent (%s)",
                         type(exc).__name__)
            return 0
        taken = 0
        for line in self._lines:
            if not line.hook.wants(event_type):
                continue
            with line.cond:
                if line.closing:
                    continue
                self._make_room(line)
                item = _Outgoing(event_id, event_type, task_id, body, next(self._seq), self._clock())
                line.lanes.setdefault(task_id, deque()).append(item)
                line.waiting[item.seq] = item
                line.cond.notify_all()
            taken += 1
        return taken

    def pending(self) -> int:
        """Events queued and not yet delivered or dropped, over every hook (the one in flight included)."""
        return sum(len(line.waiting) for line in self._lines)  # each len() is atomic

    def wait_idle(self, timeout: float) -> bool:
        """Block until no hook has an event due now or in flight (retries scheduled later may remain);
        False if that took longer than `timeout` seconds of real time."""
        deadline = time.monotonic() + timeout
        for line in self._lines:
            with line.cond:
                line.cond.notify_all()  # a worker waiting on an injected clock looks again
                while line.inflight is not None or self._next(line, self._clock()) is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or line.thread is None or not line.thread.is_alive():
                        return False
                    line.cond.wait(left)
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Stop: one attempt at each event due now, the rest dropped; waits up to `timeout` s for the workers."""
        for line in self._lines:
            with line.cond:
                line.closing = True
                line.cond.notify_all()
        deadline = time.monotonic() + timeout
        for line in self._lines:
            if line.thread is not None:
                line.thread.join(max(0.0, deadline - time.monotonic()))
        for line in self._lines:
            with line.cond:
                line.abandon = True  # a worker still posting stops after that request
                line.cond.notify_all()

    def _run(self, line: _HookLine) -> None:
        with line.cond:
            while not line.abandon:
                now = self._clock()
                item = self._next(line, now)
                if item is None:
                    if line.closing:
                        break
                    line.cond.wait(self._until_due(line, now))
                    continue
                line.inflight = item
                line.cond.release()
                try:
                    failure = self._attempt(line.hook, item)
                finally:
                    line.cond.acquire()
                    line.inflight = None
                self._settle(line, item, failure)
                line.cond.notify_all()
            if line.waiting:
                _log().warning("webhook %s: %d events not delivered when the board closed",
                               line.hook.shown, len(line.waiting))
                line.waiting.clear()
                line.lanes.clear()
            line.cond.notify_all()

    def _attempt(self, hook: Webhook, item: _Outgoing) -> str | None:
        """POST one event once; None when delivered, else why not (for the log: no URL, no secret)."""
        stamp = int(self._wall())
        headers = {"Content-Type": "application/json", "User-Agent": self._agent,
                   "X-Board-Signature": sign(item.body, hook.secret, stamp),
                   "X-Board-Event": item.event_type, "X-Board-Delivery": item.event_id}
        item.attempts += 1
        try:
            status = self._post(hook.url, item.body, headers, self._timeout)
        except Exception as exc:  # any failure of the request is retried; the message may quote the URL
            strerror = getattr(exc, "strerror", None)
            return type(exc).__name__ + (f" ({strerror})" if isinstance(strerror, str) else "")
        return None if 200 <= status < 300 else f"HTTP {status}"

    def _settle(self, line: _HookLine, item: _Outgoing, failure: str | None) -> None:
        now = self._clock()
        if failure is None:
            self._remove(line, item)
        elif item.attempts >= self._attempts or now - item.queued > self._max_age or line.closing:
            self._remove(line, item)
            _log().warning("webhook %s: gave up on event %s (%s) of task %s after %d attempts, last: %s",
                           line.hook.shown, item.event_id, item.event_type, item.task_id, item.attempts, failure)
        else:
            delay = min(self._max_delay, self._base_delay * 2 ** min(item.attempts - 1, 30))
            item.due = now + delay * (1 - JITTER * self._random())
            _log().info("webhook %s: event %s failed (%s); attempt %d in %.1f s", line.hook.shown,
                        item.event_id, failure, item.attempts + 1, item.due - now)

    @staticmethod
    def _next(line: _HookLine, now: float) -> _Outgoing | None:
        """The lane head due first (then oldest) that is due at `now` and not in flight."""
        best: _Outgoing | None = None
        for lane in line.lanes.values():
            head = lane[0]
            if head is not line.inflight and head.due <= now and (
                    best is None or (head.due, head.seq) < (best.due, best.seq)):
                best = head
        return best

    @staticmethod
    def _until_due(line: _HookLine, now: float) -> float | None:
        dues = [lane[0].due for lane in line.lanes.values() if lane[0] is not line.inflight]
        return max(0.0, min(dues) - now) if dues else None

    def _make_room(self, line: _HookLine) -> None:
        while len(line.waiting) - (line.inflight is not None) >= self._max_queue:
            oldest = next(item for item in line.waiting.values() if item is not line.inflight)
            self._remove(line, oldest)
            _log().warning("webhook %s: %d events waiting, dropped the oldest: %s (%s) of task %s",
                           line.hook.shown, self._max_queue, oldest.event_id, oldest.event_type, oldest.task_id)

    @staticmethod
    def _remove(line: _HookLine, item: _Outgoing) -> None:
        lane = line.lanes[item.task_id]
        lane.remove(item)
        if not lane:
            del line.lanes[item.task_id]
        del line.waiting[item.seq]
