"""board.a2a_push: A2A push notification configs of board tasks, and their delivery.

`PushConfigs` keeps TaskPushNotificationConfig objects (`{taskId, id, url, token?, authentication?{scheme,
credentials?}}`) per principal and task, in memory (they are the A2A face's own, not board tasks: a
restart of the board forgets them; a client creates them again). Bounded: MAX_PER_TASK per principal and
task, MAX_CONFIGS in all. A config's URL is checked when it is created and before every POST by the kit's
SSRF rules (client.oauth.net.Fetcher: https, or http only to a loopback host; never link-local, multicast or
reserved addresses; private and loopback ones only when the board itself is served on one; the connection
goes to the address checked).

`PushSender` POSTs one StreamResponse per delivery (`{"statusUpdate": ...}`) with `Content-Type:
application/a2a+json`, `Authorization: <scheme> <credentials>` when the config has `authentication`, and
when it has a `token`: `X-A2A-Notification-Token: <token>` and `X-Board-Signature` (board.webhooks.sign:
HMAC-SHA256 of "<t>.<body>" keyed by the token; a receiver checks it with board.webhooks.verify_signature).
One worker thread, started on the first delivery; deliveries go out in the order given (so a task's
updates arrive in order); a failure (no 2xx, a refused address, no answer in TIMEOUT s) is retried
ATTEMPTS times in all, RETRY_S apart, then dropped with a warning; at most MAX_QUEUE wait (one more drops
the oldest). Rules: no secret reaches a log line; never raises into the board's listener.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from mcp_agent_kit.a2a.protocol import A2AError
from mcp_agent_kit.board.webhooks import sign

log = logging.getLogger("mcp_agent_kit.board.a2a")
MAX_PER_TASK = 10
MAX_CONFIGS = 10_000
MAX_QUEUE = 1000
ATTEMPTS = 3
RETRY_S = 1.0
TIMEOUT = 10.0
_TEXT_MAX = 4096
Post = Callable[[str, dict[str, str], bytes], int]  # (url, headers, body) -> the HTTP status; raises when unsent


def _bad(field: str, why: str) -> A2AError:
    return A2AError("InvalidParams", detail=f"{field} {why}", violations=[(field, why)])


def _text(params: dict[str, Any], field: str, where: str = "", required: bool = False) -> str | None:
    value = params.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > _TEXT_MAX:
        raise _bad(where + field, f"must be a non-empty string of at most {_TEXT_MAX} characters")
    return value


def checked_config(task_id: str, params: dict[str, Any]) -> dict[str, Any]:
    """A TaskPushNotificationConfig from CreateTaskPushNotificationConfig's params (v0.3's nested
    `pushNotificationConfig` is read too), or InvalidParams."""
    nested = params.get("pushNotificationConfig")
    raw = {**params, **nested} if isinstance(nested, dict) else params
    config: dict[str, Any] = {"taskId": task_id, "id": _text(raw, "id") or uuid.uuid4().hex,
                              "url": _text(raw, "url", required=True)}
    token = _text(raw, "token")
    if token is not None:
        config["token"] = token
    auth = raw.get("authentication")
    if auth is not None:
        if not isinstance(auth, dict):
            raise _bad("authentication", "must be an object with scheme and credentials")
        scheme = auth.get("scheme")
        if scheme is None and isinstance(auth.get("schemes"), list) and auth["schemes"]:
            scheme = auth["schemes"][0]  # v0.3
        checked: dict[str, Any] = {"scheme": _text({"scheme": scheme}, "scheme", "authentication.", True)}
        credentials = _text(auth, "credentials", "authentication.")
        if credentials is not None:
            checked["credentials"] = credentials
        config["authentication"] = checked
    for value in (config["url"], token or "", *config.get("authentication", {}).values()):
        if any(ch in value for ch in "\r\n"):
            raise _bad("url", "and the token and credentials must be one line each")
    return config


class PushConfigs:
    """The configs, per (principal, task): create, get, list, delete, and the ones to notify."""

    def __init__(self, check_url: Callable[[str], None]) -> None:
        self._check_url = check_url
        self._lock = threading.Lock()
        self._configs: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self._count = 0

    def create(self, owner: str, task_id: str, params: dict[str, Any]) -> dict[str, Any]:
        config = checked_config(task_id, params)
        self._check_url(config["url"])
        with self._lock:
            mine = self._configs.setdefault((owner, task_id), {})
            if config["id"] not in mine and (len(mine) >= MAX_PER_TASK or self._count >= MAX_CONFIGS):
                raise A2AError("InvalidParams", detail=f"at most {MAX_PER_TASK} push notification configs per task "
                               "(delete one first)")
            self._count += config["id"] not in mine
            mine[config["id"]] = config
            return dict(config)

    def get(self, owner: str, task_id: str, config_id: str) -> dict[str, Any]:
        with self._lock:
            found = self._configs.get((owner, task_id), {}).get(config_id)
        if found is None:
            raise A2AError("TaskNotFound", f"Task {task_id} has no push notification config {config_id}",
                           {"taskId": task_id})
        return dict(found)

    def listed(self, owner: str, task_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(config) for config in self._configs.get((owner, task_id), {}).values()]

    def delete(self, owner: str, task_id: str, config_id: str) -> None:
        with self._lock:
            mine = self._configs.get((owner, task_id), {})
            if mine.pop(config_id, None) is not None:
                self._count -= 1
            if not mine:
                self._configs.pop((owner, task_id), None)

    def of_task(self, task_id: str) -> list[dict[str, Any]]:
        """Every principal's configs of the task (to notify)."""
        with self._lock:
            return [dict(config) for (_, tid), configs in self._configs.items() if tid == task_id
                    for config in configs.values()]

    def forget_task(self, task_id: str) -> None:
        with self._lock:
            for key in [key for key in self._configs if key[1] == task_id]:
                self._count -= len(self._configs.pop(key))


