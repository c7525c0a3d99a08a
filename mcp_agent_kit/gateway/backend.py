"""gateway.backend: one configured server behind the gateway, its client and what it offers.

A Backend probes and lists at start, follows its list changes (client.watch), reconnects on its
next use after a failure, and turns a failure into an isError result naming it. Rules: one
backend only (merging lives in gateway.merged); reaches its server through client/ alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.client import Client
from mcp_agent_kit.client.inputs import ClientError
from mcp_agent_kit.client.watch import ListWatcher
from mcp_agent_kit.core import content
from mcp_agent_kit.core.content import ToolResult
from mcp_agent_kit.wire.jsonrpc import RpcError

log = logging.getLogger("mcp_agent_kit.gateway")
# What a backend's client raises when the backend is down, misbehaves or refuses.
FAILURES = (PeerError, RpcError, ClientError, ValueError)


def _no_caller(params: dict[str, Any]) -> dict[str, Any]:
    raise ClientError("the gateway asks its caller only while one of its tool calls runs")


class Backend:
    """One configured server: its client and what it offers."""

    def __init__(self, alias: str, spec: dict[str, Any], timeout: float) -> None:
        self.alias = alias
        # Declared so that a handshake-era backend may ask during a call (its capabilities are fixed
        # at initialize); a question outside any call is refused.
        options: dict[str, Any] = {
            "timeout": timeout, "allow_legacy": spec["allowLegacy"], "elicitation": _no_caller, "sampling": _no_caller,
        }
        if "url" in spec:
            self.client = Client.http(spec["url"], spec["headers"], **options)
        else:
            self.client = Client.stdio(spec["command"], spec["args"], env=spec["env"], cwd=spec["cwd"], **options)
        self.error: str | None = None
        self.broken = False
        self.tools: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.templates: list[dict[str, Any]] = []
        self.watcher: ListWatcher | None = None
        self.on_reconnect: Callable[[Backend], None] | None = None
        self._lock = threading.Lock()

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
                if self.on_reconnect is not None:
                    self.on_reconnect(self)
            return self.client

    def failed(self, exc: Exception) -> ToolResult:
        if isinstance(exc, PeerError):
            self.broken = True
        return ToolResult([content.text(f"backend {self.alias!r} failed: {exc}")], is_error=True)
