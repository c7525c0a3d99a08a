"""wire.implementation: the kit's own name and version, as it introduces itself to peers.

This is the one source of the version: `mcp_agent_kit.__version__` and the build metadata
(pyproject.toml) read it here, so that every layer (client/ sends it as clientInfo) can name it
without importing the package root. Rules: constants only; imports nothing.
"""

from __future__ import annotations

from typing import Final

NAME: Final = "mcp-agent-kit"
VERSION: Final = "1.0.0"
