"""methods: one function per MCP method, and the core method table every dispatcher starts from.

Each handler takes a Call (the request plus its era and connection) and returns a plain
result dict; the dispatcher adds the era's envelope. Rules: no transport, no encoding; a
protocol error is an RpcError, a tool failure is an `isError` result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.core import content, invoke, mrtr
from mcp_agent_kit.core.call import Call, Method, MethodTable
from mcp_agent_kit.core.context import Context, InputRequired
from mcp_agent_kit.core.registry import Handler, ListKind, ResourceNotFound, TemplateDef
from mcp_agent_kit.logs import logger
from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from mcp_agent_kit.wire.mcp import LEGACY, MODERN

if TYPE_CHECKING:
    from mcp_agent_kit.core.connection import Connection


def _param(call: Call, name: str, kind: type, required: bool = True) -> Any:
    value = call.params.get(name)
    if value is None:
        if required:
            raise RpcError.invalid_params(f'{call.method} needs "{name}"')
        return None
    if not isinstance(value, kind):
        raise RpcError.invalid_params(f'"{name}" must be a {_JSON_NAMES[kind]}')
    return value


_JSON_NAMES = {str: "string", dict: "object", list: "array", int: "integer"}


# ---- lists and pagination -------------------------------------------------------------------
def page_cursor(kind: str, offset: int) -> str:
    import base64  # lazily (both): only lists longer than a page have cursors

    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode("ascii")


def page_offset(kind: str, cursor: Any, total: int) -> int:
    if cursor is None:
        return 0
    import base64

    try:
        got_kind, _, number = base64.urlsafe_b64decode(str(cursor).encode("ascii")).decode().partition(":")
        offset = int(number)
    except (ValueError, UnicodeError) as exc:
        raise RpcError.invalid_params("invalid cursor") from exc
    if got_kind != kind or not 0 <= offset <= total or not isinstance(cursor, str):
        raise RpcError.invalid_params("invalid cursor")
    return offset


def _page(call: Call, kind: ListKind) -> dict[str, Any]:
    items = call.registry.listing(kind)
    size = call.registry.page_size
    start = page_offset(kind, call.params.get("cursor"), len(items))
    result: dict[str, Any] = {kind: [item.wire for item in items[start : start + size]]}
    if start + size < len(items):
        result["nextCursor"] = page_cursor(kind, start + size)
    return result


def tools_list(call: Call) -> dict[str, Any]:
    result = _page(call, "tools")
    for annotate in call.view.annotators[call.era]:  # extensions' tools/list hooks (core.extension)
        result["tools"] = annotate(call, result["tools"])
    return result


def resources_list(call: Call) -> dict[str, Any]:
    return _page(call, "resources")


def templates_list(call: Call) -> dict[str, Any]:
    return _page(call, "resourceTemplates")


def prompts_list(call: Call) -> dict[str, Any]:
    return _page(call, "prompts")


# ---- tools ------------------------------------------------------------------------------
def tools_call(call: Call) -> dict[str, Any]:
    params = call.params
    name = params.get("name")
    if type(name) is not str:
        name = _param(call, "name", str)
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    elif type(arguments) is not dict:
        raise RpcError.invalid_params('"arguments" must be an object')
    tool = call.view.registry.get_tool(name)
    if tool is None:
        raise RpcError.invalid_params(f"unknown tool {name!r}")
    validator = tool._input
    if validator is None:
        try:
            validator = tool.validator()
        except ValueError as exc:  # SchemaError: the tool's own schema is broken
            raise RpcError.internal_error(f"tool {name!r} has an invalid inputSchema: {exc}") from exc
    if not validator.is_valid(arguments):
        violations = validator.validate(arguments)
        if violations:
            detail = "; ".join(v.message for v in violations)
            return content.error_result(f"Invalid arguments for tool {name!r}: {detail}")
    if tool.integer_args:
        arguments = _coerce_integers(tool.integer_args, arguments)
    return execute_tool(call, tool, arguments if tool.as_is else tool.handler.convert(arguments))


def execute_tool(call: Call, tool: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a validated tool call to its CallToolResult (or an InputRequiredResult); an extension's
    interceptor (core.tasks: run it as a task) may answer instead."""
    if call.task is None:  # a task's own worker runs the tool itself
        for intercept in call.view.interceptors[call.era]:
            taken: dict[str, Any] | None = intercept(call, tool, arguments)
            if taken is not None:
                return taken

    handler = tool.handler

    def run(ctx: Context | None) -> Any:
        return invoke.call(handler, arguments, ctx, call.cancel)

    try:
        if handler.plain and mrtr.no_input_round(call):
            value = handler.fn(**arguments)  # the common case: no Context, no input round
        else:
            value = mrtr.run_with_input(call, tool.name, arguments, run, handler)
            if isinstance(value, mrtr.InputRequiredResult):
                return dict(value)
        result = content.tool_result(value, structured=tool.structured)
    except (RpcError, InputRequired):
        raise
    except content.ToolError as exc:
        return content.error_result(str(exc))
    except Exception as exc:
        logger().warning("tool %r raised %s: %s", tool.name, type(exc).__name__, exc)
        return content.error_result(str(exc) or type(exc).__name__)
    checker = tool._output or tool.output_validator()
    if checker is not None and not result["isError"] and not checker.is_valid(result.get("structuredContent")):
        problems = checker.validate(result.get("structuredContent"))
        if problems:
            detail = "; ".join(p.message for p in problems)
            raise RpcError.internal_error(f"tool {tool.name!r} broke its outputSchema: {detail}")
    return result


