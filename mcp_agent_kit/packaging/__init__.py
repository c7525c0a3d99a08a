"""packaging: Agent Skills (SKILL.md) and Agent Plugins 1.0.0 readers, writers and validators.

Rules: standard library only; never imports servers, transports or the CLI front door. Tools
arrive as plain MCP ``Tool`` dicts, so nothing here depends on the server registry.
"""
