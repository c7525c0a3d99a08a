"""gateway.backend: one configured server behind the gateway, its client and what it offers.

A Backend probes and lists at start, follows its list changes (client.watch), reconnects on its
next use after a failure (and, when it was down at start, in the background with backoff:
retry()), and turns a failure into an isError result naming it. Its limits isolate it from the
other backends: every request to it ends within its `timeout`, and at most `maxInFlight` calls
wait on it at once (admit() refuses the next one at once instead of queueing it). Rules: one
backend only (merging lives in gateway.merged); reaches its server through client/ alone.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.client import Client
from mcp_agent_kit.client.inputs import ClientError
from mcp_agent_kit.client.oauth.errors import OAuthError
from mcp_agent_kit.client.oauth.factory import oauth_for
from mcp_agent_kit.client.stdio import StdioChannel
from mcp_agent_kit.client.watch import ListWatcher
from mcp_agent_kit.core import content
from mcp_agent_kit.core.content import ToolResult
from mcp_agent_kit.gateway.config import DEFAULT_MAX_IN_FLIGHT, DEFAULT_TIMEOUT, ConfigError
from mcp_agent_kit.wire.jsonrpc import RpcError

log = logging.getLogger("mcp_agent_kit.gateway")
# What a backend's client raises when the backend is down, misbehaves or refuses.
FAILURES = (PeerError, RpcError, ClientError, ValueError)
RETRY_FIRST = 1.0
"""Seconds before the first retry of a backend that was down at start; doubled after each failure..."""
RETRY_MOST = 60.0
"""...up to this many (each wait is jittered down by up to a quarter, so never longer)."""


def _no_caller(params: dict[str, Any]) -> dict[str, Any]:
    raise ClientError("the gateway asks its caller only while one of its tool calls runs")


class Backend:
    """One configured server: its client and what it offers."""

    def __init__(self, alias: str, spec: dict[str, Any], timeout: float) -> None:
        self.alias = alias
        self.call_timeout = float(spec.get("timeout", DEFAULT_TIMEOUT))
        self.max_in_flight = int(spec.get("maxInFlight", DEFAULT_MAX_IN_FLIGHT))
        self._slots = threading.BoundedSemaphore(self.max_in_flight)
        # Declared so that a handshake-era backend may ask during a call (its capabilities are fixed
        # at initialize); a question outside any call is refused.
        options: dict[str, Any] = {
            "timeout": timeout, "request_timeout": self.call_timeout, "allow_legacy": spec["allowLegacy"],
            "elicitation": _no_caller, "sampling": _no_caller,
        }
        if "url" in spec:
            if spec.get("oauth") is not None:  # this backend's own login; a caller's token never goes to it
                try:
                    options["auth"] = oauth_for(spec["url"], spec["oauth"])
                except (ValueError, OAuthError) as exc:
                    raise ConfigError(f"server {alias!r} oauth: {exc}") from None
            self.client = Client.http(spec["url"], spec["headers"], **options)
        else:
            channel = StdioChannel(
                spec["command"], spec["args"], env=spec["env"], cwd=spec["cwd"], label=f"backend {alias!r}"
            )
            self.client = Client(channel, **options)
        self.error: str | None = None
        self.broken = False
        self.tools: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.templates: list[dict[str, Any]] = []
        self.skills: list[dict[str, Any]] = []  # SEP-2640 entries, listed with the resources
        self.watcher: ListWatcher | None = None
        self._reconnected: list[Callable[[Backend], None]] = []  # add_listener("reconnected", ...)
        self._lock = threading.Lock()

    def add_listener(self, kind: str, listener: Callable[[Backend], None]) -> Callable[[], None]:
        """Call `listener(backend)` each time this backend is connected again after it was found dead
        ("reconnected", the one kind); returns the function that removes it again."""
        if kind != "reconnected":
            raise ValueError(f"unknown listener kind {kind!r}; use reconnected")
        self._reconnected.append(listener)

        def remove() -> None:
            if listener in self._reconnected:
                self._reconnected.remove(listener)

        return remove

    def start(self) -> None:
        try:
            self.client.connect()
            for kind in ("tools", "prompts", "resources"):
                self.refresh(kind)
        except FAILURES as exc:
            self.error = str(exc)
            self.broken = True
            log.warning("backend %r is unavailable: %s", self.alias, exc)

    def refresh(self, kind: str) -> None:
        """List one kind again (raises the client's errors)."""
        caps = self.client.verdict.capabilities if self.client.verdict else {}
        if kind == "tools":
            self.tools = self.client.list_tools() if "tools" in caps else []
        elif kind == "prompts":
            self.prompts = self.client.list_prompts() if "prompts" in caps else []
        elif "resources" in caps:
            self.resources = self.client.list_resources()
            self.templates = self.client.list_resource_templates()
            self.skills = self.client.list_skills() if self.client.skills.settings() is not None else []

    def watch(self, changed: Callable[[Backend, str], None]) -> None:
        """Report this backend's list changes (again after a reconnect)."""
        if self.broken:
            return
        self.watcher = ListWatcher(self.client, lambda kind: changed(self, kind))
        try:
            self.watcher.start()
        except FAILURES as exc:
            log.info("cannot follow %r's list changes: %s", self.alias, exc)

    def use(self) -> Client:
        """The client, reconnected first if the last use found the backend dead."""
        with self._lock:
            if self.broken:
                self.client.channel.restart()
                self.client.verdict = None
                self.client.connect()
                self.broken = False
                for listener in tuple(self._reconnected):
                    listener(self)
            return self.client

    def retry(self, stop: threading.Event, *, first: float = RETRY_FIRST, most: float = RETRY_MOST) -> None:
        """Until the backend is up (or stop is set), try to connect it, waiting first, then twice as
        long after each failure up to `most` seconds, jittered; once up it is listed and watched
        again through its reconnected listeners, like a backend reconnected on use."""
        delay = first
        while not stop.wait(delay * random.uniform(0.75, 1.0)):
            if not self.broken:
                return  # a call reconnected it meanwhile
            try:
                self.use()
            except FAILURES as exc:
                log.info("backend %r is still unavailable (next try within %gs): %s", self.alias,
                         min(delay * 2, most), exc)
                delay = min(delay * 2, most)
                continue
            log.info("backend %r is up", self.alias)
            return

    def admit(self) -> bool:
        """Take one of the backend's in-flight places, if one is free (give it back with release())."""
        return self._slots.acquire(blocking=False)

    def release(self) -> None:
        self._slots.release()

    def busy(self) -> str:
        return (f"backend {self.alias!r} already has {self.max_in_flight} calls in flight (its maxInFlight); "
                "try again later")

    def describe_failure(self, exc: Exception) -> str:
        """What went wrong, naming the backend; marks it for a reconnect unless it merely timed out."""
        if isinstance(exc, PeerError) and exc.kind == "timeout":
            # Slow or hung, not gone: its other calls go on, and a restart would kill them.
            return f"backend {self.alias!r} did not answer within {self.call_timeout:g}s (its timeout): {exc.detail}"
        if isinstance(exc, PeerError):
            self.broken = True
        return f"backend {self.alias!r} failed: {exc}"

    def failed(self, exc: Exception) -> ToolResult:
        return ToolResult([content.text(self.describe_failure(exc))], is_error=True)
