"""devtools.listing: what a server offers — its tools, resources, resource templates and prompts — as text.

`gather` asks the server for each list its capabilities announce; `render` writes them for a
person: each tool with its description and one line per parameter (type, required, default,
description), each resource with its name and MIME type, each prompt with its arguments.
Rules: no I/O beyond the client given; plain data in, lines out.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_agent_kit.client.client import Client

# key in the output -> (capability, the Client method that lists it, heading)
LISTS: dict[str, tuple[str, str, str]] = {
    "tools": ("tools", "list_tools", "tools"),
    "resources": ("resources", "list_resources", "resources"),
    "resourceTemplates": ("resources", "list_resource_templates", "resource templates"),
    "prompts": ("prompts", "list_prompts", "prompts"),
}


def gather(client: Client) -> dict[str, list[dict[str, Any]]]:
    """Every list the server's capabilities announce (an empty list for the others)."""
    offered = client.verdict.capabilities if client.verdict is not None else {}
    found: dict[str, list[dict[str, Any]]] = {}
    for key, (capability, method, _) in LISTS.items():
        found[key] = getattr(client, method)() if capability in offered else []
    return found


def type_of(schema: Any) -> str:
    """A short reading of a JSON Schema: `string`, `array of number`, `one of "a", "b"`, `integer | null`."""
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list):
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return " | ".join(type_of(option) for option in options)
    declared = schema.get("type")
    if isinstance(declared, list):
        return " | ".join(str(item) for item in declared)
    if declared == "array":
        return f"array of {type_of(schema.get('items'))}" if "items" in schema else "array"
    return str(declared) if declared else "any"


def _one_line(text: Any, limit: int = 160) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _parameters(schema: Any) -> list[str]:
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = set(schema.get("required") or [])
    lines = []
    for name, field in schema["properties"].items():
        field = field if isinstance(field, dict) else {}
        facts = [type_of(field)]
        if name in required:
            facts.append("required")
        if "default" in field:
            facts.append(f"default {json.dumps(field['default'])}")
        about = f" — {_one_line(field['description'])}" if field.get("description") else ""
        lines.append(f"    {name}: {', '.join(facts)}{about}")
    return lines


def _tool(tool: dict[str, Any]) -> list[str]:
    found = tool.get("annotations")
    hints: dict[str, Any] = found if isinstance(found, dict) else {}
    marks = [word for key, word in (("readOnlyHint", "read-only"), ("destructiveHint", "destructive"))
             if hints.get(key) is True]
    head = f"  {tool.get('name')}" + (f" [{', '.join(marks)}]" if marks else "")
    lines = [head + (f" — {_one_line(tool.get('description'))}" if tool.get("description") else "")]
    return lines + (_parameters(tool.get("inputSchema")) or ["    (no parameters)"])


def _resource(item: dict[str, Any]) -> list[str]:
    where = item.get("uri") or item.get("uriTemplate")
    facts = [str(value) for value in (item.get("name"), item.get("mimeType")) if value]
    about = f" — {_one_line(item['description'])}" if item.get("description") else ""
    return [f"  {where}" + (f" ({', '.join(facts)})" if facts else "") + about]


def _prompt(item: dict[str, Any]) -> list[str]:
    lines = [f"  {item.get('name')}" + (f" — {_one_line(item['description'])}" if item.get("description") else "")]
    for argument in item.get("arguments") or []:
        if isinstance(argument, dict):
            about = f" — {_one_line(argument['description'])}" if argument.get("description") else ""
            lines.append(f"    {argument.get('name')}{', required' if argument.get('required') else ''}{about}")
    return lines


RENDERERS = {"tools": _tool, "resources": _resource, "resourceTemplates": _resource, "prompts": _prompt}


def render(found: dict[str, list[dict[str, Any]]]) -> str:
    """The lists as text: the tools always (`(none)` when there are none), the others when not empty."""
    lines: list[str] = []
    for key, (_, _, heading) in LISTS.items():
        items = found.get(key, [])
        if not items and key != "tools":
            continue
        lines.append(f"{heading} ({len(items)}):")
        for item in items:
            lines += RENDERERS[key](item)
        if not items:
            lines.append("  (none)")
    return "\n".join(lines)
