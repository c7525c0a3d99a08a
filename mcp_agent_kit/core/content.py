"""content: the content blocks a handler may return, and the conversions to wire results.

Turns what a tool, prompt or resource handler returned into the exact MCP result shapes
(CallToolResult, GetPromptResult messages, ReadResourceResult contents). Rules: pure data
conversion; no I/O, no era knowledge (era shaping happens in wire.mcp).
"""

from __future__ import annotations

from typing import Any

from mcp_agent_kit.wire.jsonrpc import dumps_compact
from mcp_agent_kit.wire.reply import JSONText

CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})
# The keys each content block type must carry to be recognised as a block (not data).
_REQUIRED_KEYS = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": ("resource",),
}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def image(data: bytes | str, mime_type: str, **extra: Any) -> dict[str, Any]:
    return {"type": "image", "data": _b64(data), "mimeType": mime_type, **extra}


def audio(data: bytes | str, mime_type: str, **extra: Any) -> dict[str, Any]:
    return {"type": "audio", "data": _b64(data), "mimeType": mime_type, **extra}


def resource_link(uri: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "resource_link", "uri": uri, "name": name, **extra}


def embedded_resource(
    uri: str, *, text: str | None = None, blob: bytes | str | None = None, mime_type: str | None = None
) -> dict[str, Any]:
    resource: dict[str, Any] = {"uri": uri}
    if mime_type:
        resource["mimeType"] = mime_type
    if blob is not None:
        resource["blob"] = _b64(blob)
    else:
        resource["text"] = text or ""
    return {"type": "resource", "resource": resource}


def _b64(data: bytes | str) -> str:
    import base64  # lazily: binary content is rare, server start is not

    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


class ToolResult:
    """Full control over a tool's CallToolResult."""

    __slots__ = ("content", "is_error", "meta", "structured")

    def __init__(
        self,
        content: list[Any] | None = None,
        structured: Any = None,
        is_error: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.content = list(content or [])
        self.structured = structured
        self.is_error = is_error
        self.meta = meta


class ToolError(Exception):
    """Raise from a tool to return `isError: true` with this message (the same as any exception,
    but without a traceback in the server log)."""


def is_content_block(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    return type(kind) is str and kind in CONTENT_TYPES and all(key in value for key in _REQUIRED_KEYS[kind])


def dumps_text(value: Any) -> str:
    """Structured content as the compact JSON text of its mirror text block."""
    return dumps_compact(value)


def tool_result(value: Any, structured: bool = False) -> dict[str, Any]:
    """A CallToolResult for whatever a tool handler returned.

    With structured (the tool declares an outputSchema), any plain value is structuredContent.
    """
    if structured and type(value) is dict:  # the usual case: a plain object, not a content block
        kind = value.get("type")
        if kind is None or type(kind) is not str or kind not in CONTENT_TYPES:
            return _structured(value)
    if isinstance(value, ToolResult):
        result: dict[str, Any] = {"content": [_block(item) for item in value.content]}
        if value.structured is not None:
            result["structuredContent"] = value.structured
            if not value.content:
                result["content"] = [text(JSONText(dumps_text(value.structured)))]
        result["isError"] = value.is_error
        if value.meta:
            result["_meta"] = dict(value.meta)
        return result
    if structured and not is_content_block(value):
        return _structured(value)
    if isinstance(value, str):
        return {"content": [text(value)], "isError": False}
    if is_content_block(value):
        return {"content": [value], "isError": False}
    if isinstance(value, list | tuple) and value and all(_is_block_like(item) for item in value):
        return {"content": [_block(item) for item in value], "isError": False}
    if value is None:
        return {"content": [], "isError": False}
    if isinstance(value, bytes | bytearray):
        raise TypeError("a tool returned bytes: wrap them with content.image/audio or embedded_resource")
    return _structured(value)


def _structured(value: Any) -> dict[str, Any]:
    """structuredContent plus its JSON as a text block, for clients that read only content."""
    return {"content": [{"type": "text", "text": JSONText(dumps_compact(value))}], "structuredContent": value,
            "isError": False}


def _is_block_like(item: Any) -> bool:
    return isinstance(item, str) or is_content_block(item)


def _block(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return text(item)
    if is_content_block(item):
        return dict(item)
    raise TypeError(f"not a content block: {item!r:.80}")


def error_result(message: str) -> dict[str, Any]:
    return {"content": [text(message)], "isError": True}


def prompt_messages(value: Any) -> tuple[list[dict[str, Any]], str | None]:
    """(messages, description) for whatever a prompt handler returned."""
    description = None
    if isinstance(value, dict) and "messages" in value:
        description = value.get("description")
        value = value["messages"]
    if isinstance(value, str) or is_content_block(value) or _is_message(value):
        value = [value]
    if not isinstance(value, list | tuple):
        raise TypeError("a prompt must return a str, a message, a list of them, or {messages: [...]}")
    return [_message(item) for item in value], description


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value and "content" in value


def _message(item: Any) -> dict[str, Any]:
    if _is_message(item):
        if item["role"] not in ("user", "assistant"):
            raise TypeError(f"message role must be user or assistant, not {item['role']!r}")
        content = item["content"]
        return {"role": item["role"], "content": text(content) if isinstance(content, str) else _block(content)}
    return {"role": "user", "content": _block(item)}


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """ReadResourceResult.contents for whatever a resource handler returned."""
    items = value if isinstance(value, list) else [value]
    contents = []
    for item in items:
        if isinstance(item, dict) and ("text" in item or "blob" in item):
            entry = dict(item)
            entry.setdefault("uri", uri)
            if mime_type and "mimeType" not in entry:
                entry["mimeType"] = mime_type
        elif isinstance(item, bytes | bytearray):
            entry = {"uri": uri, "blob": _b64(bytes(item))}
            entry["mimeType"] = mime_type or "application/octet-stream"
        elif isinstance(item, str):
            entry = {"uri": uri, "text": item}
            if mime_type:
                entry["mimeType"] = mime_type
        else:
            entry = {"uri": uri, "text": dumps_text(item), "mimeType": mime_type or "application/json"}
        contents.append(entry)
    return contents
