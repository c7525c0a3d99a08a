"""mrtr: multi round-trip requests — running a handler that may ask the client for input.

In the modern era a handler that needs answers ends the round with an InputRequiredResult
whose `requestState` is HMAC-sealed and bound to the method, target, arguments and principal;
the client's retry replays the handler with the answers so far (SEP-2322). In the legacy era the
same handler code asks through the transport's outbox instead. Rules: no transport, no
encoding; only tools/call, prompts/get and resources/read come here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.core.context import Context, InputRequired, LegacyBroker, ReplayBroker
from mcp_agent_kit.core.registry import Handler
from mcp_agent_kit.wire.jsonrpc import RpcError
from mcp_agent_kit.wire.mcp import LEGACY

if TYPE_CHECKING:
    from mcp_agent_kit.core.call import Call

STATE_TTL_S = 600.0


def no_input_round(call: Call) -> bool:
    """True when the request carries no answers from an earlier input_required round."""
    params = call.params
    return "requestState" not in params and "inputResponses" not in params


def run_with_input(
    call: Call, target: str, arguments: dict[str, Any], run: Callable[[Context | None], Any], handler: Handler
) -> Any:
    """Run a handler; in the modern era an InputRequired ends the round with a sealed state."""
    registry = call.registry
    if handler.context_arg is None and no_input_round(call):
        return run(None)  # fast path: a handler without a Context can never ask for input
    if call.era == LEGACY:
        broker = LegacyBroker(call.capabilities, call.out.request if call.out is not None else None)
        return run(call.context(broker))
    answers: dict[str, Any] = {}
    state: dict[str, Any] = {}
    token = call.params.get("requestState")
    responses = call.params.get("inputResponses")
    if responses is not None and not isinstance(responses, dict):
        raise RpcError.invalid_params('"inputResponses" must be an object')
    binding: dict[str, Any] = {}
    if token is not None:
        from mcp_agent_kit.core.state import StateError, unseal

        binding = binding_of(call, target, arguments)
        try:
            payload = unseal(registry.secret, token, binding)
        except StateError as exc:
            raise RpcError.invalid_params(f"{exc}") from exc
        answers.update(payload.get("r", {}))
        state = payload.get("s", {})
        asked = set(payload.get("q", ()))
        answers.update({key: value for key, value in (responses or {}).items() if key in asked})
    elif responses:
        answers.update(responses)
    context = call.context(ReplayBroker(call.capabilities, answers), state)
    try:
        return run(context)
    except InputRequired as need:
        from mcp_agent_kit.core.state import seal

        binding = binding or binding_of(call, target, arguments)
        sealed = {**binding, "r": answers, "q": sorted(need.requests), "s": context.state}
        return InputRequiredResult(
            {
                "resultType": "input_required",
                "inputRequests": need.requests,
                "requestState": seal(registry.secret, sealed, STATE_TTL_S),
            }
        )


def binding_of(call: Call, target: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from mcp_agent_kit.core.state import fingerprint

    return {"m": call.method, "t": target, "h": fingerprint(arguments), "p": call.conn.principal}


class InputRequiredResult(dict[str, Any]):
    """Marks a finished MRTR round so callers pass it through untouched."""
