"""turns: one turn engine for every surface — a turn is a stream of events, running ⇄ paused(question) → ended.

engine drives one ACP `session/prompt` (TurnEngine, EngineTurn): the gateway's agents-as-tools (gateway.acp_backend)
and `a2a --acp` (a2a.acp_bridge) are thin adapters over it;
clock is the one timer thread every turn's deadline and cancel grace share. Rules: may import `acp`, `wire`
and `logs` only; knows no surface (MCP, A2A), no store (tests/test_layers.py checks it).
"""
