"""conformance_client: the client the MCP conformance suite drives (`conformance client --command`).

`python -m mcp_agent_kit.client.conformance_client URL` connects with the probe, then does what
the scenario named in MCP_CONFORMANCE_SCENARIO exercises (tool calls listed in
MCP_CONFORMANCE_CONTEXT, MRTR tools, the standard header methods, skills: list, then load the
first listed skill and read its files), using the public Client API only. Exit status 0 when
every step worked. Rules: no scenario knowledge beyond which public calls to make; everything
checked is the Client's ordinary behaviour.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.client.client import Client
from mcp_agent_kit.client.oauth_conformance import conformance_oauth

_SAMPLE_ARGUMENTS = {"string": "test", "integer": 1, "number": 1.5, "boolean": True}


def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    """Accept with each field's default, or a plausible value of its type."""
    schema = params.get("requestedSchema") if isinstance(params.get("requestedSchema"), dict) else {}
    properties = schema.get("properties") if isinstance(schema, dict) else {}
    content: dict[str, Any] = {}
    for name, prop in (properties or {}).items():
        if isinstance(prop, dict):
            content[name] = prop.get("default", _SAMPLE_ARGUMENTS.get(str(prop.get("type")), "test"))
    return {"action": "accept", "content": content}


def _sample(params: dict[str, Any]) -> dict[str, Any]:
    text = {"type": "text", "text": "ok"}
    return {"role": "assistant", "content": text, "model": "conformance", "stopReason": "endTurn"}


def _roots(params: dict[str, Any]) -> dict[str, Any]:
    return {"roots": [{"uri": "file:///srv/conformance", "name": "conformance"}]}


def _arguments_for(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in schema.get("required") or []:
        prop = properties.get(name) or {}
        arguments[name] = _SAMPLE_ARGUMENTS.get(str(prop.get("type")), "test")
    return arguments


def _call_listed(client: Client, context: dict[str, Any]) -> None:
    calls = context.get("toolCalls")
    if isinstance(calls, list):
        for call in calls:
            client.call_tool(call["name"], call.get("arguments") or {})
        return
    for tool in client.tools.values():
        client.call_tool(tool["name"], _arguments_for(tool))


def _tools(client: Client, context: dict[str, Any]) -> None:
    client.list_tools()
    _call_listed(client, context)


def _mrtr(client: Client, context: dict[str, Any]) -> None:
    client.list_tools()
    for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"):
        client.call_tool(name, {})


def _standard_headers(client: Client, context: dict[str, Any]) -> None:
    _tools(client, context)
    for resource in client.list_resources():
        client.read_resource(resource["uri"])
    for prompt in client.list_prompts():
        client.get_prompt(prompt["name"])


def _list_only(client: Client, context: dict[str, Any]) -> None:
    client.list_tools()


def _echo_schema(client: Client, context: dict[str, Any]) -> None:
    """Round-trip a listed inputSchema verbatim (the client must not rewrite 2020-12 keywords)."""
    client.list_tools()
    schema = client.tools["json_schema_2020_12_tool"]["inputSchema"]
    client.call_tool("json_schema_echo", {"schema": schema})


def _list_skills(client: Client, context: dict[str, Any]) -> None:
    client.list_skills()


def _use_skill(client: Client, context: dict[str, Any]) -> None:
    """Load the first listed skill (its SKILL.md, verified), then read each of its other files."""
    entry = client.list_skills()[0]
    client.read_skill_file(entry["uri"])
    for resource in entry["resources"]:
        if resource["uri"] != entry["uri"]:
            client.read_skill_file(resource["uri"])


SCENARIOS: dict[str, Callable[[Client, dict[str, Any]], None]] = {
    "sep-2640-client-no-prefetch": _list_skills,
    "sep-2640-client-verify-digest": _use_skill,
    "sep-2640-client-verify-size": _use_skill,
    "sep-2640-client-verify-frontmatter": _use_skill,
    "sep-2322-client-request-state": _mrtr,
    "http-standard-headers": _standard_headers,
    "json-schema-ref-no-deref": _list_only,
    "json-schema-2020-12-preservation": _echo_schema,
    "request-metadata": _tools,
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m mcp_agent_kit.client.conformance_client SERVER_URL", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    client = Client.http(
        args[-1],
        elicitation=_elicit,
        sampling=_sample,
        roots=_roots,
        client_info={"name": "mcp-agent-kit-conformance", "version": "0.1.0"},
        auth=conformance_oauth(args[-1], scenario, context),
        timeout=20.0,  # the suite starts every scenario at once: its servers answer slowly at first
    )
    try:
        client.connect()
        SCENARIOS.get(scenario, _tools)(client, context)
    except Exception as exc:
        print(f"conformance client: {scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
