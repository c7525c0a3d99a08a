"""inputs: answering a server's requests for input with the caller's callbacks, in both eras.

Modern servers ask inside results (InputRequiredResult.inputRequests, task input_required);
legacy servers send JSON-RPC requests (elicitation/create, sampling/createMessage, roots/list,
ping). Both are answered here through the same callbacks. Rules: no I/O; the capabilities we
declare are derived from which callbacks exist, so we never advertise what we cannot answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from mcp_agent_kit.wire import jsonrpc, mcp, skills
from mcp_agent_kit.wire.jsonrpc import RpcError

log = logging.getLogger("mcp_agent_kit.client")

Callback = Callable[[dict[str, Any]], dict[str, Any]]
"""Takes a request's params; returns the result (ElicitResult, CreateMessageResult, ListRootsResult)."""

# Input request method -> (callback name, capability declared when the callback exists).
INPUT_METHODS: Final[dict[str, tuple[str, str]]] = {
    "elicitation/create": ("elicitation", "elicitation"),
    "sampling/createMessage": ("sampling", "sampling"),
    "roots/list": ("roots", "roots"),
}


class ClientError(Exception):
    """The server broke the protocol, or the client cannot do what the server asks."""


class InputAnswerer:
    """The caller's callbacks, and the capabilities they let us declare."""

    def __init__(
        self,
        elicitation: Callback | None = None,
        sampling: Callback | None = None,
        roots: Callback | None = None,
        tasks: bool = False,
    ) -> None:
        self.callbacks: dict[str, Callback | None] = {
            "elicitation": elicitation,
            "sampling": sampling,
            "roots": roots,
        }
        self.tasks = tasks

    def capabilities(self, era: str) -> dict[str, Any]:
        caps: dict[str, Any] = {name: {} for name, fn in self.callbacks.items() if fn is not None}
        extensions: dict[str, Any] = {skills.EXTENSION: {}}  # the host side of SEP-2640 (client.skills)
        if self.tasks and era == "modern":
            extensions[mcp.TASKS_EXTENSION] = {}
        caps["extensions"] = extensions
        return caps

    def offerable(self) -> dict[str, Any]:
        return self.capabilities("modern")

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result for one input request; raises ClientError when we cannot answer it."""
        entry = INPUT_METHODS.get(method)
        if entry is None:
            raise ClientError(f"the server asked for unknown input {method!r}")
        callback = self.callbacks[entry[0]]
        if callback is None:
            raise ClientError(f"the server asked for {method} but no {entry[0]} callback was given")
        result = callback(params)
        if not isinstance(result, dict):
            raise ClientError(f"the {entry[0]} callback must return a dict, not {type(result).__name__}")
        return result

    def answer_all(self, requests: Any, skip: set[str] | None = None) -> dict[str, Any]:
        """inputResponses for an inputRequests map (keys in skip were answered before)."""
        if not isinstance(requests, dict):
            raise ClientError("inputRequests must be an object")
        responses: dict[str, Any] = {}
        for key, request in requests.items():
            if skip is not None and key in skip:
                continue
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                raise ClientError(f"input request {key!r} is malformed")
            params = request.get("params")
            responses[key] = self.answer(request["method"], params if isinstance(params, dict) else {})
        return responses

    def serve(self, message: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC reply to a legacy server→client request."""
        method = message.get("method")
        id_ = message["id"]
        if method == "ping":
            return jsonrpc.result_reply(id_, {})
        if method not in INPUT_METHODS or self.callbacks[INPUT_METHODS[method][0]] is None:
            return RpcError.method_not_found(method).reply(id_)
        params = message.get("params")
        try:
            return jsonrpc.result_reply(id_, self.answer(str(method), params if isinstance(params, dict) else {}))
        except RpcError as exc:
            return jsonrpc.error_reply(id_, exc.code, exc.message, exc.data)
        except Exception as exc:
            log.warning("input callback for %s failed: %s", method, exc)
            return jsonrpc.error_reply(id_, jsonrpc.INTERNAL_ERROR, f"client callback failed: {exc}")