def headers_for(config: dict[str, Any], body: bytes, now: float) -> dict[str, str]:
    headers = {"Content-Type": "application/a2a+json"}
    auth = config.get("authentication")
    if auth:
        headers["Authorization"] = f"{auth['scheme']} {auth.get('credentials', '')}".rstrip()
    token = config.get("token")
    if token:
        headers["X-A2A-Notification-Token"] = token
        headers["X-Board-Signature"] = sign(body, token.encode("utf-8"), int(now))
    return headers


class PushSender:
    """Delivers StreamResponses to push configs (the module's doc has the rules)."""

    def __init__(self, post: Post, *, wall: Callable[[], float] = time.time, retry_s: float = RETRY_S) -> None:
        self._post, self._wall, self._retry_s = post, wall, retry_s
        self._cond = threading.Condition()
        self._queue: deque[tuple[dict[str, Any], bytes]] = deque()
        self._busy = False
        self._closing = False
        self._thread: threading.Thread | None = None

    def deliver(self, config: dict[str, Any], response: dict[str, Any]) -> None:
        body = json.dumps(response, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        with self._cond:
            if self._closing:
                return
            if len(self._queue) >= MAX_QUEUE:
                self._queue.popleft()
                log.warning("A2A push: %d notifications waiting; dropped the oldest", MAX_QUEUE)
            self._queue.append((config, body))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="board-a2a-push", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing waits or is in flight; False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        with self._cond:
            while True:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                config, body = self._queue.popleft()
                self._busy = True
                self._cond.release()
                try:
                    self._send(config, body)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()

    def _send(self, config: dict[str, Any], body: bytes) -> None:
        shown = "{0.scheme}://{0.netloc}{0.path}".format(urlsplit(config["url"]))
        why = ""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                status = self._post(config["url"], headers_for(config, body, self._wall()), body)
            except Exception as exc:  # refused by the address rules, or no connection: retried
                why = type(exc).__name__
            else:
                if 200 <= status < 300:
                    return
                why = f"HTTP {status}"
            with self._cond:
                if self._closing or attempt == ATTEMPTS:
                    break
                self._cond.wait(self._retry_s * attempt)
        log.warning("A2A push to %s for task %s dropped after its attempts: %s", shown, config["taskId"], why)
