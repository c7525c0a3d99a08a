"""A gateway whose every backend is down still answers its lists: empty, never -32601."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit.core.dispatcher import Connection
from mcp_agent_kit.gateway import Gateway
from tests.stdio_peer import legacy, modern

DEAD: dict[str, Any] = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(1)"], "env": {}, "cwd": None,
        "allowLegacy": False}
LISTS = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources",
         "resources/templates/list": "resourceTemplates"}


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    gateway = Gateway({"dead": DEAD, "gone": dict(DEAD)}, timeout=5)
    gateway.start(follow=False)
    try:
        yield gateway
    finally:
        gateway.close()


@pytest.mark.parametrize("method", LISTS)
def test_every_list_is_empty_when_every_backend_is_down(gateway: Gateway, method: str) -> None:
    assert all(backend.broken for backend in gateway.backends.values())
    reply = gateway.server.handle(modern(1, method))
    assert reply is not None and "error" not in reply, reply
    assert reply["result"][LISTS[method]] == []


def test_a_handshake_era_client_sees_the_lists_too(gateway: Gateway) -> None:
    conn = Connection()
    init = gateway.server.handle(legacy(1, "initialize", protocolVersion="2025-06-18", capabilities={},
                                        clientInfo={"name": "t", "version": "0"}), conn)
    assert init is not None and {"tools", "prompts", "resources"} <= set(init["result"]["capabilities"])
    assert gateway.server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}, conn) is None
    reply = gateway.server.handle(legacy(2, "tools/list"), conn)
    assert reply is not None and reply.get("result", {}).get("tools") == [], reply
