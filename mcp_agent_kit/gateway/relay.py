"""gateway.relay: pass a backend's questions (elicitation, sampling, roots) on to the gateway's caller.

One Relay serves one proxied tool call: it gives the backend's client an InputAnswerer that asks
through the caller's Context, so both eras work on both sides (see Relay). Rules: knows the
Context and the client's InputAnswerer, nothing of the backends or the merged namespace.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.client.inputs import ClientError, InputAnswerer
from mcp_agent_kit.core.context import Context, InputRequired

# method a backend asks with -> the client capability our caller must have declared for it
RELAYED = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


class Relay:
    """Answers a backend's questions during one proxied call by asking our own caller.

    A modern backend asks inside its result, on the proxy's own thread: the caller's answer or
    its InputRequired (modern caller, first round) flows through as is. A handshake-era backend
    asks with a request of its own, answered on a channel thread while the proxy waits; a
    legacy caller is asked right away (Context.forward blocks for its answer), but a modern
    caller answers only in a later round. Then the backend's question is declined (elicitation:
    "cancel"; others: an error), its call is abandoned when it ends, and the proxy raises the
    InputRequired after all; on the retry the same question finds its answer in the round's
    replay, exactly as a tool of our own is re-run under MRTR.
    """

    def __init__(self, context: Context) -> None:
        self.context = context
        self.thread = threading.current_thread()
        self.pending: InputRequired | None = None
        declared = context.client_capabilities or {}
        asker = {kind: self._asker(method) if kind in declared else None for method, kind in RELAYED.items()}
        self.answerer = InputAnswerer(asker["elicitation"], asker["sampling"], asker["roots"])

    def _asker(self, method: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def ask(params: dict[str, Any]) -> dict[str, Any]:
            try:
                return self.context.forward(method, params)
            except InputRequired as need:  # the caller answers in its next round
                if threading.current_thread() is self.thread:
                    raise  # a modern backend's question: the proxy unwinds with it
                self.pending = self.pending or need
                if method == "elicitation/create":
                    return {"action": "cancel"}
                raise ClientError("the question was passed on to the gateway's caller; ask again") from None

        return ask

    def raise_pending(self) -> None:
        if self.pending is not None:
            raise self.pending

