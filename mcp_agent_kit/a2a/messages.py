"""messages: checks and normalises ProtoJSON Messages and Parts sent by clients; builds agent ones.

Input may use camelCase or snake_case field names (ProtoJSON parsers accept both); output is always
camelCase. A Part carries exactly one of text/raw/url/data. Rules: pure functions over dicts; errors
are A2AError("InvalidParams") with a field violation naming the exact path.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Iterable
from typing import Any

from mcp_agent_kit.a2a.protocol import ROLE_AGENT, ROLE_NUMBERS, ROLE_USER, A2AError

PART_CONTENT = ("text", "raw", "url", "data")
_ALIASES = {
    "message_id": "messageId",
    "context_id": "contextId",
    "task_id": "taskId",
    "reference_task_ids": "referenceTaskIds",
    "media_type": "mediaType",
    "history_length": "historyLength",
    "return_immediately": "returnImmediately",
    "accepted_output_modes": "acceptedOutputModes",
    "page_size": "pageSize",
    "page_token": "pageToken",
    "status_timestamp_after": "statusTimestampAfter",
    "include_artifacts": "includeArtifacts",
    "task_push_notification_config": "taskPushNotificationConfig",
}


def camel(obj: dict[str, Any]) -> dict[str, Any]:
    """Rename known snake_case keys to camelCase (one level)."""
    if not any(key in _ALIASES for key in obj):
        return obj
    return {_ALIASES.get(key, key): value for key, value in obj.items()}


def invalid(field: str, why: str) -> A2AError:
    return A2AError("InvalidParams", detail=f"{field}: {why}", violations=[(field, why)])


def _string(obj: dict[str, Any], key: str, where: str, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            raise invalid(f"{where}.{key}", "is required")
        return None
    if not isinstance(value, str):
        raise invalid(f"{where}.{key}", "must be a string")
    return value


def parse_part(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise invalid(where, "a part must be an object")
    part = camel(raw)
    present = [key for key in PART_CONTENT if key in part and part[key] is not None]
    if len(present) != 1:
        why = "has no content" if not present else f"has {len(present)} content fields ({', '.join(present)})"
        raise invalid(where, f"a part needs exactly one of text, raw, url, data; this one {why}")
    key = present[0]
    value = part[key]
    if key in ("text", "url", "raw") and not isinstance(value, str):
        raise invalid(f"{where}.{key}", "must be a string")
    if key == "raw":
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise invalid(f"{where}.raw", "must be standard base64") from None
    out: dict[str, Any] = {key: value}
    for extra in ("filename", "mediaType"):
        text = _string(part, extra, where)
        if text is not None:
            out[extra] = text
    metadata = part.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise invalid(f"{where}.metadata", "must be an object")
        out["metadata"] = metadata
    return out


def parse_role(value: Any, where: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value in ROLE_NUMBERS:
        value = ROLE_NUMBERS[value]
    if value not in (ROLE_USER, ROLE_AGENT):
        raise invalid(where, f"must be {ROLE_USER} or {ROLE_AGENT}, got {value!r}")
    return str(value)


def parse_message(raw: Any, where: str = "message") -> dict[str, Any]:
    """A clean client Message, or InvalidParams."""
    if not isinstance(raw, dict):
        raise invalid(where, "is required and must be an object")
    msg = camel(raw)
    out: dict[str, Any] = {"messageId": _string(msg, "messageId", where, required=True)}
    for key in ("contextId", "taskId"):
        value = _string(msg, key, where)
        if value is not None:
            out[key] = value
    out["role"] = parse_role(msg.get("role"), f"{where}.role")
    parts = msg.get("parts")
    if not isinstance(parts, list) or not parts:
        raise invalid(f"{where}.parts", "must be a non-empty list")
    out["parts"] = [parse_part(part, f"{where}.parts[{index}]") for index, part in enumerate(parts)]
    metadata = msg.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise invalid(f"{where}.metadata", "must be an object")
        out["metadata"] = metadata
    for key in ("extensions", "referenceTaskIds"):
        value = msg.get(key)
        if value is not None:
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise invalid(f"{where}.{key}", "must be a list of strings")
            if value:
                out[key] = list(value)
    return out


def check_media_types(message: dict[str, Any], accepted: frozenset[str]) -> None:
    """ContentTypeNotSupported for a part whose mediaType the agent does not accept (none declared: all)."""
    if not accepted:
        return
    for index, part in enumerate(message["parts"]):
        media = part.get("mediaType")
        if media is not None and media.split(";")[0].strip().lower() not in accepted:
            raise A2AError(
                "ContentTypeNotSupported",
                f"Content type {media!r} of message.parts[{index}] is not supported; "
                f"accepted: {', '.join(sorted(accepted))}",
                {"mediaType": media},
            )


def new_id() -> str:
    return str(uuid.uuid4())


def agent_message(parts: Iterable[dict[str, Any]], context_id: str, task_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"messageId": new_id(), "contextId": context_id}
    if task_id is not None:
        msg["taskId"] = task_id
    msg["role"] = ROLE_AGENT
    msg["parts"] = list(parts)
    return msg


def text_part(text: str) -> dict[str, Any]:
    return {"text": text}


def data_part(data: Any) -> dict[str, Any]:
    return {"data": data, "mediaType": "application/json"}


def texts(message: dict[str, Any]) -> list[str]:
    return [part["text"] for part in message.get("parts", ()) if "text" in part]


def flag_param(obj: dict[str, Any], *names: str) -> bool:
    for name in names:
        value = obj.get(name)
        if value is not None:
            if not isinstance(value, bool):
                raise A2AError(
                    "InvalidParams",
                    detail=f"{name} must be a boolean",
                    violations=[(name, "must be a boolean")],
                )
            return value
    return False


def count_param(obj: dict[str, Any], *names: str) -> int | None:
    for name in names:
        value = obj.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise A2AError(
                    "InvalidParams",
                    detail=f"{name} must be a non-negative integer",
                    violations=[(name, "must be a non-negative integer")],
                )
            return value
    return None
