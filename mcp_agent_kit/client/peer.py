"""peer: what a Client's helpers (client.skills, client.watch) use of the Client they serve.

The helpers are built by the Client and typed against this Protocol, so they sit below
client.client rather than beside it in a circle. Rules: typing only, no behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mcp_agent_kit.client.channel import Channel
from mcp_agent_kit.client.probe import Verdict


class Peer(Protocol):
    """One connected MCP server as the helpers see it: its verdict, its channel, its requests."""

    verdict: Verdict | None
    channel: Channel

    def connect(self) -> Verdict: ...

    def add_listener(self, kind: str, listener: Callable[[str], None]) -> Callable[[], None]: ...

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]: ...
