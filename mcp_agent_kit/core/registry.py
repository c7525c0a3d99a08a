"""registry: what a server offers — tools, resources, templates, prompts, completions.

Decorators and explicit registration build immutable definitions; every list is served in a
deterministic order (by name or URI) whatever the registration order. A raw tool (add_raw_tool:
a JSON schema and `fn(ctx, arguments)`) serves a schema that comes as data (a gateway's relayed
tools) without a Python signature to derive it from. Rules: no protocol
dispatch, no transports, no eras; change listeners are plain callables.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from mcp_agent_kit.core.handler import Handler as Handler  # re-exported: methods, mrtr, invoke
from mcp_agent_kit.core.signature import docstring_summary, parameters_schema

if TYPE_CHECKING:
    from mcp_agent_kit.core.context import Context

F = TypeVar("F", bound=Callable[..., Any])
RawToolFn = Callable[["Context", dict[str, Any]], Any]
"""A raw tool's function (add_raw_tool): fn(ctx, arguments) -> a tool's result."""
ListKind = Literal["tools", "resources", "resourceTemplates", "prompts"]
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_HINTS = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}


class ResourceNotFound(LookupError):
    """Raise from a resource handler when the URI names nothing; becomes the era's not-found error."""

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}")
        self.uri = uri


class ToolDef:
    """A registered tool: its wire definition, handler and compiled validators."""

    __slots__ = (
        "_input", "_output", "as_is", "handler", "integer_args", "long_running", "name", "structured", "wire",
        "wrapped",
    )

    def __init__(self, name: str, wire: dict[str, Any], handler: Handler, long_running: bool = False) -> None:
        self.name = name
        self.wire = wire
        self.handler = handler
        self.long_running = long_running
        self.wrapped = False  # outputSchema inferred as {"result": ...} around a non-object return type
        self.structured = "outputSchema" in wire
        props = wire["inputSchema"].get("properties")
        # Top-level arguments the schema types as integer: an integral float there becomes an int.
        self.integer_args = frozenset(
            key for key, sub in props.items() if isinstance(sub, dict) and sub.get("type") == "integer"
        ) if isinstance(props, dict) else frozenset()
        # Valid arguments reach the handler unchanged: nothing to convert, and the schema admits
        # no name the function lacks (so Handler.convert would have nothing to drop).
        accepts = handler.accepts
        closed = wire["inputSchema"].get("additionalProperties") is False and isinstance(props, dict)
        self.as_is = not handler.converters and (accepts is None or (closed and accepts.issuperset(props or {})))
        self._input: Any = None
        self._output: Any = None

    @property
    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = self.wire["inputSchema"]
        return schema

    def validator(self) -> Any:
        """The compiled input validator, built on first use."""
        if self._input is None:
            from mcp_agent_kit.core.schema import compile_schema

            self._input = compile_schema(self.input_schema)
        return self._input

    def output_validator(self) -> Any:
        if self._output is not None:
            return self._output
        schema = self.wire.get("outputSchema")
        if schema is None:
            return None
        if self._output is None:
            from mcp_agent_kit.core.schema import compile_schema

            self._output = compile_schema(schema)
        return self._output


class ResourceDef:
    __slots__ = ("handler", "mime_type", "uri", "wire")

    def __init__(self, uri: str, wire: dict[str, Any], handler: Handler, mime_type: str | None) -> None:
        self.uri = uri
        self.wire = wire
        self.handler = handler
        self.mime_type = mime_type


class TemplateDef:
    __slots__ = ("handler", "mime_type", "pattern", "template", "wire")

    def __init__(
        self, template: str, wire: dict[str, Any], handler: Handler, mime_type: str | None, pattern: re.Pattern[str]
    ) -> None:
        self.template = template
        self.wire = wire
        self.handler = handler
        self.mime_type = mime_type
        self.pattern = pattern

    def match(self, uri: str) -> dict[str, Any] | None:
        """The template's variables in uri, converted as the handler's hints say (`item_id: int`
        receives an int); None when uri does not match or a value does not convert."""
        found = self.pattern.fullmatch(uri)
        if found is None:
            return None
        variables = found.groupdict()
        if not self.handler.converters:
            return variables
        try:
            return self.handler.convert(variables)
        except ValueError:
            return None


