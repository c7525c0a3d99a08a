"""The gateway over stdio, seen by the official mcp 2.3.0 client: three real backends (the
official SDK's v2 and v1 lines, and our metrics example) with a shared tool name."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from mcp_agent_kit.gateway import ConfigError, Gateway, parse_config
from tests.net import gateway_args

PY = sys.executable
METRICS = Path(__file__).resolve().parents[2] / "examples" / "metrics_server.py"

BACKEND = textwrap.dedent(
    """
    import sys
    try:
        from mcp.server.mcpserver import MCPServer as App
    except ImportError:
        from mcp.server.fastmcp import FastMCP as App

    name = sys.argv[1]
    app = App(name)

    @app.tool()
    def add(a: int, b: int) -> str:
        return f"{name}:{a + b}"

    def only(text: str) -> str:
        return f"{name} says {text}"

    app.add_tool(only, name=f"only_{name}")

    if __name__ == "__main__":
        app.run()
    """
)


@pytest.fixture
def config(tmp_path: Path, legacy_python: str) -> Path:
    script = tmp_path / "backend.py"
    script.write_text(BACKEND)
    data = {
        "mcpServers": {
            "alpha": {"command": PY, "args": [str(script), "alpha"]},
            "beta": {"command": legacy_python, "args": [str(script), "beta"]},
            "metrics": {"command": PY, "args": [str(METRICS)]},
            "dead": {"command": PY, "args": ["-c", "import sys; sys.exit(1)"]},
        }
    }
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(data))
    return path


def test_official_client_sees_merged_tools_and_calls_reach_the_right_backend(config: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def scenario() -> dict[str, object]:
        params = StdioServerParameters(command=PY, args=gateway_args(config))
        async with Client(params, mode="auto") as client:
            tools = await client.list_tools()
            out: dict[str, object] = {"names": sorted(t.name for t in tools.tools), "version": client.protocol_version}
            for name, args in [
                ("alpha.add", {"a": 1, "b": 2}),
                ("beta.add", {"a": 3, "b": 4}),
                ("only_alpha", {"text": "hi"}),
                ("only_beta", {"text": "yo"}),
            ]:
                result = await client.call_tool(name, args)
                out[name] = result.content[0].text  # type: ignore[union-attr]
            metrics = await client.call_tool("calculate_metrics", {"values": [1, 2], "metric_type": "sum"})
            out["metrics"] = metrics.structured_content
            prompts = await client.list_prompts()
            out["prompts"] = [p.name for p in prompts.prompts]
            resources = await client.list_resources()
            out["resources"] = [str(r.uri) for r in resources.resources]
            return out

    out = anyio.run(scenario)
    assert out["version"] == "2026-07-28"
    assert out["names"] == ["alpha.add", "beta.add", "calculate_metrics", "only_alpha", "only_beta"]
    assert out["alpha.add"] == "alpha:3"
    assert out["beta.add"] == "beta:7"
    assert out["only_alpha"] == "alpha says hi"
    assert out["only_beta"] == "beta says yo"
    assert out["metrics"] == {"metric": "sum", "value": 3, "count": 2}
    assert out["prompts"] == ["summarize_numbers"]
    assert out["resources"] == ["metrics://catalog"]


def test_a_backend_that_dies_later_gives_an_is_error_result_naming_it(config: Path) -> None:
    # bounded but tolerant: a backend's start and server/discover can take seconds on a loaded machine (the
    # "dead" backend exits at once, so it fails fast whatever the bound)
    gateway = Gateway(parse_config(json.loads(config.read_text())), timeout=30.0)
    try:
        gateway.start()
        assert gateway.backends["dead"].error is not None
        beta = gateway.backends["beta"]
        beta.client.channel.close()  # the backend process goes away
        reply = gateway.server.handle(_call("beta.add", {"a": 1, "b": 1}))
        assert reply is not None
        result = reply["result"]
        assert result["isError"] is True
        assert "'beta'" in result["content"][0]["text"]
        ok = gateway.server.handle(_call("alpha.add", {"a": 1, "b": 1}))
        assert ok is not None and ok["result"]["content"][0]["text"] == "alpha:2"
        again = gateway.server.handle(_call("beta.add", {"a": 2, "b": 2}))  # reconnected on next use
        assert again is not None and again["result"]["content"][0]["text"] == "beta:4"
    finally:
        gateway.close()


def _call(name: str, arguments: dict[str, object]) -> dict[str, object]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"_meta": meta, "name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


@pytest.mark.parametrize(
    "data",
    [{}, {"mcpServers": {}}, {"mcpServers": {"a": {}}}, {"mcpServers": {"a": {"command": "x", "args": "y"}}}],
)
def test_bad_configs_are_clear_errors(data: object) -> None:
    with pytest.raises(ConfigError):
        parse_config(data)


PRINTING_BACKEND = textwrap.dedent(
    '''
    print("warming up the cache...")  # a print at import, on stdout: the official SDK tolerates it
    from mcp_agent_kit import Server

    server = Server("printer")

    @server.tool
    def shout(text: str) -> str:
        """Repeat text in capitals."""
        return text.upper()

    server.run()
    '''
)


def test_the_gateway_says_the_kits_version_and_serves_a_backend_that_prints(tmp_path: Path) -> None:
    from mcp_agent_kit import __version__
    from tests.stdio_peer import MODERN_META

    script = tmp_path / "printer.py"
    script.write_text(PRINTING_BACKEND)
    gateway = Gateway(parse_config({"mcpServers": {"printer": {"command": PY, "args": [str(script)]}}}))
    try:
        gateway.start(follow=False)
        found = gateway.server.handle({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                       "params": {"_meta": MODERN_META}})
        assert found is not None
        assert found["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"] == __version__ != "0.1.0"
        listed = gateway.server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                        "params": {"_meta": MODERN_META}})
        assert listed is not None and [tool["name"] for tool in listed["result"]["tools"]] == ["shout"]
    finally:
        gateway.close()
    told = Gateway({}, version="2.5.0")  # unless told otherwise
    assert told.server.version == "2.5.0"
    told.close()
