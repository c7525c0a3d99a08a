"""One name per thing: every class defined in mcp_agent_kit has its own name, and the standard JSON-RPC
messages are typed once, in wire/ (everyone else uses RpcError's constructors or the A2A code table)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.sources import parse

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_agent_kit"

# Still defined twice or more, each entry to be renamed away (issue #25). The list only shrinks: a new
# duplicate fails, and so does an entry that is no longer a duplicate (remove it then).
KNOWN_DUPLICATES = frozenset({
    "AcpAgent", "Agent", "AgentInfo", "Cancelled", "Channel", "ConfigError", "Connection", "Handler", "Policy",
    "Reply", "Reporter", "Request", "Server", "Terminal", "Timeouts", "ToolCall", "Unavailable",
})


def modules() -> list[tuple[str, ast.Module]]:
    return [(str(path.relative_to(PACKAGE.parent)), parse(path.read_text("utf-8")))
            for path in sorted(PACKAGE.rglob("*.py"))]


def test_every_class_name_is_defined_once() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for name, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{name}:{node.lineno}")
    doubled = {name: places for name, places in where.items() if len(places) > 1}
    new = {name: places for name, places in doubled.items() if name not in KNOWN_DUPLICATES}
    assert not new, f"class names defined more than once (rename one): {new}"
    gone = sorted(KNOWN_DUPLICATES - doubled.keys())
    assert not gone, f"no longer duplicated, remove from KNOWN_DUPLICATES: {gone}"


def test_the_one_error_classes_are_defined_once() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for name, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in ("RpcError", "A2AError", "StoreError", "MemoryStore",
                                                                 "Session", "AgentSessions", "SqliteStore"):
                where[node.name].append(name)
    assert where == {"RpcError": ["mcp_agent_kit/wire/jsonrpc.py"], "A2AError": ["mcp_agent_kit/a2a/protocol.py"],
                     "StoreError": ["mcp_agent_kit/store/base.py"], "MemoryStore": ["mcp_agent_kit/store/memory.py"],
                     "Session": ["mcp_agent_kit/acp/client/session.py"],
                     "AgentSessions": ["mcp_agent_kit/gateway/agent_store.py"],
                     "SqliteStore": ["mcp_agent_kit/store/sqlite.py"]}


def test_no_module_outside_wire_types_the_standard_error_messages() -> None:
    typed = []
    for name, tree in modules():
        if name.startswith("mcp_agent_kit/wire/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(
                    ("Invalid params", "Method not found: ", "Internal error: ")):
                typed.append(f"{name}:{node.lineno}: {node.value[:60]!r}")
    assert not typed, "use RpcError.invalid_params(...) etc. (or A2AError(name, detail=...)):\n" + "\n".join(typed)


def test_the_documented_old_names_still_import() -> None:
    from mcp_agent_kit.a2a.store import MemoryStore, MemoryTaskStore
    from mcp_agent_kit.acp.agent import AgentSession, MemorySessionStore, Session
    from mcp_agent_kit.acp.agent import MemoryStore as AgentMemoryStore
    from mcp_agent_kit.client.oauth import MemoryStore as TokenMemoryStore
    from mcp_agent_kit.client.oauth import MemoryTokenStore

    assert (MemoryStore, Session, AgentMemoryStore, TokenMemoryStore) == (
        MemoryTaskStore, AgentSession, MemorySessionStore, MemoryTokenStore)


def test_rpc_error_constructors_read_as_the_wire_did() -> None:
    from mcp_agent_kit.wire.jsonrpc import RpcError

    error = RpcError.invalid_params("unknown tool 'x'", {"tool": "x"})
    assert (error.code, error.message, str(error)) == (-32602, "Invalid params: unknown tool 'x'",
                                                       "Invalid params: unknown tool 'x'")
    assert error.to_error() == {"code": -32602, "message": "Invalid params: unknown tool 'x'", "data": {"tool": "x"}}
    assert RpcError.internal_error().to_error() == {"code": -32603, "message": "Internal error"}
    assert RpcError.method_not_found("x").message == "Method not found: x"
    peer = RpcError.described(-32603, "Internal error", {"details": "Connection error."}, name="internal error")
    assert str(peer) == 'Internal error (internal error, code -32603): {"details": "Connection error."}'
    assert peer.to_error() == {"code": -32603, "message": "Internal error", "data": {"details": "Connection error."}}