class PromptDef:
    __slots__ = ("handler", "name", "required", "wire")

    def __init__(self, name: str, wire: dict[str, Any], handler: Handler, required: frozenset[str]) -> None:
        self.name = name
        self.wire = wire
        self.handler = handler
        self.required = required


Completer = Callable[..., Any]


def template_pattern(template: str) -> re.Pattern[str]:
    """Compile an RFC 6570 level-1 template (`{var}`, plus `{+var}` for reserved expansion)."""
    parts: list[str] = []
    pos = 0
    for found in re.finditer(r"\{(\+?)([A-Za-z0-9_]+)\}", template):
        parts.append(re.escape(template[pos : found.start()]))
        parts.append(f"(?P<{found.group(2)}>{'.+' if found.group(1) else '[^/?#]+'})")
        pos = found.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts))


def _clean(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not None}


class Registry:
    """The definitions one server serves, with change notification."""

    relayed_methods: frozenset[str] = frozenset()
    """Methods whose handlers wait on another server (a gateway's proxies): transports run them
    where a wait costs no request worker (the HTTP engine's stream threads)."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        page_size: int = 100,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
        secret: bytes | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.name = name
        self.version = version
        self.title = title
        self.description = description
        self.instructions = instructions
        self.website_url = website_url
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.secret = secret or os.urandom(32)
        self._lock = threading.Lock()
        self._tools: dict[str, ToolDef] = {}
        self._resources: dict[str, ResourceDef] = {}
        self._templates: dict[str, TemplateDef] = {}
        self._prompts: dict[str, PromptDef] = {}
        self._completers: dict[tuple[str, str], Completer] = {}
        self._sorted: dict[str, tuple[Any, ...]] = {}
        self._listeners: list[Callable[[str, str | None], None]] = []
        self.task_policies: dict[str, Any] = {}  # tool name -> core.task_table.Policy (task_tool)

    # ---- identity -------------------------------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        return _clean(
            {
                "name": self.name,
                "version": self.version,
                "title": self.title,
                "description": self.description,
                "websiteUrl": self.website_url,
            }
        )

    # ---- tools ----------------------------------------------------------------------------
    def tool(
        self,
        fn: F | None = None,
        /,
        **options: Any,
    ) -> Any:
        """Register a tool: `@server.tool` or `@server.tool(name=..., read_only=True, ...)`."""
        if fn is not None:
            self.add_tool(fn, **options)
            return fn

        def decorate(inner: F) -> F:
            self.add_tool(inner, **options)
            return inner

        return decorate

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | Literal[False] | None = None,
        annotations: dict[str, Any] | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        long_running: bool = False,
    ) -> ToolDef:
        from mcp_agent_kit.core import typed

        handler = Handler.wrap(fn)
        tool_name = name or fn.__name__
        if not TOOL_NAME.fullmatch(tool_name):
            raise ValueError(f"invalid tool name {tool_name!r}: use 1-128 of A-Z a-z 0-9 _ - .")
        skip = frozenset({handler.context_arg}) if handler.context_arg else frozenset()
        if input_schema is None:
            try:
                input_schema, _ = parameters_schema(fn, skip, strict=True)
            except ValueError as exc:
                hint = "annotate it with a JSON type or pass input_schema="
                raise ValueError(f"tool {tool_name!r}: {exc}; {hint}") from exc
        wrapped = False
        if output_schema is None:  # inferred from the return annotation; False: none at all
            output_schema, wrapped = typed.output_schema(fn)
        elif output_schema is False:
            output_schema = None
        handler.fn = typed.tool_function(fn, handler.is_async, skip, wrapped, output_schema is not None)
        if input_schema.get("type") != "object":
            raise ValueError(f"tool {tool_name!r}: inputSchema must have type 'object'")
        hints = dict(annotations or {})
        for option, key in _HINTS.items():
            value = locals()[option]
            if value is not None:
                hints[key] = value
        wire = _clean(
            {
                "name": tool_name,
                "title": title,
                "description": description or docstring_summary(fn),
                "inputSchema": input_schema,
                "outputSchema": output_schema,
                "annotations": hints or None,
                "icons": icons,
                "_meta": meta,
            }
        )
        definition = ToolDef(tool_name, wire, handler, long_running)
        definition.wrapped = wrapped
        self._put(self._tools, tool_name, definition, "tools")
        return definition

    def add_raw_tool(self, name: str, input_schema: dict[str, Any], fn: RawToolFn, *, title: str | None = None,
                     description: str | None = None, annotations: dict[str, Any] | None = None,
                     icons: list[dict[str, Any]] | None = None, meta: dict[str, Any] | None = None,
                     long_running: bool = False, output_schema: dict[str, Any] | None = None) -> ToolDef:
        """Register a tool given as JSON: `input_schema` is served as is, and `fn(ctx, arguments)` (sync or
        async) gets the validated arguments as one dict (its keys are not parameter names, so any name is
        fine) and a Context; it returns what a tool returns (a ToolResult, content, a value). An
        `output_schema` is served too and checked against each result's structuredContent."""
        import inspect

        if not TOOL_NAME.fullmatch(name):
            raise ValueError(f"invalid tool name {name!r}: use 1-128 of A-Z a-z 0-9 _ - .")
        if input_schema.get("type") != "object":
            raise ValueError(f"tool {name!r}: inputSchema must have type 'object'")
        wire = _clean({"name": name, "title": title, "description": description, "inputSchema": input_schema,
                       "outputSchema": output_schema, "annotations": annotations or None, "icons": icons,
                       "_meta": meta})
        handler = Handler(fn, "ctx", True, inspect.iscoroutinefunction(fn))
        handler.raw = True
        definition = ToolDef(name, wire, handler, long_running)
        self._put(self._tools, name, definition, "tools")
        return definition

    def remove_tool(self, name: str) -> None:
        self._drop(self._tools, name, "tools")

    def get_tool(self, name: str) -> ToolDef | None:
        return self._tools.get(name)

    # ---- resources and templates -----------------------------------------------------------
    def resource(self, uri: str, **options: Any) -> Callable[[F], F]:
        """Register a resource, or a template when the URI contains `{var}`."""

        def decorate(fn: F) -> F:
            self.add_resource(uri, fn, **options)
            return fn

        return decorate

    def add_resource(
        self,
        uri: str,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ResourceDef | TemplateDef:
        handler = Handler.wrap(fn)
        common = {
            "name": name or fn.__name__,
            "title": title,
            "description": description or docstring_summary(fn),
            "mimeType": mime_type,
            "annotations": annotations,
            "icons": icons,
            "_meta": meta,
        }
        if "{" in uri:
            wire = _clean({"uriTemplate": uri, **common})
            template = TemplateDef(uri, wire, handler, mime_type, template_pattern(uri))
            self._put(self._templates, uri, template, "resourceTemplates")
            return template
        wire = _clean({"uri": uri, **common, "size": size})
        resource = ResourceDef(uri, wire, handler, mime_type)
        self._put(self._resources, uri, resource, "resources")
        return resource

    def remove_resource(self, uri: str) -> None:
        table: dict[str, Any] = self._templates if "{" in uri else self._resources
        self._drop(table, uri, "resourceTemplates" if "{" in uri else "resources")

    def find_resource(self, uri: str) -> tuple[ResourceDef | TemplateDef, dict[str, Any]] | None:
        """The static resource for uri, else the first template (in sorted order) matching it."""
        static = self._resources.get(uri)
        if static is not None:
            return static, {}
        for template in self.listing("resourceTemplates"):
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None

    # ---- prompts ---------------------------------------------------------------------------
    def prompt(self, fn: F | None = None, /, **options: Any) -> Any:
        """Register a prompt: `@server.prompt` or `@server.prompt(name=..., description=...)`."""
        if fn is not None:
            self.add_prompt(fn, **options)
            return fn

        def decorate(inner: F) -> F:
            self.add_prompt(inner, **options)
            return inner

        return decorate

    def add_prompt(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        arguments: list[dict[str, Any]] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> PromptDef:
        handler = Handler.wrap(fn)
        if arguments is None:
            skip = frozenset({handler.context_arg}) if handler.context_arg else frozenset()
            schema, _ = parameters_schema(fn, skip)
            required = set(schema.get("required", ()))
            arguments = [
                _clean({"name": arg, "description": prop.get("description"), "required": arg in required})
                for arg, prop in schema["properties"].items()
            ]
        prompt_name = name or fn.__name__
        wire = _clean(
            {
                "name": prompt_name,
                "title": title,
                "description": description or docstring_summary(fn),
                "arguments": arguments,
                "icons": icons,
                "_meta": meta,
            }
        )
        required_args = frozenset(arg["name"] for arg in arguments if arg.get("required"))
        definition = PromptDef(prompt_name, wire, handler, required_args)
        self._put(self._prompts, prompt_name, definition, "prompts")
        return definition

    def remove_prompt(self, name: str) -> None:
        self._drop(self._prompts, name, "prompts")

    def get_prompt(self, name: str) -> PromptDef | None:
        return self._prompts.get(name)

    # ---- completions -----------------------------------------------------------------------
    def completion(self, *, prompt: str | None = None, resource: str | None = None) -> Callable[[F], F]:
        """Register `fn(argument, value, context) -> list[str]` for a prompt or a resource template."""
        if (prompt is None) == (resource is None):
            raise ValueError("give exactly one of prompt= or resource=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", str(resource))

        def decorate(fn: F) -> F:
            with self._lock:
                self._completers[key] = fn
            return fn

        return decorate

    def get_completer(self, ref_type: str, ref: str) -> Completer | None:
        return self._completers.get((ref_type, ref))

    @property
    def has_completions(self) -> bool:
        return bool(self._completers)

    # ---- listings and change notification ---------------------------------------------------
    def listing(self, kind: ListKind) -> tuple[Any, ...]:
        """The definitions of one kind, sorted by name/URI (a cached immutable snapshot)."""
        cached = self._sorted.get(kind)
        if cached is None:
            table = self._table(kind)
            with self._lock:
                cached = tuple(table[key] for key in sorted(table))
                self._sorted[kind] = cached
        return cached

    def has(self, kind: ListKind) -> bool:
        return bool(self._table(kind))

    def on_change(self, listener: Callable[[str, str | None], None]) -> Callable[[], None]:
        """Call listener(kind, uri) on list changes (uri None) and resource updates; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def notify_resource_updated(self, uri: str) -> None:
        self._emit("resources/updated", uri)

    def _table(self, kind: ListKind) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "tools": self._tools,
            "resources": self._resources,
            "resourceTemplates": self._templates,
            "prompts": self._prompts,
        }
        return tables[kind]

    def _put(self, table: dict[str, Any], key: str, value: Any, kind: str) -> None:
        with self._lock:
            if key in table:
                raise ValueError(f"{kind}: {key!r} is already registered; remove it first to replace it")
            table[key] = value
            self._sorted.pop(kind, None)
        self._emit(kind, None)

    def _drop(self, table: dict[str, Any], key: str, kind: str) -> None:
        with self._lock:
            if table.pop(key, None) is None:
                raise KeyError(key)
            self._sorted.pop(kind, None)
        self._emit(kind, None)

    def _emit(self, kind: str, uri: str | None) -> None:
        for listener in list(self._listeners):
            listener(kind, uri)

    def definitions(self, kind: ListKind) -> Iterable[dict[str, Any]]:
        return (item.wire for item in self.listing(kind))
