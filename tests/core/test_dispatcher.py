"""core.dispatcher in-process: era fixing, envelopes, capability gating, MRTR state binding."""

from __future__ import annotations

from typing import Any

from mcp_agent_kit import Context, Server
from mcp_agent_kit.core.dispatcher import Connection
from mcp_agent_kit.core.state import StateError, seal, unseal
from tests.stdio_peer import legacy, modern


def tools_only() -> Server:
    server = Server("only-tools", "2.0", cache_ttl_ms=5000, cache_scope="public")

    @server.tool
    def hello(name: str) -> str:
        return f"hi {name}"

    @server.tool
    def confirm(ctx: Context) -> str:
        answer = ctx.elicit("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return str(answer["content"]["ok"])

    return server


def test_capabilities_follow_what_is_registered() -> None:
    server = tools_only()
    discover = server.handle(modern(1, "server/discover"))["result"]  # type: ignore[index]
    # extensions: every Server composes the tasks extension, in-process as over stdio and HTTP
    assert set(discover["capabilities"]) == {"tools", "logging", "extensions"}
    assert discover["ttlMs"] == 5000 and discover["cacheScope"] == "public"
    assert discover["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "only-tools", "version": "2.0"}
    for method in ("prompts/list", "resources/list", "completion/complete"):
        assert server.handle(modern(2, method))["error"]["code"] == -32601  # type: ignore[index]


def test_every_modern_result_has_result_type_and_server_info() -> None:
    server = tools_only()
    result: dict[str, Any] = server.handle(modern(1, "tools/call", name="hello", arguments={"name": "a"}))["result"]  # type: ignore[index]
    assert result["resultType"] == "complete" and "ttlMs" not in result
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "only-tools"


def test_era_is_fixed_by_the_first_request() -> None:
    server = tools_only()
    conn = Connection()
    assert server.handle(legacy(1, "tools/list"), conn)["result"]["tools"]  # type: ignore[index]
    assert conn.era == "legacy"
    assert server.handle(modern(2, "tools/list"), conn)["error"]["code"] == -32600  # type: ignore[index]
    conn2 = Connection()
    server.handle(modern(1, "tools/list"), conn2)
    assert conn2.era == "modern"
    reply = server.handle(legacy(2, "initialize", protocolVersion="2025-11-25", capabilities={}), conn2)
    assert reply["error"]["data"]["requested"] == "2025-11-25"  # type: ignore[index]


def test_request_state_is_bound_to_the_request() -> None:
    server = tools_only()
    caps = {"elicitation": {}}
    first = server.handle(modern(1, "tools/call", caps, name="confirm", arguments={}))["result"]  # type: ignore[index]
    state = first["requestState"]
    answer = {"elicitation_1": {"action": "accept", "content": {"ok": True}}}
    again = server.handle(
        modern(2, "tools/call", caps, name="confirm", arguments={}, inputResponses=answer, requestState=state)
    )
    assert again["result"]["content"][0]["text"] == "True"  # type: ignore[index]
    other_tool = server.handle(
        modern(3, "tools/call", caps, name="hello", arguments={"name": "x"}, inputResponses=answer, requestState=state)
    )
    assert other_tool["error"]["code"] == -32602  # type: ignore[index]
    missing = server.handle(modern(4, "tools/call", caps, name="confirm", arguments={}, requestState=state))
    assert missing["result"]["resultType"] == "input_required"  # type: ignore[index]


def test_state_tokens_expire_and_resist_tampering() -> None:
    token = seal(b"k", {"m": "x"}, ttl_s=10, now=1000)
    assert unseal(b"k", token, {"m": "x"}, now=1005)["m"] == "x"
    for bad in [
        lambda: unseal(b"k", token, {"m": "x"}, now=1011),
        lambda: unseal(b"other", token, {"m": "x"}, now=1005),
        lambda: unseal(b"k", token, {"m": "y"}, now=1005),
        lambda: unseal(b"k", token + "x", {}, now=1005),
    ]:
        try:
            bad()
        except StateError:
            continue
        raise AssertionError("accepted a bad token")
