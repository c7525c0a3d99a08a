"""acp.client.asking: how AcpAgent answers the agent's `session/request_permission` (a mixin of AcpAgent).

The question is parsed into a PermissionRequest (the tool call merged with what the session saw of it) and put
to the agent's policy: a LaterPolicy is asked without holding a thread (a Deferred answers when it replies);
an `inline` policy on the request's own handler thread; any other on a helper thread that this one stops
waiting for when the turn is cancelled or the permission timeout passes. A cancelled turn, a failing policy or
an answer that is not one of the offered options is answered `cancelled`; every decision is recorded in the
session. Rules: no I/O; imports the acp.client modules it names and acp.connection's Deferred.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.permissions import (
    AnyPolicy,
    LaterPolicy,
    PermissionOption,
    PermissionRequest,
    Policy,
    parse_options,
    selected,
)
from mcp_agent_kit.acp.client.session import Session
from mcp_agent_kit.acp.connection import Deferred
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError


class PermissionAsking:
    """The permission side of AcpAgent (it provides `policy`, `timeouts`, `_log` and `_session_of`)."""

    policy: AnyPolicy
    timeouts: Any  # acp.client.client.Timeouts (`permission`: how long a question may stay open)
    _log: Callable[[str], None]

    def _session_of(self, params: Any) -> Session:
        raise NotImplementedError

    def _permission(self, params: Any) -> dict[str, Any] | Deferred:
        """The agent's question: a LaterPolicy is asked without holding this thread (the answer is written when it
        replies, on its thread); any other is asked here (see _decide)."""
        session = self._session_of(params)
        tool = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
        tool_id = tool.get("toolCallId") if isinstance(tool.get("toolCallId"), str) else None
        merged = {**session.tool_calls.get(tool_id or "", {}), **tool}
        request = PermissionRequest(session.id, tool_id, merged.get("title"), merged.get("kind"), merged,
                                    parse_options(params.get("options")), params)
        policy = self.policy
        if not isinstance(policy, LaterPolicy):
            return self._decided(session, request, self._decide(session, request, policy))
        deferred, once = Deferred(), threading.Lock()

        def reply(option: PermissionOption | None) -> None:
            if not once.acquire(blocking=False):
                return  # answered already
            cancelling = session.cancelling
            if (cancelling is not None and cancelling.is_set()) or option not in request.options:
                option = None
            try:
                deferred.resolve(self._decided(session, request, option))
            except Exception as exc:
                self._log(f"agent: handler for {wire.REQUEST_PERMISSION} failed: {type(exc).__name__}: {exc}")
                deferred.reject(RpcError(wire.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))

        cancelling = session.cancelling
        if cancelling is not None and cancelling.is_set():
            reply(None)
            return deferred
        try:
            policy.decide_later(request, reply)
        except Exception as exc:
            self._log(f"the permission policy failed ({type(exc).__name__}: {exc}); answering cancelled")
            reply(None)
        return deferred

    @staticmethod
    def _decided(session: Session, request: PermissionRequest, option: PermissionOption | None) -> dict[str, Any]:
        """Record the decision in the session; the `session/request_permission` result that says it."""
        outcome = wire.OUTCOME_SELECTED if option else wire.OUTCOME_CANCELLED
        session.deliver(ev.PermissionDecision(session.id, "permission", request.raw, request.tool_call_id, outcome,
                                              option.option_id if option else None, option.kind if option else None))
        return selected(option)

    def _decide(self, session: Session, request: PermissionRequest, policy: Policy) -> PermissionOption | None:
        """The blocking policy's answer, or None (cancelled) once the turn is cancelled or the question times out.

        An `inline` policy (one that answers at once, or waits on its own bounded signal that a cancel of the
        turn wakes: the built-in ones) is asked on this request's own handler thread. Any other
        may block for good (a terminal prompt): it runs on a helper thread this one stops waiting for when
        the turn is cancelled or the permission timeout passes; either wakes the wait, nothing polls."""
        cancelling = session.cancelling
        if cancelling is not None and cancelling.is_set():
            return None
        if getattr(policy, "inline", False):
            option = self._ask(request, policy)
            cancelling = session.cancelling
            return None if cancelling is not None and cancelling.is_set() else option
        answer: list[PermissionOption | None] = []
        done = threading.Event()
        remove = session.on_cancel(done.set)

        def ask() -> None:
            try:
                answer.append(self._ask(request, policy))
            finally:
                done.set()

        try:
            threading.Thread(target=ask, name="acp-permission", daemon=True).start()
            done.wait(self.timeouts.permission)
        finally:
            remove()
        cancelling = session.cancelling
        if cancelling is not None and cancelling.is_set():
            return None
        return answer[0] if answer else None

    def _ask(self, request: PermissionRequest, policy: Policy) -> PermissionOption | None:
        """The policy's choice if it is one of the request's options (None: cancelled; a failing policy too)."""
        try:
            option = policy.decide(request)
        except Exception as exc:
            self._log(f"the permission policy failed ({type(exc).__name__}: {exc}); answering cancelled")
            return None
        return option if option in request.options else None
