"""reply: encodes a JSON-RPC reply, reusing JSON text that its result already holds.

A structured tool result carries its value twice: as ``structuredContent`` and, for clients
that only read content, as a text block holding the same value's JSON. The text is built once
as a ``JSONText``; this encoder writes that same text for ``structuredContent`` instead of
encoding the value again, and writes the server's ``_meta`` serverInfo from a cached encoding.
Everything else goes through the ordinary encoder. Rules: byte-for-byte the same JSON value as
``jsonrpc.encode_safely`` would give (key order aside); any shape it does not recognise takes the
ordinary path; no I/O.
"""

from __future__ import annotations

import json.encoder
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.wire.jsonrpc import dumps_compact, encode_safely
from mcp_agent_kit.wire.mcp import META_SERVER_INFO


class JSONText(str):
    """A text block's text that is, by construction, the compact JSON of its result's
    ``structuredContent`` (built by ``content.tool_result`` from that very value)."""

    __slots__ = ()


_INFO_KEY = dumps_compact(META_SERVER_INFO)
_info_cache: tuple[dict[str, Any], str] = ({}, "{}")  # (a copy of the serverInfo, its _meta's JSON)


def _meta_json(meta: Any) -> str | None:
    """The JSON of a `_meta` holding only serverInfo, from the cache; None for any other _meta."""
    global _info_cache
    if type(meta) is not dict or len(meta) != 1:
        return None
    info = meta.get(META_SERVER_INFO)
    if type(info) is not dict:
        return None
    copy, text = _info_cache
    if info != copy:  # a new server, or a changed serverInfo: encode it once more
        text = "{" + _INFO_KEY + ":" + dumps_compact(info) + "}"
        _info_cache = (dict(info), text)
    return text


_HOT_KEYS = frozenset({"content", "structuredContent", "isError", "resultType", "_meta"})
_BOOL_JSON = {True: "true", False: "false"}
_RESULT_TYPE_JSON = {"complete": '"complete"', "input_required": '"input_required"'}
# A JSON string literal for a str, without ensure_ascii (the C function when there is one).
_string_json: Callable[[str], str] = json.encoder.encode_basestring


def _mirror(result: dict[str, Any]) -> str | None:
    """The structuredContent's JSON when the first content block is its JSONText mirror."""
    content = result.get("content")
    if "structuredContent" in result and type(content) is list and content:
        block = content[0]
        if type(block) is dict:
            text = block.get("text")
            if type(text) is JSONText:
                return text
    return None


def encode_reply(message: dict[str, Any]) -> bytes:
    """One serialized message (no newline); a result that is not JSON becomes an internal error."""
    result = message.get("result")
    if type(result) is not dict or len(message) != 3 or "id" not in message:
        return encode_safely(message)
    mirror = _mirror(result)
    meta = _meta_json(result.get("_meta"))
    if mirror is None and meta is None:
        return encode_safely(message)
    try:
        id_ = message["id"]
        id_json = str(id_) if type(id_) is int else dumps_compact(id_)
        if (
            mirror is not None and meta is not None and result.keys() == _HOT_KEYS
            and len(result["content"]) == 1 and len(result["content"][0]) == 2
            and result["content"][0].get("type") == "text" and type(result["isError"]) is bool
            and result["resultType"] in _RESULT_TYPE_JSON
        ):  # a structured tool result as content.tool_result builds it: one template
            return (
                '{"jsonrpc":"2.0","id":' + id_json + ',"result":{"content":[{"type":"text","text":'
                + _string_json(mirror) + '}],"structuredContent":' + mirror + ',"isError":'
                + _BOOL_JSON[result["isError"]] + ',"resultType":' + _RESULT_TYPE_JSON[result["resultType"]]
                + ',"_meta":' + meta + "}}"
            ).encode("utf-8")
        rest = dict(result)
        tail = ""
        if meta is not None:
            del rest["_meta"]
            tail += ',"_meta":' + meta
        if mirror is not None:
            del rest["structuredContent"]
            tail += ',"structuredContent":' + mirror
        body = dumps_compact(rest)
        if body == "{}":
            tail = tail[1:]  # no leading comma in an otherwise empty object
        return ('{"jsonrpc":"2.0","id":' + id_json + ',"result":' + body[:-1] + tail + "}}").encode("utf-8")
    except (TypeError, ValueError, RecursionError):  # not JSON, or a lone surrogate (UnicodeEncodeError)
        return encode_safely(message)
