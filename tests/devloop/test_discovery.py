"""The server object is found without `:obj`: the first of `server`, `mcp`, `app` holding a Server, else
the module's one Server instance, else the first of those names (an a2a Agent named `server`, say)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.loader import TargetError, load_target, split_target
from tests.devloop.helpers import kit, write

_names = itertools.count()


def load(folder: Path, source: str, suffix: str = "") -> Any:
    """load_target of a fresh file (each its own module name, so tests never see each other's)."""
    path = write(folder, f"discovery_{next(_names)}.py", "from mcp_agent_kit import Server\n" + source)
    return load_target(path + suffix)


@pytest.mark.parametrize(("source", "found"), [
    ("server = Server('s', '1')\nmcp = Server('m', '1')\n", "s"),
    ("mcp = Server('m', '1')\napp = Server('a', '1')\n", "m"),
    ("app = Server('a', '1')\n", "a"),
    ("my_server = Server('mine', '1')\n", "mine"),
    ("app = object()\nbuilt = Server('built', '1')\n", "built"),  # an `app` that is no Server: the one Server
    ("import json as mcp\nx = Server('x', '1')\n", "x"),  # a module named mcp is never the server
    ("one = Server('one', '1')\nalias = one\n", "one"),  # one instance under two names
])
def test_the_server_is_found(tmp_path: Path, source: str, found: str) -> None:
    assert load(tmp_path, source).name == found


def test_a_conventional_name_that_is_no_server_is_still_taken(tmp_path: Path) -> None:
    """An a2a Agent (or anything else the command accepts) named `server`, with no Server around."""
    assert load(tmp_path, "server = {'kind': 'agent'}\n") == {"kind": "agent"}


def test_several_servers_and_no_name_is_an_error_naming_them(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match=r"2 Server objects \(a, b\); name one after a colon, e.g. .*:a"):
        load(tmp_path, "a = Server('a', '1')\nb = Server('b', '1')\n")


def test_no_server_at_all_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="no server object"):
        load(tmp_path, "x = 1\n")


def test_an_explicit_name_wins(tmp_path: Path) -> None:
    assert load(tmp_path, "server = Server('s', '1')\nother = Server('o', '1')\n", ":other").name == "o"
    with pytest.raises(TargetError, match="has no attribute 'missing'"):
        load(tmp_path, "server = Server('s', '1')\n", ":missing")


def test_default_attr_still_names_one_attribute(tmp_path: Path) -> None:
    path = write(tmp_path, "explicit_default.py", "from mcp_agent_kit import Server\nmcp = Server('m', '1')\n")
    with pytest.raises(TargetError, match="has no attribute 'server'"):
        load_target(path, default_attr="server")


@pytest.mark.parametrize(("target", "parts"), [
    ("pkg.mod:server", ("pkg.mod", "server")),
    ("pkg.mod", ("pkg.mod", None)),
    ("dir/file.py", ("dir/file.py", None)),
    ("dir/file.py:app", ("dir/file.py", "app")),
    ("C:\\dir\\file.py", ("C:\\dir\\file.py", None)),
    ("C:\\dir\\file.py:app", ("C:\\dir\\file.py", "app")),
])
def test_split_target(target: str, parts: tuple[str, str | None]) -> None:
    assert split_target(target) == parts


def test_serve_finds_app_over_the_wire(tmp_path: Path) -> None:
    """`serve FILE` with the server named `app` answers a legacy handshake."""
    path = write(tmp_path, "served.py", "from mcp_agent_kit import Server\napp = Server('served-app', '1')\n")
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    done = kit("serve", path, input="".join(json.dumps(line) + "\n" for line in lines), stdin=None)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "served-app"


def test_a2a_finds_mcp(tmp_path: Path) -> None:
    from mcp_agent_kit.a2a.cli import build_agent
    from mcp_agent_kit.a2a.toolagent import ToolAgent

    agent = build_agent(load(tmp_path, "mcp = Server('for-a2a', '1')\n"))
    assert isinstance(agent, ToolAgent)
    assert "mcp_agent_kit.server" in sys.modules
