"""lifecycle: run a server until SIGTERM or Ctrl-C, with no window in which SIGTERM kills it.

The handler is installed before the server binds its port, so a SIGTERM that arrives while the
server is being built (a client that saw the port open and an orchestrator stopping it at once)
still ends in the graceful path: stop accepting, let requests in flight finish, exit 0.
Rules: knows no protocol; only the main thread may install signal handlers.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, Protocol


class Servable(Protocol):
    def serve_forever(self, poll_interval: float = ...) -> None: ...

    def shutdown(self) -> None: ...

    def server_close(self) -> None: ...


def run_until_stopped(build: Callable[[], Servable], ready: Callable[[Any], None] | None = None) -> int:
    """Build the server (binding its port), serve until SIGTERM or Ctrl-C, close it; returns 0."""
    stopping = threading.Event()
    built: list[Servable] = []

    def on_sigterm(signum: int, frame: Any) -> None:
        stopping.set()
        for server in built:  # shutdown() waits for serve_forever: never call it on this thread
            threading.Thread(target=server.shutdown, daemon=True).start()

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        server = build()
        built.append(server)
        try:
            if ready is not None:
                ready(server)
            if not stopping.is_set():  # a SIGTERM before this point: do not start serving at all
                server.serve_forever(poll_interval=0.5)
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0
