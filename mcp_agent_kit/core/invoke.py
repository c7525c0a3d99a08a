"""invoke: calls a user handler, sync or async, with its arguments and optional context.

Async handlers run on one shared background event loop, started on first use, so sync
callers (worker threads) can wait for them; the request's cancel flag cancels the coroutine
through a listener. Rules: knows nothing of MCP shapes or eras.
"""

from __future__ import annotations

import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.core.context import cancel_listener
from mcp_agent_kit.core.registry import Handler

if TYPE_CHECKING:
    import asyncio

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    import asyncio
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="mcp-agent-kit-async", daemon=True).start()
            _loop = loop
        return _loop


def run_coroutine(coro: Coroutine[Any, Any, Any], cancel: threading.Event | None = None) -> Any:
    """Run coro on the background loop and wait for it; a set cancel event cancels it."""
    import asyncio

    future = asyncio.run_coroutine_threadsafe(coro, _background_loop())
    if cancel is None:
        return future.result()
    from concurrent.futures import CancelledError

    def stop() -> None:
        future.cancel()  # cancels the coroutine's task on the loop

    remove = cancel_listener(cancel, stop)  # the flag wakes us through a listener: nothing polled
    try:
        return future.result()
    except CancelledError:
        if cancel.is_set():
            raise TimeoutError("the request was cancelled") from None
        raise
    finally:
        remove()


def call(handler: Handler, arguments: dict[str, Any], context: Any, cancel: threading.Event | None = None) -> Any:
    if not handler.context_arg and not handler.is_async:
        return handler.fn(**arguments)
    if handler.raw:  # Registry.add_raw_tool: fn(ctx, arguments)
        value = handler.fn(context, arguments)
        return run_coroutine(value, cancel) if handler.is_async else value
    kwargs = dict(arguments)
    if handler.context_arg:
        kwargs[handler.context_arg] = context
    if handler.is_async:
        return run_coroutine(handler.fn(**kwargs), cancel)
    return handler.fn(**kwargs)
