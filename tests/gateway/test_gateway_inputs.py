"""A backend that asks the user: the gateway relays the question to its own caller, in both of
the caller's eras (official mcp 2.3.0 client), and the answer reaches the backend, for a modern
backend (our kitchen fixture) and a handshake-era one (official mcp 1.30.0)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters

from mcp_agent_kit.client import Client as KitClient
from mcp_agent_kit.client.inputs import InputAnswerer
from tests.net import gateway_args

ROOT = Path(__file__).resolve().parents[2]


def gateway(tmp_path: Path, servers: dict[str, Any]) -> StdioServerParameters:
    """Our gateway as a stdio server over these backends."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return StdioServerParameters(command=sys.executable, args=gateway_args(config),
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})


def kitchen() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(ROOT / "tests/fixtures/kitchen_server.py")],
            "env": {"PYTHONPATH": str(ROOT)}}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_gateway_relays_a_backends_elicitation(tmp_path: Path, mode: str) -> None:
    params = gateway(tmp_path, {"kitchen": kitchen()})
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
    params = gateway(tmp_path, {"kitchen": kitchen()})

    async def scenario() -> None:
        async with Client(params, mode="auto") as client:
            result = await client.call_tool("ask_name", {})
            assert result.is_error is True and "kitchen" in result.content[0].text  # type: ignore[union-attr]

    asyncio.run(asyncio.wait_for(scenario(), 60))


# ---- a handshake-era backend (official mcp 1.30.0) that asks mid-call ---------------------------
LEGACY_ASKER = textwrap.dedent(
    """
    from mcp.server.fastmcp import Context, FastMCP
    from pydantic import BaseModel

    app = FastMCP("asker")
    calls = []

    class Name(BaseModel):
        name: str

    @app.tool()
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", Name)
        calls.append(answer.action)
        if answer.action == "accept":
            return f"Hello, {answer.data.name}! (asked {len(calls)} times: {', '.join(calls)})"
        return f"no name: {answer.action}"

    if __name__ == "__main__":
        app.run()
    """
)


@pytest.fixture()
def legacy_asker(tmp_path: Path) -> Path:
    script = tmp_path / "legacy_asker.py"
    script.write_text(LEGACY_ASKER)
    return script


def test_client_routes_a_legacy_servers_question_to_the_calls_own_answerer(
    legacy_asker: Path, legacy_python: str
) -> None:
    def refuse(params: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("the call's own answerer should have been asked")

    per_call = InputAnswerer(elicitation=lambda params: {"action": "accept", "content": {"name": "Ada"}})
    with KitClient.stdio(legacy_python, [str(legacy_asker)], elicitation=refuse) as client:
        assert client.era == "legacy"
        result = client.call_tool("ask_name", {}, inputs=per_call)
    assert result["content"][0]["text"] == "Hello, Ada! (asked 1 times: accept)"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_gateway_relays_a_legacy_backends_mid_call_question(
    tmp_path: Path, legacy_asker: Path, legacy_python: str, mode: str
) -> None:
    """A legacy caller is asked while the backend waits; a modern caller answers in a second
    round, after which the backend's call is re-run and finds the answer (MRTR replay)."""
    params = gateway(tmp_path, {"asker": {"command": legacy_python, "args": [str(legacy_asker)], "allowLegacy": True}})
    asked: list[str] = []

    async def on_elicit(context: Any, request: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(request.message)
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async def scenario() -> str:
        async with Client(params, mode=mode, elicitation_callback=on_elicit) as client:
            result = await client.call_tool("ask_name", {})
            assert result.is_error is False, result
            return str(result.content[0].text)  # type: ignore[union-attr]

    text = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert asked == ["What is your name?"]
    # The backend runs once for a legacy caller, twice (declined, then answered) for a modern one.
    expected = "accept" if mode == "legacy" else "cancel, accept"
    assert text == f"Hello, Grace! (asked {len(expected.split(', '))} times: {expected})"


def test_gateway_without_a_caller_capability_leaves_the_legacy_backend_unanswered(
    tmp_path: Path, legacy_asker: Path, legacy_python: str
) -> None:
    params = gateway(tmp_path, {"asker": {"command": legacy_python, "args": [str(legacy_asker)], "allowLegacy": True}})

    async def scenario() -> Any:
        async with Client(params, mode="auto") as client:
            return await client.call_tool("ask_name", {})

    result = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert result.is_error is True, result  # the backend's elicitation failed; its tool reports it
