"""hosts: `mcp-agent-kit agent-host` — ACP agents of this machine served to remote clients over ACP's network
transport (WebSocket and Streamable HTTP at `/acp` and `/agents/<id>/acp`) and the seed's agentctl routes.

Modules: config (CONFIG and the AGENTCTL_* environment), link (one agent process and the relay of its lines),
usage (RSS and CPU seconds from /proc), outbox (one SSE stream's buffer), registry (live connections, bounded
per agent, reaped when idle), ws_acp and http_acp (the two profiles), agentctl (the seed's routes), replies
(HTTP answers), workspaces and workspace_routes (a worktree per task for a board: diff, bundle), confined (the
host's own fs and terminal answers on a workspace-bound connection), app (the gate and the routing), cli (the
command). Rules (DESIGN.md): hosts/ may import acp/, httpd/, process, sandbox, gitwork, the gateway's agents
config and the shared helpers; nothing imports it but the CLI (and the board, which will drive hosts).
"""
