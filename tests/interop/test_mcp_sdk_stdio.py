"""Interop: the official MCP Python SDK client (mcp==2.3.0) against our stdio servers."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_VERSION = {"auto": "2026-07-28", "2026-07-28": "2026-07-28", "legacy": "2025-11-25"}


def params(script: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[str(ROOT / script)], env={**os.environ, "PYTHONPATH": str(ROOT)}
    )


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.parametrize("mode", ["auto", "2026-07-28", "legacy"])
def test_metrics_example(mode: str) -> None:
    async def scenario() -> None:
        async with Client(params("examples/metrics_server.py"), mode=mode) as client:
            assert client.protocol_version == EXPECTED_VERSION[mode]
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["calculate_metrics"]
            assert tools.tools[0].annotations is not None and tools.tools[0].annotations.read_only_hint is True
            result = await client.call_tool("calculate_metrics", {"values": [1, 2, 3, 4], "metric_type": "sum"})
            assert result.is_error is False
            assert result.structured_content == {"metric": "sum", "value": 10, "count": 4}
            default = await client.call_tool("calculate_metrics", {"values": [2, 4]})
            assert default.structured_content == {"metric": "mean", "value": 3.0, "count": 2}
            bad = await client.call_tool("calculate_metrics", {"values": [1, "two"], "metric_type": "median"})
            assert bad.is_error is True
            text = bad.content[0].text  # type: ignore[union-attr]
            assert "values[1]" in text and "metric_type" in text
            resources = await client.list_resources()
            assert [str(r.uri) for r in resources.resources] == ["metrics://catalog"]
            read = await client.read_resource("metrics://catalog")
            assert '"mean"' in read.contents[0].text  # type: ignore[union-attr]
            prompts = await client.list_prompts()
            assert prompts.prompts[0].name == "summarize_numbers"
            prompt = await client.get_prompt("summarize_numbers", {"numbers": "1, 2, 3"})
            assert "1, 2, 3" in prompt.messages[0].content.text  # type: ignore[union-attr]
            completion = await client.complete(
                types.PromptReference(type="ref/prompt", name="summarize_numbers"),
                {"name": "metric_type", "value": "m"},
            )
            assert completion.completion.values == ["max", "mean", "min"]

    run(scenario())


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_same_tool_code_asks_for_input_in_both_eras(mode: str) -> None:
    asked: list[str] = []

    async def on_elicit(context: Any, request: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(request.message)
        key = "name" if request.message.startswith("What") else "v"
        return types.ElicitResult(action="accept", content={key: request.message[0]})

    async def scenario() -> None:
        async with Client(
            params("tests/fixtures/kitchen_server.py"), mode=mode, elicitation_callback=on_elicit
        ) as client:
            result = await client.call_tool("ask_name", {})
            assert result.content[0].text == "Hello, W!"  # type: ignore[union-attr]
            two = await client.call_tool("two_rounds", {})
            assert two.content[0].text == "F+S"  # type: ignore[union-attr]

    run(scenario())
    assert asked[0] == "What is your name?" and len(asked) == 3


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_errors_and_content_kinds(mode: str) -> None:
    async def scenario() -> None:
        async with Client(params("tests/fixtures/kitchen_server.py"), mode=mode) as client:
            failed = await client.call_tool("boom", {})
            assert failed.is_error is True and failed.content[0].text == "kaboom"  # type: ignore[union-attr]
            mixed = await client.call_tool("picture", {})
            assert [block.type for block in mixed.content] == ["text", "image"]
            names: list[str] = []
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                names += [tool.name for tool in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert names == sorted(names) and len(set(names)) == len(names) > 10
            # -> int: the inferred outputSchema wraps the value as {"result": 5} in both eras
            assert (await client.call_tool("async_add", {"a": 2, "b": 3})).structured_content == {"result": 5}
            noisy = await client.call_tool("noisy", {})
            assert noisy.content[0].text == "still fine"  # type: ignore[union-attr]

    run(scenario())
