"""Test helpers for servers on local ports: a free port, waiting until one listens, bounded polling."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def gateway_args(config: Any, *extra: str) -> list[str]:
    """`python -m mcp_agent_kit gateway CONFIG` arguments for tests: a backend that starts slowly on a loaded
    machine (a legacy SDK's imports) still joins; a backend that dies fails at once whatever this bound."""
    return ["-m", "mcp_agent_kit", "gateway", str(config), "--timeout", "60", *extra]

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[Any] | None = None, timeout: float = 30.0) -> None:
    """Return once 127.0.0.1:port accepts connections; raise if proc exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read() if proc.stderr else b''!r}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def wait_until(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    """Poll a condition the code under test exposes (when there is no event to wait on), bounded."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def until(check: Callable[[], Any], what: str, seconds: float = 20.0, step: float = 0.05) -> Any:
    """Poll `check` until it returns something truthy, and return that; AssertionError naming `what`
    after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


@contextmanager
def serving(command: Callable[[int], list[str]], url: str, stderr: int = subprocess.PIPE) -> Iterator[str]:
    """Run `command(port)` on a free port until the block ends; yields `url` with {port} filled in,
    once the port listens."""
    port = free_port()
    proc = subprocess.Popen(command(port), stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_listening(port, proc)
        yield url.format(port=port)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
