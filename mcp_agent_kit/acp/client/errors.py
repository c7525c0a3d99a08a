"""acp.client.errors: the exceptions the ACP client raises, one per way a use of an agent can fail.

Rules: plain exception classes; imports nothing.
"""

from __future__ import annotations


class AcpError(Exception):
    """An ACP operation failed; the message names the problem (and quotes the agent's stderr when it died).

    `code` is the agent's JSON-RPC error code when the agent answered with an error.
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class AgentCrashed(AcpError):
    """The agent process ended (or closed its output) while we needed it."""


class NotSupported(AcpError):
    """The agent did not advertise the capability an operation needs."""


class TurnTimeout(AcpError):
    """A turn ran past its deadline; it was cancelled (and the agent stopped when it ignored the cancel)."""
