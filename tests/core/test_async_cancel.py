"""An async tool's coroutine is cancelled by the request's cancel flag through a listener (core.invoke):
the call ends as soon as the flag is set, with no tick, and the coroutine sees CancelledError.
Readiness signals only: the tool says it started; the wake is bounded generously."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from mcp_agent_kit import Server
from mcp_agent_kit.core.context import CancelFlag
from mcp_agent_kit.core.dispatcher import Connection
from tests.stdio_peer import modern

BOUND = 10.0  # the coroutine would otherwise hold for 600 s


@pytest.mark.parametrize("flag", [CancelFlag, threading.Event], ids=["kit-flag", "plain-event"])
def test_setting_the_cancel_flag_cancels_a_running_async_tool(flag: type[threading.Event]) -> None:
    server = Server("async-cancel", "1.0")
    started, stopped = threading.Event(), threading.Event()

    @server.tool
    async def hold() -> str:
        """Hold until cancelled."""
        started.set()
        try:
            await asyncio.sleep(600)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "held"

    cancel = flag()
    replies: list[Any] = []
    worker = threading.Thread(daemon=True, target=lambda: replies.append(
        server.dispatcher.handle(modern("a1", "tools/call", name="hold", arguments={}), Connection(), None, cancel)))
    worker.start()
    assert started.wait(BOUND), "the tool never started"
    cancel.set()
    worker.join(BOUND)
    assert not worker.is_alive(), "the cancelled call is still running"
    assert stopped.wait(BOUND), "the coroutine was not cancelled"
    assert replies == [None]  # a cancelled request is never answered


def test_an_async_tool_not_cancelled_answers() -> None:
    server = Server("async-done", "1.0")

    @server.tool
    async def quick() -> str:
        """Answer at once."""
        await asyncio.sleep(0)
        return "done"

    reply = server.dispatcher.handle(modern("a2", "tools/call", name="quick", arguments={}), Connection(), None,
                                     CancelFlag())
    assert reply is not None and reply["result"]["content"][0]["text"] == "done"
