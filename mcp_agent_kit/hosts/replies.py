"""hosts.replies: the HTTP answers of an agent host — JSON bodies, empty 202s, `{"error": ...}` refusals.

Error bodies are `{"error": "<one line naming the problem and the fix>"}`, as the ACP SDK's server words them
(not JSON-RPC). A reply keeps the connection open when the request allows it. Rules: writes a whole response
to the engine's Channel; no routing, no state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from mcp_agent_kit.httpd import Channel, Request

__all__ = ["send", "send_error", "send_json"]


def send(channel: Channel, request: Request, status: int, body: bytes = b"", content_type: str = "",
         headers: Mapping[str, str] | None = None) -> bool:
    """One complete response; whether the connection may carry another request."""
    keep = request.keep_alive and request.complete
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Length: {len(body)}",
             "Cache-Control: no-store"]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if not keep:
        lines.append("Connection: close")
    channel.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    return keep


def send_json(channel: Channel, request: Request, status: int, value: Any,
              headers: Mapping[str, str] | None = None) -> bool:
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return send(channel, request, status, body, "application/json", headers)


def send_error(channel: Channel, request: Request, status: int, message: str,
               headers: Mapping[str, str] | None = None) -> bool:
    return send_json(channel, request, status, {"error": message}, headers)
