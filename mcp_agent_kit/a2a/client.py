"""a2a.client: a small A2A v1.0 JSON-RPC client on the standard library, next to the server it speaks to.

Fetches an agent card (from a base URL, `/.well-known/agent-card.json`, or the card URL itself),
finds its JSONRPC interface, and calls `SendMessage`, `SendStreamingMessage` (SSE, each event's
`result` handed to a callback as it arrives, the events read by wire/sse.py), `GetTask` and
`CancelTask`, sending `A2A-Version: 1.0`. The gateway's agents-as-tools (gateway/a2a_backend.py) use it.
Rules: wire only — no sessions, no MCP, no threads of its own; every read is bounded by the
client's timeout and every body or event by a size cap; failures are a2a.protocol's A2AError
(`A2AError.call_failed`) with a readable text.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.a2a.protocol import PROTOCOL_VERSION, A2AError
from mcp_agent_kit.wire.sse import iter_sse

CARD_PATH = "/.well-known/agent-card.json"
MAX_BODY = 16 * 1024 * 1024
MAX_EVENT = 4 * 1024 * 1024


def card_url(url: str) -> str:
    """The card URL for a configured `a2a` value (a card URL is kept, a base URL gets the well-known path)."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.path.endswith(".json"):
        return url
    return url.rstrip("/") + CARD_PATH


def jsonrpc_endpoint(card: dict[str, Any]) -> str:
    """The URL of the card's first JSONRPC interface (v1.0 `supportedInterfaces`, else v0.3 `url`)."""
    for interface in card.get("supportedInterfaces") or []:
        if isinstance(interface, dict) and interface.get("protocolBinding") == "JSONRPC":
            url = interface.get("url")
            if isinstance(url, str) and url.startswith(("http://", "https://")):
                return url
    url = card.get("url")
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return url
    raise A2AError.call_failed("the agent card names no JSONRPC interface")


def _open(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise A2AError.call_failed(f"not an http(s) URL: {url}")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname, parts.port, timeout=timeout)
    path = parts.path or "/"
    return conn, path + (f"?{parts.query}" if parts.query else "")


def fetch_card(url: str, timeout: float) -> dict[str, Any]:
    """GET the agent card; A2AError when it cannot be had."""
    target = card_url(url)
    conn, path = _open(target, timeout)
    try:
        conn.request("GET", path, headers={"Accept": "application/json", "A2A-Version": PROTOCOL_VERSION})
        response = conn.getresponse()
        body = response.read(MAX_BODY + 1)
        if response.status != 200:
            raise A2AError.call_failed(f"GET {target} answered HTTP {response.status}")
    except (OSError, http.client.HTTPException) as exc:
        raise A2AError.call_failed(f"cannot reach {target}: {exc}", unreachable=True) from exc
    finally:
        conn.close()
    card = _json(body, f"the card at {target}")
    if not isinstance(card, dict):
        raise A2AError.call_failed(f"the card at {target} is not a JSON object")
    return card


def _json(body: bytes, what: str) -> Any:
    if len(body) > MAX_BODY:
        raise A2AError.call_failed(f"{what} is larger than {MAX_BODY} bytes")
    try:
        return json.loads(body)
    except ValueError as exc:
        raise A2AError.call_failed(f"{what} is not JSON: {exc}") from exc


def _result(reply: Any, method: str) -> dict[str, Any]:
    if not isinstance(reply, dict):
        raise A2AError.call_failed(f"{method}: the reply is not a JSON-RPC object")
    error = reply.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        raise A2AError.call_failed(f"{method}: {error.get('message', 'error')}",
                                   code if isinstance(code, int) else None)
    result = reply.get("result")
    if not isinstance(result, dict):
        raise A2AError.call_failed(f"{method}: the reply has no result object")
    return result


class A2AClient:
    """JSON-RPC calls to one agent endpoint."""

    def __init__(self, endpoint: str, timeout: float, headers: dict[str, str] | None = None) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.headers = dict(headers or {})
        self._ids = 0

    def _post(self, method: str, params: dict[str, Any], accept: str) -> tuple[http.client.HTTPConnection,
                                                                               http.client.HTTPResponse]:
        self._ids += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}).encode()
        conn, path = _open(self.endpoint, self.timeout)
        headers = {"Content-Type": "application/json", "Accept": accept, "A2A-Version": PROTOCOL_VERSION,
                   **self.headers}
        try:
            conn.request("POST", path, body, headers)
            return conn, conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise A2AError.call_failed(f"cannot reach {self.endpoint}: {exc}", unreachable=True) from exc

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One unary call (SendMessage, GetTask, CancelTask): its result object."""
        conn, response = self._post(method, params, "application/json")
        try:
            body = response.read(MAX_BODY + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise A2AError.call_failed(f"{method}: the reply broke off: {exc}") from exc
        finally:
            conn.close()
        return _result(_json(body, f"the {method} reply"), method)

    def stream(self, params: dict[str, Any], on_event: Callable[[dict[str, Any]], None],
               stop: Callable[[], bool] = lambda: False) -> None:
        """SendStreamingMessage: on_event(result) for each SSE event, in order, until the stream ends
        (or stop() says so between events). A JSON reply instead of a stream is one event."""
        conn, response = self._post("SendStreamingMessage", params, "text/event-stream")
        try:
            kind = (response.getheader("Content-Type") or "").split(";", 1)[0].strip()
            if kind != "text/event-stream":
                on_event(_result(_json(response.read(MAX_BODY + 1), "the SendStreamingMessage reply"),
                                 "SendStreamingMessage"))
                return
            events = iter_sse(response, MAX_EVENT)
            while not stop():
                try:
                    _, data = next(events)
                except StopIteration:
                    break
                except ValueError as exc:  # a line or an event over the size cap
                    raise A2AError.call_failed(f"{exc} ({MAX_EVENT} bytes)") from exc
                on_event(_result(_json(data.encode(), "an SSE event"), "SendStreamingMessage"))
        except (OSError, http.client.HTTPException) as exc:
            raise A2AError.call_failed(f"the stream from {self.endpoint} broke off: {exc}") from exc
        finally:
            conn.close()

    def get_task(self, task_id: str) -> dict[str, Any]:
        return self.call("GetTask", {"id": task_id})

    def cancel_task(self, task_id: str) -> dict[str, Any]:
        return self.call("CancelTask", {"id": task_id})
