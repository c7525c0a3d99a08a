"""service: what the A2A bindings (jsonrpc, rest) and the HTTP server (http.A2AServer) call — one Protocol.

`A2AService` is the method table of an A2A agent: the card's facts (`agent`), the task operations and the
push-notification-config operations. a2a.engine.TaskEngine satisfies it (tasks in its own TaskStore, push
refused); board.a2a_face.BoardFace satisfies it too (board tasks as A2A tasks, one store: the board's).
Operations take the caller's principal (`owner`) and the request message's params (ProtoJSON dicts) and
return response messages (dicts) or, for streams, iterators of StreamResponse dicts (KEEPALIVE between);
they raise A2AError. Rules: a declaration only; no code runs here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from mcp_agent_kit.a2a.job import Agent

# the push-config operations, by their JSON-RPC method names (rest routes map onto the same names)
PUSH_METHODS = ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
                "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig")


class A2AService(Protocol):
    """An A2A agent's operations, as the bindings call them."""

    agent: Agent

    def send(self, owner: str, params: dict[str, Any], stream: bool = False
             ) -> dict[str, Any] | Iterator[dict[str, Any]]: ...
    def get(self, owner: str, params: dict[str, Any]) -> dict[str, Any]: ...
    def list_tasks(self, owner: str, params: dict[str, Any]) -> dict[str, Any]: ...
    def cancel(self, owner: str, params: dict[str, Any]) -> dict[str, Any]: ...
    def subscribe(self, owner: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]: ...
    def push_config(self, method: str, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        """One of PUSH_METHODS; PushNotificationNotSupported when the agent has no push notifications."""
        ...
