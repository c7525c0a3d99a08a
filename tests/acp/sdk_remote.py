"""The official ACP Python SDK's network server (agent-client-protocol 0.12.1, `acp.http.asgi.create_asgi_app`:
both profiles at any path) under uvicorn in a thread, serving the scripted SDK agent of agents/sdk_agent.py,
one per connection: the peer we did not write that tests/acp/test_remote*.py drive the kit's client against.

`sdk_server()` yields its base URL `http://127.0.0.1:PORT`; `remote_urls(base)` gives the endpoint in both
profiles. A `Set-Cookie: affinity=...` on every answer lets the tests see the client keep and return cookies:
`CookieCheck.seen` records the Cookie header of every request (WebSocket handshakes included). With a
`token`, a request without `Authorization: Bearer <token>` gets 401 (a WebSocket handshake: 403, uvicorn's answer
to a refused upgrade).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.net import free_port, until

AGENT_FILE = Path(__file__).parent / "agents" / "sdk_agent.py"


def scripted_agent_class() -> Any:
    spec = importlib.util.spec_from_file_location("sdk_scripted_agent", AGENT_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ScriptedAgent


class CookieCheck:
    """ASGI middleware: sets a cookie on the first answer, records the Cookie header each request carried."""

    def __init__(self, app: Any, token: str | None = None) -> None:
        self.app, self.token = app, token
        self.seen: list[tuple[str, str, str]] = []  # (scope type, method, Cookie header)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        cookie = dict(scope["headers"]).get(b"cookie", b"").decode()
        self.seen.append((scope["type"], scope.get("method", "GET"), cookie))
        if self.token is not None and dict(scope["headers"]).get(b"authorization") != f"Bearer {self.token}".encode():
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"set-cookie", b"affinity=node-1; Path=/; HttpOnly")]}
            await send(message)

        await self.app(scope, receive, sending)


@contextmanager
def sdk_server(token: str | None = None) -> Iterator[tuple[str, CookieCheck]]:
    """(base URL, the cookie recorder) of a running SDK server; stopped on exit."""
    import uvicorn
    from acp.http.asgi import create_asgi_app

    agent_class = scripted_agent_class()
    app = CookieCheck(create_asgi_app(lambda conn: agent_class()), token)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
                                           ws="websockets-sansio"))
    thread = threading.Thread(target=server.run, name="sdk-acp-server", daemon=True)
    thread.start()
    until(lambda: server.started or not thread.is_alive(), "the SDK server to start")
    assert server.started, "the SDK server did not start"
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(10)


def remote_urls(base: str) -> dict[str, str]:
    return {"ws": base.replace("http://", "ws://") + "/acp", "http": base + "/acp"}
