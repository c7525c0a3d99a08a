"""testing: an in-memory client for a Server, for users' tests — no transport, no `_meta` by hand.

`server.test_client(era)` answers through `server.handle` (the real dispatcher) on one
Connection: for 2026-07-28 every request carries the `_meta` envelope; for a handshake-era
version the client performs initialize / notifications/initialized first. Questions a tool asks
(elicitation, sampling, roots) are answered from `answers=` (a list, in the order asked) or an
`on_input(method, params)` callback: in the modern era by retrying the input_required round, in
the handshake era as replies to the server's requests. Rules: only public protocol messages;
JSON-RPC errors raise RpcError; results are returned as the server sent them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from mcp_agent_kit.core.call import Outbox
from mcp_agent_kit.core.dispatcher import Connection
from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.jsonrpc import RpcError


class Served(Protocol):
    """What a TestClient uses of a Server (mcp_agent_kit.server.Server is one; this module sits below it)."""

    def handle(
        self, message: dict[str, Any], conn: Connection | None = None, out: Outbox | None = None
    ) -> dict[str, Any] | None: ...

    def running(self) -> AbstractContextManager[Any]: ...


OnInput = Callable[[str, dict[str, Any]], dict[str, Any]]
Answers = list[dict[str, Any]] | OnInput
ALL_CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
MAX_ROUNDS = 32


def accept(content: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ElicitResult accepting with this content."""
    return {"action": "accept", "content": content or {}}


def decline() -> dict[str, Any]:
    return {"action": "decline"}


def cancel() -> dict[str, Any]:
    return {"action": "cancel"}


class _Outbox:
    """The handshake era's server→client channel: notifications are kept, requests answered."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def notify(self, message: dict[str, Any]) -> None:
        self.client.notifications.append(message)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.client._answer(method, params)


class TestClient:
    """Speak MCP to a Server in-process. Build it with `server.test_client(era)`."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        server: Served,
        era: str = mcp.MODERN_VERSIONS[0],
        *,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        on_input: OnInput | None = None,
        log_level: str | None = None,
    ) -> None:
        if era not in mcp.MODERN_VERSIONS and era not in mcp.LEGACY_VERSIONS:
            known = ", ".join((*mcp.MODERN_VERSIONS, *mcp.LEGACY_VERSIONS))
            raise ValueError(f"unknown protocol version {era!r}: use one of {known}")
        self.server = server
        self.era = era
        self.modern = era in mcp.MODERN_VERSIONS
        self.capabilities = dict(ALL_CAPABILITIES if capabilities is None else capabilities)
        self.client_info = client_info or {"name": "mcp-agent-kit-test-client", "version": "1.0.0"}
        self.on_input = on_input
        self.log_level = log_level
        self.notifications: list[dict[str, Any]] = []
        self.conn = Connection()
        self._ids = itertools.count(1)
        self._pending: Iterator[dict[str, Any]] | None = None
        self._callback: OnInput | None = None
        self._outbox = _Outbox(self)
        self._running: Any = None
        if not self.modern:
            self.initialize_result = self._send("initialize", {
                "protocolVersion": era, "capabilities": self.capabilities, "clientInfo": self.client_info,
            })
            self.server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.conn)
            if log_level is not None:
                self._send("logging/setLevel", {"level": log_level})

    # ---- lifespan ------------------------------------------------------------------------------
    def __enter__(self) -> TestClient:
        """`with server.test_client() as client:` runs the server's lifespan around the block."""
        self._running = self.server.running()
        self._running.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        running, self._running = self._running, None
        if running is not None:
            running.__exit__(*exc)

    # ---- requests --------------------------------------------------------------------------------
    def request(self, method: str, params: dict[str, Any] | None = None, *, answers: Answers | None = None) -> Any:
        """Send one request (with the era's envelope) and return its result; RpcError on an error.

        A modern input_required result is answered from `answers` (or the client's on_input)
        and the request retried until it completes."""
        self._pending, self._callback = (None, answers) if callable(answers) else (iter(answers or ()), None)
        try:
            params = dict(params or {})
            result = self._send(method, params)
            for _ in range(MAX_ROUNDS):
                if not (isinstance(result, dict) and result.get("resultType") == "input_required"):
                    return result
                retry = {key: value for key, value in params.items() if key not in ("inputResponses", "requestState")}
                requests = result.get("inputRequests") or {}
                retry["inputResponses"] = {
                    key: self._answer(str(req.get("method")), dict(req.get("params") or {}))
                    for key, req in requests.items()
                }
                if "requestState" in result:
                    retry["requestState"] = result["requestState"]
                result = self._send(method, retry)
            raise RuntimeError(f"{method}: still input_required after {MAX_ROUNDS} rounds")
        finally:
            self._pending = self._callback = None

    def list_tools(self) -> list[dict[str, Any]]:
        return self._all("tools/list", "tools")

    def list_resources(self) -> list[dict[str, Any]]:
        return self._all("resources/list", "resources")

    def list_resource_templates(self) -> list[dict[str, Any]]:
        return self._all("resources/templates/list", "resourceTemplates")

    def list_prompts(self) -> list[dict[str, Any]]:
        return self._all("prompts/list", "prompts")

    def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, answers: Answers | None = None
    ) -> dict[str, Any]:
        """The CallToolResult (a failing tool is `isError: true`, not an exception)."""
        result: dict[str, Any] = self.request("tools/call", {"name": name, "arguments": arguments or {}},
                                              answers=answers)
        return result

    def read_resource(self, uri: str, *, answers: Answers | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.request("resources/read", {"uri": uri}, answers=answers)
        return result

    def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, answers: Answers | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.request("prompts/get", {"name": name, "arguments": arguments or {}},
                                              answers=answers)
        return result

    # ---- plumbing ----------------------------------------------------------------------------------
    def _all(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        while True:
            page = self.request(method, params)
            items.extend(page[key])
            if not page.get("nextCursor"):
                return items
            params = {"cursor": page["nextCursor"]}

    def _send(self, method: str, params: dict[str, Any]) -> Any:
        if self.modern:
            meta = dict(params.get("_meta") or {})
            meta.update({
                mcp.META_PROTOCOL_VERSION: self.era,
                mcp.META_CLIENT_CAPABILITIES: self.capabilities,
                mcp.META_CLIENT_INFO: self.client_info,
            })
            if self.log_level is not None:
                meta[mcp.META_LOG_LEVEL] = self.log_level
            params = {**params, "_meta": meta}
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        reply = self.server.handle(message, self.conn, out=self._outbox)
        if reply is None:
            raise RuntimeError(f"{method}: the server sent no reply")
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error.get("code", 0), error.get("message", ""), error.get("data"))
        return reply["result"]

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to one question the server asked: the next of `answers`, else on_input."""
        if self._pending is not None:
            answer = next(self._pending, None)
            if answer is not None:
                return answer
        callback = self._callback or self.on_input
        if callback is None:
            raise AssertionError(f"the server asked {method} ({params.get('message', '')!r}) and no answer was given")
        return callback(method, params)