def _coerce_integers(names: frozenset[str], arguments: dict[str, Any]) -> dict[str, Any]:
    """Integral floats become ints where the schema says integer (3.0 -> 3)."""
    fixed = arguments
    for key in names:
        value = arguments.get(key)
        if type(value) is float and value.is_integer():
            if fixed is arguments:
                fixed = dict(arguments)
            fixed[key] = int(value)
    return fixed


# ---- resources --------------------------------------------------------------------------------
def _not_found(call: Call, uri: str) -> RpcError:
    code = INVALID_PARAMS if call.era == MODERN else mcp.LEGACY_RESOURCE_NOT_FOUND
    return RpcError(code, f"Resource not found: {uri}", {"uri": uri})


def resources_read(call: Call) -> dict[str, Any]:
    uri = _param(call, "uri", str)
    found = call.registry.find_resource(uri)
    if found is None:
        raise _not_found(call, uri)
    definition, variables = found
    handler: Handler = definition.handler

    def run(ctx: Context | None) -> Any:
        return invoke.call(handler, variables, ctx, call.cancel)

    try:
        value = mrtr.run_with_input(call, uri, variables, run, handler)
    except ResourceNotFound as exc:
        raise _not_found(call, exc.uri) from exc
    except RpcError:
        raise
    except Exception as exc:
        logger().warning("resource %r raised %s: %s", uri, type(exc).__name__, exc)
        raise RpcError(INTERNAL_ERROR, f"Internal error reading {uri} (see the server log)") from exc
    if isinstance(value, mrtr.InputRequiredResult):
        return dict(value)
    mime = definition.mime_type
    if isinstance(definition, TemplateDef):
        mime = definition.mime_type
    return {"contents": content.resource_contents(uri, value, mime)}


def resources_subscribe(call: Call) -> dict[str, Any]:
    call.conn.subscriptions.add(_param(call, "uri", str))
    return {}


def resources_unsubscribe(call: Call) -> dict[str, Any]:
    call.conn.subscriptions.discard(_param(call, "uri", str))
    return {}


# ---- prompts ------------------------------------------------------------------------------------
def prompts_get(call: Call) -> dict[str, Any]:
    name = _param(call, "name", str)
    prompt = call.registry.get_prompt(name)
    if prompt is None:
        raise RpcError.invalid_params(f"unknown prompt {name!r}")
    arguments = _param(call, "arguments", dict, required=False) or {}
    bad = sorted(key for key, value in arguments.items() if not isinstance(value, str))
    if bad:
        raise RpcError.invalid_params(f"prompt arguments must be strings: {', '.join(bad)}")
    missing = sorted(prompt.required - arguments.keys())
    if missing:
        raise RpcError.invalid_params(f"missing required argument(s): {', '.join(missing)}")
    known = {arg["name"] for arg in prompt.wire.get("arguments", ())}
    if not prompt.handler.takes_kwargs:
        arguments = {key: value for key, value in arguments.items() if key in known}
    try:
        arguments = prompt.handler.convert(arguments)
    except ValueError as exc:
        raise RpcError.invalid_params(f"{exc}") from exc

    def run(ctx: Context | None) -> Any:
        return invoke.call(prompt.handler, arguments, ctx, call.cancel)

    try:
        value = mrtr.run_with_input(call, name, arguments, run, prompt.handler)
        if isinstance(value, mrtr.InputRequiredResult):
            return dict(value)
        messages, description = content.prompt_messages(value)
    except RpcError:
        raise
    except Exception as exc:
        logger().warning("prompt %r raised %s: %s", name, type(exc).__name__, exc)
        raise RpcError(INTERNAL_ERROR, f"Internal error in prompt {name!r} (see the server log)") from exc
    result: dict[str, Any] = {"messages": messages}
    description = description or prompt.wire.get("description")
    if description:
        result["description"] = description
    return result


