"""addresses: `HOST:PORT` parsing and the one rule for public binds, shared by every server front door.

`split_host_port` reads `HOST:PORT` (serve, a2a, gateway, Server.run). `exposed(host, ...)` is the
public-bind rule every HTTP server of the kit applies before it listens: a non-loopback bind
needs authentication (a bearer token or OAuth) or an explicit opt-out (`--insecure`,
`insecure=True`); cli_common words it for command lines, `refuse_exposed` for the Python API.
`machine_names(bind)` are the Host names a wildcard bind accepts without being told (this
machine's names and addresses). Rules: standard library only, cheap to import (the front door
loads it); `[::1]:8000` style IPv6 brackets are stripped; an empty host means loopback, never
all interfaces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

WILDCARDS = frozenset({"", "0.0.0.0", "::"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def split_host_port(value: str) -> tuple[str, int]:
    """(host, port) for `HOST:PORT`; ValueError with a clear message otherwise."""
    host, _, port = value.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def is_loopback(host: str) -> bool:
    """True for `localhost` and any loopback address (127.0.0.0/8, ::1)."""
    import ipaddress

    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """True for a bind on every interface (`0.0.0.0`, `::`, or an empty host)."""
    return host in WILDCARDS


def exposed(host: str, *, authenticated: bool, insecure: bool) -> bool:
    """The public-bind rule: True when binding `host` would serve the network with no
    authentication and nobody asked for that (the caller refuses to start)."""
    return not (is_loopback(host) or authenticated or insecure)


def refuse_exposed(host: str, options: Mapping[str, Any]) -> None:
    """The rule for the Python API (`serve_http(host, port, **options)`): ValueError when `host` is
    not loopback and neither token=, tokens= nor oauth= is given, unless insecure=True."""
    authenticated = bool(options.get("token") or options.get("tokens") or options.get("oauth"))
    if exposed(host, authenticated=authenticated, insecure=bool(options.get("insecure"))):
        raise ValueError(f"binding {host} exposes the server to the network without authentication: pass "
                         "token=, tokens= or oauth= (or insecure=True to serve it to anyone who can reach it)")


def machine_names(bind: str) -> list[str]:
    """The Host names a bind on `bind` answers to without `--allow-host`: on a wildcard bind,
    this machine's host name, its fully qualified name and their addresses; else nothing extra
    (the bound address itself passes anyway)."""
    if not is_wildcard(bind):
        return []
    import contextlib
    import socket

    hostname = socket.gethostname()
    names = [hostname, socket.getfqdn()]
    with contextlib.suppress(OSError):
        names += [str(info[4][0]) for info in socket.getaddrinfo(hostname, None)]
    return list(dict.fromkeys(name for name in names if name))
