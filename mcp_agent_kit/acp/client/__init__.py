"""acp.client: the client side of ACP — spawn an agent over stdio, drive its sessions, answer its requests.

The modules: client (AcpAgent: spawn, initialize, authenticate, sessions), session (prompt turns and
their TurnResult), events (typed `session/update` events), permissions (who answers
`session/request_permission`), files and terminals (the client's `fs/*` and `terminal/*` methods,
confined), errors (what a use of an agent can raise), known (the coding agents the kit knows, and which
are installed), and the front doors cli (`mcp-agent-kit acp probe|prompt|chat`) and known_cli
(`mcp-agent-kit agents`). The public names load lazily from the parent package (`from mcp_agent_kit.acp
import AcpAgent`); this package imports nothing, so `mcp-agent-kit agents` stays light. Rules: the client
side of ACP; imports `wire`, `safefile`, `process`, `logs`, `cli_common` and acp.connection, never
acp.agent (tests/test_layers.py checks it).
"""
