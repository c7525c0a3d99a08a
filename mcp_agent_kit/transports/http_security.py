"""http_security: the old home of the Host/Origin/token gate, which now lives in `httpd.gate`.

Rules: re-exports only, so existing imports keep working.
"""

from mcp_agent_kit.httpd.gate import ANY, LOOPBACK_HOSTS, Policy

__all__ = ["ANY", "LOOPBACK_HOSTS", "Policy"]
