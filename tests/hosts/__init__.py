"""Tests of `mcp-agent-kit agent-host` (mcp_agent_kit/hosts)."""
