"""connection: the era and handshake state of one stdio stream or one legacy HTTP session.

A bottom module (standard library and wire/ only): the dispatcher, the method handlers, the
extensions and the transports all hold Connections, so it sits below every one of them
(core.dispatcher re-exports it). Rules: state only; no protocol logic beyond cancelling a request.
"""

from __future__ import annotations

import threading
from typing import Any

from mcp_agent_kit.wire import mcp


class Connection:
    """Era and handshake state of one stdio stream or one legacy HTTP session."""

    def __init__(self, era: str | None = None, principal: str | None = None, can_request: bool = True) -> None:
        self.era = era
        self.principal = principal
        self.key: str | None = None  # a shared identity (a legacy HTTP session id): whose tasks a store keeps
        self.can_request = can_request
        self.version: str = mcp.LATEST_LEGACY
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] | None = None
        self.log_level: str | None = None
        self.initialized = False
        self.subscriptions: set[str] = set()
        self.inflight: dict[Any, threading.Event] = {}

    def cancel(self, request_id: Any) -> None:
        event = self.inflight.get(request_id)
        if event is not None:
            event.set()
