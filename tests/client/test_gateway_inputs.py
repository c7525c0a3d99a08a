"""A backend that asks the user: the gateway relays the question to its own caller, in both of
the caller's eras (official mcp 2.3.0 client), and the answer reaches the backend."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_gateway_relays_a_backends_elicitation(tmp_path: Path, mode: str) -> None:
    config = tmp_path / "gateway.json"
    kitchen = {"command": sys.executable, "args": [str(ROOT / "tests/fixtures/kitchen_server.py")],
               "env": {"PYTHONPATH": str(ROOT)}}
    config.write_text(json.dumps({"mcpServers": {"kitchen": kitchen}}))
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_agent_kit", "gateway", str(config)],
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    asked: list[str] = []

    async def on_elicit(context: Any, request: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(request.message)
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async def scenario() -> None:
        async with Client(params, mode=mode, elicitation_callback=on_elicit) as client:
            result = await client.call_tool("ask_name", {})
            assert result.content[0].text == "Hello, Grace!"  # type: ignore[union-attr]

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert asked and asked[0] == "What is your name?"


def test_without_the_capability_the_backend_says_so(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    kitchen = {"command": sys.executable, "args": [str(ROOT / "tests/fixtures/kitchen_server.py")],
               "env": {"PYTHONPATH": str(ROOT)}}
    config.write_text(json.dumps({"mcpServers": {"kitchen": kitchen}}))
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_agent_kit", "gateway", str(config)],
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})

    async def scenario() -> None:
        async with Client(params, mode="auto") as client:
            result = await client.call_tool("ask_name", {})
            assert result.is_error is True and "kitchen" in result.content[0].text  # type: ignore[union-attr]

    asyncio.run(asyncio.wait_for(scenario(), 60))
