"""Helpers for the agent-host tests: an in-process host on a free port, the echo agent's config, process checks."""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp_agent_kit.hosts.app import AgentHost
from mcp_agent_kit.hosts.config import parse
from mcp_agent_kit.httpd import Policy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "acp_echo_agent.py"
DOC = ROOT / "docs" / "agent-host.md"


def echo_config(tmp_path: Path, entry: Mapping[str, Any] | None = None, **acp: Any) -> dict[str, Any]:
    """One agent, `echo`: examples/acp_echo_agent.py with its sessions under tmp_path."""
    spec = {"command": sys.executable, "args": [str(EXAMPLE)], "cwd": str(tmp_path),
            "env": {"ACP_ECHO_AGENT_DIR": str(tmp_path / "sessions")}, **acp}
    return {"agents": {"echo": {"acp": spec, **(entry or {})}}}


@contextmanager
def running_host(data: dict[str, Any], *, tokens: Mapping[str, str] | None = None,
                 environ: Mapping[str, str] | None = None, **options: Any) -> Iterator[tuple[AgentHost, str]]:
    """An AgentHost serving `data` on 127.0.0.1 (a free port) until the block ends; (host, "127.0.0.1:PORT").
    `options` go to AgentHost (`workspaces=HostWorkspaces(tmp_path / ...)`)."""
    host = AgentHost(parse(data, environ or {}), Policy(bind_host="127.0.0.1", tokens=tokens), **options)
    server = host.bind("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield host, f"127.0.0.1:{server.server_address[1]}"
    finally:
        host.close()
        server.shutdown()
        server.server_close()
        thread.join(10)


def http(url: str, method: str = "GET", body: bytes | None = None,
         headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request, whatever its status."""
    request = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def get_json(url: str, headers: Mapping[str, str] | None = None) -> Any:
    status, _, body = http(url, headers=headers)
    assert status == 200, (status, body)
    return json.loads(body)


def gone(pid: int) -> bool:
    """The process ended (and was reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def only_connection(host: AgentHost) -> dict[str, Any]:
    listing = host.registry.listing()
    assert len(listing) == 1, listing
    return listing[0]