# ---- completion ---------------------------------------------------------------------------------
def completion_complete(call: Call) -> dict[str, Any]:
    ref = _param(call, "ref", dict)
    argument = _param(call, "argument", dict)
    arg_name, value = argument.get("name"), argument.get("value", "")
    if not isinstance(arg_name, str) or not isinstance(value, str):
        raise RpcError.invalid_params('"argument" needs string "name" and "value"')
    ref_type = ref.get("type")
    key = ref.get("name") if ref_type == "ref/prompt" else ref.get("uri")
    if ref_type not in ("ref/prompt", "ref/resource") or not isinstance(key, str):
        raise RpcError.invalid_params("ref must be ref/prompt with a name or ref/resource with a uri")
    registry = call.registry
    if ref_type == "ref/prompt" and registry.get_prompt(key) is None:
        raise RpcError.invalid_params(f"unknown prompt {key!r}")
    completer = registry.get_completer(ref_type, key)
    context_args = (call.params.get("context") or {}).get("arguments") or {}
    values: list[str] = []
    total: int | None = None
    has_more = False
    if completer is not None:
        try:
            found = completer(arg_name, value, context_args)
        except Exception as exc:
            logger().warning("completion for %r raised %s: %s", key, type(exc).__name__, exc)
            raise RpcError(INTERNAL_ERROR, "Internal error in completion (see the server log)") from exc
        if isinstance(found, dict):
            values = list(found.get("values", []))
            total, has_more = found.get("total"), bool(found.get("hasMore", False))
        else:
            values = list(found or [])
    if len(values) > 100:
        total, has_more, values = total or len(values), True, values[:100]
    completion: dict[str, Any] = {"values": [str(v) for v in values], "hasMore": has_more}
    if total is not None:
        completion["total"] = total
    return {"completion": completion}


# ---- era-specific methods -------------------------------------------------------------------------
def server_discover(call: Call) -> dict[str, Any]:
    registry = call.registry
    result: dict[str, Any] = {
        "supportedVersions": list(mcp.MODERN_VERSIONS),
        "capabilities": call.view.capabilities(MODERN),
    }
    if registry.instructions:
        result["instructions"] = registry.instructions
    return result


def initialize(call: Call) -> dict[str, Any]:
    conn = call.conn
    conn.version = mcp.negotiate_legacy(call.params.get("protocolVersion"))
    capabilities = call.params.get("capabilities")
    conn.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
    info = call.params.get("clientInfo")
    conn.client_info = info if isinstance(info, dict) else None
    registry = call.registry
    capabilities_offered = call.view.capabilities(LEGACY, conn.version)
    result: dict[str, Any] = {
        "protocolVersion": conn.version,
        "capabilities": capabilities_offered,
        "serverInfo": registry.server_info(),
    }
    if registry.instructions:
        result["instructions"] = registry.instructions
    return result


def ping(call: Call) -> dict[str, Any]:
    return {}


def set_level(call: Call) -> dict[str, Any]:
    level = call.params.get("level")
    if level not in mcp.LOG_LEVEL_RANK:
        raise RpcError.invalid_params(f"unknown log level {level!r}")
    call.conn.log_level = level
    return {}


_CORE_ROWS: tuple[tuple[str, Callable[[Call], dict[str, Any]], tuple[str, ...], str | None], ...] = (
    ("server/discover", server_discover, (MODERN,), None),
    ("initialize", initialize, (LEGACY,), None),
    ("ping", ping, (LEGACY,), None),
    ("logging/setLevel", set_level, (LEGACY,), "logging"),
    ("resources/subscribe", resources_subscribe, (LEGACY,), "resources"),
    ("resources/unsubscribe", resources_unsubscribe, (LEGACY,), "resources"),
    ("tools/list", tools_list, mcp.ERAS, "tools"),
    ("tools/call", tools_call, mcp.ERAS, "tools"),
    ("resources/list", resources_list, mcp.ERAS, "resources"),
    ("resources/templates/list", templates_list, mcp.ERAS, "resources"),
    ("resources/read", resources_read, mcp.ERAS, "resources"),
    ("prompts/list", prompts_list, mcp.ERAS, "prompts"),
    ("prompts/get", prompts_get, mcp.ERAS, "prompts"),
    ("completion/complete", completion_complete, mcp.ERAS, "completions"),
)
# The core method table, (method, era) -> row: each dispatcher starts from a copy and adds its
# extensions' rows. Never changed at run time.
METHODS: MethodTable = {
    (name, era): Method(fn, needs) for name, fn, eras, needs in _CORE_ROWS for era in eras
}


def _on_cancelled(conn: Connection, params: dict[str, Any]) -> None:
    conn.cancel(params.get("requestId"))


def _on_initialized(conn: Connection, params: dict[str, Any]) -> None:
    conn.initialized = True


NOTIFICATIONS: dict[str, Callable[[Connection, dict[str, Any]], None]] = {
    "notifications/cancelled": _on_cancelled,
    "notifications/initialized": _on_initialized,
}
