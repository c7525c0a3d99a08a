"""Interop: the official MCP Python SDK (mcp==2.3.0) client over HTTP, modes auto and legacy."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.pinned import require

mcp = require("mcp", "mcp==2.3.0 (the interop peer)")  # missing: the module fails to load, loudly

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "metrics_server.py"


def _metrics_server() -> Any:
    spec = importlib.util.spec_from_file_location("_metrics_example_http", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


async def _session(url: str, mode: str) -> tuple[str, list[str], Any, Any, Any]:
    from mcp import Client

    async with Client(url, mode=mode) as client:
        tools = await client.list_tools()
        result = await client.call_tool("calculate_metrics", {"values": [1, 2, 3, 6], "metric_type": "mean"})
        resource = await client.read_resource("metrics://catalog")
        prompt = await client.get_prompt("summarize_numbers", {"numbers": "1,2"})
        return str(client.protocol_version), [t.name for t in tools.tools], result, resource, prompt


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_sdk_client_over_http(serve: Any, mode: str, version: str) -> None:
    running = serve(_metrics_server().dispatcher)
    negotiated, names, result, resource, prompt = asyncio.run(_session(running.url, mode))
    assert negotiated == version
    assert names == ["calculate_metrics"]
    assert result.structured_content == {"metric": "mean", "value": 3.0, "count": 4}
    assert not result.is_error
    assert '"metrics"' in resource.contents[0].text
    assert "1,2" in prompt.messages[0].content.text
