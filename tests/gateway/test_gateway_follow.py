"""The gateway follows its backends' list changes after start-up: a modern backend (ours, via
subscriptions/listen) and a handshake-era one (official mcp 1.30.0, notifications on stdio)."""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.gateway import Gateway, parse_config
from tests.net import gateway_args

ROOT = Path(__file__).resolve().parents[2]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}

OUR_BACKEND = textwrap.dedent(
    """
    from mcp_agent_kit import Server

    server = Server("growing", "1.0.0")

    @server.tool
    def grow(name: str) -> str:
        "Register a new tool called name."
        server.add_tool(lambda: f"I am {name}", name=name, description=f"added at runtime: {name}")
        return "grown"

    @server.tool
    def shrink(name: str) -> str:
        "Remove the tool called name."
        server.remove_tool(name)
        return "shrunk"

    if __name__ == "__main__":
        server.run()
    """
)

LEGACY_BACKEND = textwrap.dedent(
    """
    from mcp.server.fastmcp import Context, FastMCP

    app = FastMCP("legacy-growing")

    @app.tool()
    async def grow(name: str, ctx: Context) -> str:
        app.add_tool(lambda: f"I am {name}", name=name, description=f"added at runtime: {name}")
        await ctx.session.send_tool_list_changed()
        return "grown"

    if __name__ == "__main__":
        app.run()
    """
)


def call(gateway: Gateway, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = gateway.server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"_meta": MODERN_META, "name": name, "arguments": arguments}})
    assert reply is not None and "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the gateway did not catch up"
        time.sleep(0.05)


@pytest.fixture()
def gateway_over(tmp_path: Path) -> Any:
    started: list[Gateway] = []

    def start(python: str, source: str, **spec: Any) -> Gateway:
        script = tmp_path / f"backend{len(started)}.py"
        script.write_text(source)
        config = {"mcpServers": {"grow": {"command": python, "args": [str(script)],
                                          "env": {"PYTHONPATH": str(ROOT)}, **spec}}}
        gateway = Gateway(parse_config(config), timeout=10.0)
        gateway.start()
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.close()


def test_tools_added_and_removed_by_a_modern_backend_appear_and_go(gateway_over: Any) -> None:
    gateway = gateway_over(sys.executable, OUR_BACKEND)
    changes: list[str] = []
    gateway.server.on_change(lambda kind, uri: changes.append(kind))
    assert gateway.server.get_tool("extra") is None
    assert call(gateway, "grow", {"name": "extra"})["content"][0]["text"] == "grown"
    eventually(lambda: gateway.server.get_tool("extra") is not None)
    assert call(gateway, "extra", {})["content"][0]["text"] == "I am extra"  # routed to the backend
    assert changes == ["tools"]  # one addition, nothing re-registered needlessly
    call(gateway, "shrink", {"name": "extra"})
    eventually(lambda: gateway.server.get_tool("extra") is None)
    assert gateway.server.get_tool("grow") is not None


def test_a_legacy_backends_announcement_is_followed(gateway_over: Any, legacy_python: str) -> None:
    gateway = gateway_over(legacy_python, LEGACY_BACKEND, allowLegacy=True)
    assert gateway.backends["grow"].client.era == "legacy"
    assert call(gateway, "grow", {"name": "late"})["content"][0]["text"] == "grown"
    eventually(lambda: gateway.server.get_tool("late") is not None)
    assert call(gateway, "late", {})["content"][0]["text"] == "I am late"


def test_start_without_follow_keeps_the_first_picture(gateway_over: Any, tmp_path: Path) -> None:
    script = tmp_path / "still.py"
    script.write_text(OUR_BACKEND)
    config = {"mcpServers": {"grow": {"command": sys.executable, "args": [str(script)],
                                      "env": {"PYTHONPATH": str(ROOT)}}}}
    gateway = Gateway(parse_config(config), timeout=10.0)
    gateway.start(follow=False)
    try:
        call(gateway, "grow", {"name": "extra"})
        backend = gateway.backends["grow"]
        assert "extra" in [tool["name"] for tool in backend.client.list_tools()]  # the backend has it now
        assert backend.watcher is None and not backend.client.has_listeners("list_changed")  # nothing listens for it
        assert gateway.server.get_tool("extra") is None
    finally:
        gateway.close()


def test_the_official_client_hears_of_a_backends_new_tool_through_the_gateway(tmp_path: Path) -> None:
    """mcp 2.3.0 in legacy mode over stdio: the gateway's own list_changed reaches it."""
    import asyncio
    import json
    import os

    from mcp import Client, types
    from mcp.client.stdio import StdioServerParameters

    script = tmp_path / "backend.py"
    script.write_text(OUR_BACKEND)
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"grow": {"command": sys.executable, "args": [str(script)],
                                                          "env": {"PYTHONPATH": str(ROOT)}}}}))
    params = StdioServerParameters(command=sys.executable, args=gateway_args(config),
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    heard = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    async def scenario() -> list[str]:
        async with Client(params, mode="legacy", message_handler=on_message) as client:
            await client.call_tool("grow", {"name": "extra"})
            await asyncio.wait_for(heard.wait(), 10)
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    assert asyncio.run(asyncio.wait_for(scenario(), 60)) == ["extra", "grow", "shrink"]


LEGACY_HTTP_BACKEND = textwrap.dedent(
    """
    import sys
    import uvicorn
    from mcp.server.fastmcp import Context, FastMCP

    app = FastMCP("legacy-http-growing")

    @app.tool()
    async def grow(name: str, ctx: Context) -> str:
        app.add_tool(lambda: f"I am {name}", name=name, description=f"added at runtime: {name}")
        await ctx.session.send_tool_list_changed()  # no related request: it rides the GET stream
        return "grown"

    uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)


def test_a_legacy_http_backend_is_followed_through_its_get_stream(tmp_path: Path, legacy_python: str) -> None:
    import subprocess

    from tests.net import free_port, wait_listening

    port = free_port()
    script = tmp_path / "legacy_http.py"
    script.write_text(LEGACY_HTTP_BACKEND)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    proc = subprocess.Popen([legacy_python, str(script), str(port)], **quiet)  # type: ignore[call-overload]
    try:
        wait_listening(port, proc)
        config = {"mcpServers": {"grow": {"url": f"http://127.0.0.1:{port}/mcp", "allowLegacy": True}}}
        gateway = Gateway(parse_config(config), timeout=10.0)
        gateway.start()
        try:
            client = gateway.backends["grow"].client
            assert client.era == "legacy"
            assert client.channel.standalone_open.wait(10)  # the GET stream is open before the change happens
            assert call(gateway, "grow", {"name": "late"})["content"][0]["text"] == "grown"
            eventually(lambda: gateway.server.get_tool("late") is not None)
            assert call(gateway, "late", {})["content"][0]["text"] == "I am late"
        finally:
            gateway.close()
    finally:
        proc.terminate()
        proc.wait(10)
