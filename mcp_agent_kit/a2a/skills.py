"""skills: MCP tool definitions → A2A AgentSkill objects, and CallToolResults → artifact parts.

Rules: pure functions over the registry's wire dicts; no tasks, no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_agent_kit.a2a.messages import data_part
from mcp_agent_kit.core.content import dumps_text
from mcp_agent_kit.core.registry import ToolDef

_HINT_TAGS = {"readOnlyHint": "read-only", "destructiveHint": "destructive", "idempotentHint": "idempotent"}
_SAMPLES: dict[str, Any] = {"string": "text", "number": 1.5, "integer": 1, "boolean": True, "null": None}


def example_value(schema: Any, depth: int = 0) -> Any:
    """A plausible value for a schema: its example, default, const or first enum, else one by type."""
    if not isinstance(schema, dict) or depth > 4:
        return None
    for key in ("examples", "enum"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema[key][0]
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "array":
        return [example_value(schema.get("items"), depth + 1)] if isinstance(schema.get("items"), dict) else []
    if kind == "object" or "properties" in schema:
        return example_arguments(schema, depth + 1)
    return _SAMPLES.get(str(kind))


def example_arguments(schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required = [name for name in schema.get("required", []) if name in props] or list(props)
    return {name: example_value(props[name], depth) for name in required}


def _summary(schema: dict[str, Any]) -> str:
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required", []))
    items = []
    for name, prop in props.items():
        kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
        items.append(
            f"{name} ({'/'.join(kind) if isinstance(kind, list) else kind}{', required' if name in required else ''})"
        )
    return ("Arguments: " + ", ".join(items) + ".") if items else "No arguments."


def skill_for(tool: ToolDef) -> dict[str, Any]:
    wire = tool.wire
    hints = wire.get("annotations") or {}
    tags = ["mcp-tool", *(tag for hint, tag in _HINT_TAGS.items() if hints.get(hint) is True)]
    description = (wire.get("description") or tool.name).strip()
    example = {"skill": tool.name, "arguments": example_arguments(tool.input_schema)}
    return {
        "id": tool.name,
        "name": wire.get("title") or tool.name,
        "description": f"{description} {_summary(tool.input_schema)}",
        "tags": tags,
        "examples": [json.dumps(example, separators=(",", ":"))],
        "inputModes": ["application/json", "text/plain"],
        "outputModes": ["application/json", "text/plain"]
        if "outputSchema" in wire and not tool.wrapped
        else ["text/plain", "application/json"],
    }


def _block_part(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"text": block["text"]}
    if kind in ("image", "audio"):
        return {"raw": block["data"], "mediaType": block["mimeType"]}
    if kind == "resource_link":
        part = {"url": block["uri"], "filename": block["name"]}
        if block.get("mimeType"):
            part["mediaType"] = block["mimeType"]
        return part
    if kind == "resource":
        resource = block["resource"]
        out: dict[str, Any] = {"raw": resource["blob"]} if "blob" in resource else {"text": resource.get("text", "")}
        if resource.get("mimeType"):
            out["mediaType"] = resource["mimeType"]
        out["metadata"] = {"uri": resource.get("uri", "")}
        return out
    return None


def result_parts(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Artifact parts for a CallToolResult: structuredContent → data part, text → text, media → raw."""
    parts: list[dict[str, Any]] = []
    structured = result.get("structuredContent")
    echo = None
    if structured is not None:
        parts.append(data_part(structured))
        echo = dumps_text(structured)
    for block in result.get("content", ()):
        if block.get("type") == "text" and block.get("text") == echo:
            continue  # the text rendering of the structured result adds nothing
        part = _block_part(block)
        if part is not None:
            parts.append(part)
    return parts
