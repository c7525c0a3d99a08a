"""addresses: `HOST:PORT` parsing shared by every command line (serve, gateway, Server.run).

Rules: pure string handling; `[::1]:8000` style IPv6 brackets are stripped; an empty host means
loopback, never all interfaces.
"""

from __future__ import annotations


def split_host_port(value: str) -> tuple[str, int]:
    """(host, port) for `HOST:PORT`; ValueError with a clear message otherwise."""
    host, _, port = value.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
