"""headers: the value encoding shared by Streamable HTTP clients and servers (digest §6).

Which body field `Mcp-Name` mirrors per method, the `=?base64?...?=` sentinel encoding of
header values, and the lookup of an argument by its `properties` path. Rules: pure functions;
no HTTP library, no registry.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

PREFIX: Final = "=?base64?"
SUFFIX: Final = "?="
_PLAIN = re.compile(r"^[\x20-\x7e]*$")
_B64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")

# The request field mirrored into Mcp-Name, per method (SEP-2243; taskId for the tasks extension).
NAME_FIELD: Final[dict[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def _is_sentinel(value: str) -> bool:
    return len(value) >= len(PREFIX) + len(SUFFIX) and value.startswith(PREFIX) and value.endswith(SUFFIX)


def encode_value(value: str) -> str:
    """A header-safe form of value: plain when visible ASCII without edge whitespace, else base64."""
    if _PLAIN.fullmatch(value) and value == value.strip() and not _is_sentinel(value):
        return value
    return PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + SUFFIX


def decode_value(raw: str) -> str:
    """A received header value, trimmed, with the base64 sentinel decoded; ValueError if malformed."""
    value = raw.strip(" \t")
    if not _is_sentinel(value):
        return value
    body = value[len(PREFIX) : -len(SUFFIX)]
    if len(body) % 4 or not _B64.fullmatch(body):
        raise ValueError("malformed base64 header value")
    try:
        return base64.b64decode(body, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError("malformed base64 header value") from exc


def value_at(arguments: Any, path: tuple[str, ...]) -> Any:
    """The argument at a `properties` path, or None when any step is missing."""
    for key in path:
        if not isinstance(arguments, dict):
            return None
        arguments = arguments.get(key)
    return arguments
