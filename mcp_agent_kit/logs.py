"""logs: the kit's loggers, loaded on first use so a server starts without importing logging.

`logger(name)` returns a `logging.Logger`; `log_to_stderr()` asks for a stderr handler to be
installed (once, when nothing else configured logging) at the first message. Rules: no
protocol knowledge; stdout is never used.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

_wanted_stderr = False


def log_to_stderr() -> None:
    """Route log records to stderr (level from MCP_LOG_LEVEL, default WARNING) from the first message on."""
    global _wanted_stderr
    _wanted_stderr = True
    if "logging" in sys.modules:
        _configure()


def _configure() -> None:
    import logging

    if not logging.getLogger().handlers:
        level = os.environ.get("MCP_LOG_LEVEL", "WARNING").upper()
        logging.basicConfig(stream=sys.stderr, level=level, format="%(levelname)s %(name)s: %(message)s")


def logger(name: str = "mcp_agent_kit") -> logging.Logger:
    import logging

    if _wanted_stderr:
        _configure()
    return logging.getLogger(name)
