"""gateway: serve the merged namespace of many MCP servers as one MCP server.

The config is the `mcpServers` object Claude Desktop and mcp.json use (stdio `command`, `args`,
`env`, `cwd`; or `url` with optional `headers`; plus our `allowLegacy`). Backends are probed
concurrently; their tools, prompts and resources are merged (client.merge) and registered on a
`Server` as proxies with the backend's own schemas; the lists are offered (maybe empty) even
while every backend is down. A failing backend shows up as an isError
result naming it, and is reconnected on its next use; one dead backend never takes the others
down. Rules: the only client module that builds a Server; no protocol logic of its own.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.client import Client
from mcp_agent_kit.client.inputs import ClientError, InputAnswerer
from mcp_agent_kit.client.merge import merge_names, merge_uris
from mcp_agent_kit.client.watch import ListWatcher
from mcp_agent_kit.core import content
from mcp_agent_kit.core.content import ToolResult
from mcp_agent_kit.core.context import Context, InputRequired
from mcp_agent_kit.server import Server
from mcp_agent_kit.wire.jsonrpc import RpcError

if TYPE_CHECKING:
    from mcp_agent_kit.core.registry import ListKind

log = logging.getLogger("mcp_agent_kit.gateway")
_VARIABLE = re.compile(r"\{([^}]+)\}")
_FAILURES = (PeerError, RpcError, ClientError, ValueError)


class ConfigError(ValueError):
    """The gateway config file is missing or malformed."""


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{what} must be a list of strings")
    return list(value)


def _string_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{what} must be an object of strings")
    return dict(value)


def parse_config(data: Any) -> dict[str, dict[str, Any]]:
    """{alias: normalised server spec} from a parsed mcpServers document."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise ConfigError('the config needs a non-empty "mcpServers" object')
    out: dict[str, dict[str, Any]] = {}
    for alias, spec in servers.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"server {alias!r}: expected an object")
        entry: dict[str, Any] = {"allowLegacy": bool(spec.get("allowLegacy", False))}
        if isinstance(spec.get("url"), str):
            entry["url"] = spec["url"]
            entry["headers"] = _string_map(spec.get("headers", {}), f"server {alias!r} headers")
        elif isinstance(spec.get("command"), str):
            entry["command"] = spec["command"]
            entry["args"] = _strings(spec.get("args", []), f"server {alias!r} args")
            entry["env"] = _string_map(spec.get("env", {}), f"server {alias!r} env")
            if spec.get("cwd") is not None and not isinstance(spec.get("cwd"), str):
                raise ConfigError(f"server {alias!r}: cwd must be a string")
            entry["cwd"] = spec.get("cwd")
        else:
            raise ConfigError(f'server {alias!r}: needs "command" (stdio) or "url" (HTTP)')
        out[str(alias)] = entry
    return out


def load_config(path: str) -> dict[str, dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"{path} is not JSON: {exc}") from exc
    return parse_config(data)


class _Relay:
    """Answers a backend's questions during one proxied call by asking our own caller.

    A modern backend asks inside its result, on the proxy's own thread: the caller's answer or
    its InputRequired (modern caller, first round) flows through as is. A handshake-era backend
    asks with a request of its own, answered on a channel thread while the proxy waits; a
    legacy caller is asked right away (Context.forward blocks for its answer), but a modern
    caller answers only in a later round. Then the backend's question is declined (elicitation:
    "cancel"; others: an error), its call is abandoned when it ends, and the proxy raises the
    InputRequired after all; on the retry the same question finds its answer in the round's
    replay, exactly as a tool of our own is re-run under MRTR.
    """

    def __init__(self, context: Context) -> None:
        self.context = context
        self.thread = threading.current_thread()
        self.pending: InputRequired | None = None
        declared = context.client_capabilities or {}
        asker = {kind: self._asker(method) if kind in declared else None for method, kind in _RELAYED.items()}
        self.answerer = InputAnswerer(asker["elicitation"], asker["sampling"], asker["roots"])

    def _asker(self, method: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def ask(params: dict[str, Any]) -> dict[str, Any]:
            try:
                return self.context.forward(method, params)
            except InputRequired as need:  # the caller answers in its next round
                if threading.current_thread() is self.thread:
                    raise  # a modern backend's question: the proxy unwinds with it
                self.pending = self.pending or need
                if method == "elicitation/create":
                    return {"action": "cancel"}
                raise ClientError("the question was passed on to the gateway's caller; ask again") from None

        return ask

    def raise_pending(self) -> None:
        if self.pending is not None:
            raise self.pending


_RELAYED = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
_Add = Callable[["Backend", dict[str, Any], str], None]


def _no_caller(params: dict[str, Any]) -> dict[str, Any]:
    raise ClientError("the gateway asks its caller only while one of its tool calls runs")


class Backend:
    """One configured server: its client and what it offers."""

    def __init__(self, alias: str, spec: dict[str, Any], timeout: float) -> None:
        self.alias = alias
        # Declared so that a handshake-era backend may ask during a call (its capabilities are fixed
        # at initialize); a question outside any call is refused.
        options: dict[str, Any] = {
            "timeout": timeout, "allow_legacy": spec["allowLegacy"], "elicitation": _no_caller, "sampling": _no_caller,
        }
        if "url" in spec:
            self.client = Client.http(spec["url"], spec["headers"], **options)
        else:
            self.client = Client.stdio(spec["command"], spec["args"], env=spec["env"], cwd=spec["cwd"], **options)
        self.error: str | None = None
        self.broken = False
        self.tools: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.templates: list[dict[str, Any]] = []
        self.watcher: ListWatcher | None = None
        self.on_reconnect: Callable[[Backend], None] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        try:
            self.client.connect()
            for kind in ("tools", "prompts", "resources"):
                self.refresh(kind)
        except _FAILURES as exc:
            self.error = str(exc)
            self.broken = True
            log.warning("backend %r is unavailable: %s", self.alias, exc)

    def refresh(self, kind: str) -> None:
        """List one kind again (raises the client's errors)."""
        caps = self.client.verdict.capabilities if self.client.verdict else {}
        if kind == "tools":
            self.tools = self.client.list_tools() if "tools" in caps else []
        elif kind == "prompts":
            self.prompts = self.client.list_prompts() if "prompts" in caps else []
        elif "resources" in caps:
            self.resources = self.client.list_resources()
            self.templates = self.client.list_resource_templates()

    def watch(self, changed: Callable[[Backend, str], None]) -> None:
        """Report this backend's list changes (again after a reconnect)."""
        if self.broken:
            return
        self.watcher = ListWatcher(self.client, lambda kind: changed(self, kind))
        try:
            self.watcher.start()
        except _FAILURES as exc:
            log.info("cannot follow %r's list changes: %s", self.alias, exc)

    def use(self) -> Client:
        """The client, reconnected first if the last use found the backend dead."""
        with self._lock:
            if self.broken:
                self.client.channel.restart()
                self.client.verdict = None
                self.client.connect()
                self.broken = False
                if self.on_reconnect is not None:
                    self.on_reconnect(self)
            return self.client

    def failed(self, exc: Exception) -> ToolResult:
        if isinstance(exc, PeerError):
            self.broken = True
        return ToolResult([content.text(f"backend {self.alias!r} failed: {exc}")], is_error=True)


class GatewayServer(Server):
    """The merged server: it always offers tools, prompts and resources, so that `tools/list` (and
    the other lists) answers an empty list, not -32601, while every backend is down or offers none;
    the lists fill in when a backend comes (back) up."""

    def has(self, kind: ListKind) -> bool:
        return kind in ("tools", "prompts", "resources") or super().has(kind)


class Gateway:
    """Probe every backend concurrently, merge, and expose the result as `self.server`."""

    def __init__(
        self,
        config: dict[str, dict[str, Any]],
        *,
        timeout: float = 5.0,
        separator: str = ".",
        name: str = "mcp-agent-kit-gateway",
    ) -> None:
        self.backends = {alias: Backend(alias, spec, timeout) for alias, spec in config.items()}
        self.separator = separator
        self.server = GatewayServer(name)
        self._conflicts: dict[str, list[str]] = {}
        # What is registered now, per kind: public name or URI -> fingerprint of its source.
        self._installed: dict[str, dict[str, str]] = {"tools": {}, "prompts": {}, "resources": {}}
        self._sync_lock = threading.Lock()
        self._dirty: set[tuple[str, str]] = set()
        self._wake = threading.Event()
        self._closed = threading.Event()

    @property
    def conflicts(self) -> list[str]:
        return [conflict for kind in sorted(self._conflicts) for conflict in self._conflicts[kind]]

    def start(self, *, follow: bool = True) -> None:
        """Probe every backend, register the merged namespace; with follow, keep it current when
        a backend says one of its lists changed (our own clients then hear of it in turn)."""
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(self.backends)))) as pool:
            list(pool.map(lambda backend: backend.start(), self.backends.values()))
        for kind in ("tools", "prompts", "resources"):
            self._sync(kind)
        for conflict in self.conflicts:
            log.warning("%s", conflict)
        if follow:
            threading.Thread(target=self._follow, name="mcp-gateway-sync", daemon=True).start()
            for backend in self.backends.values():
                backend.on_reconnect = self._reconnected
                backend.watch(self._changed)

    def close(self) -> None:
        self._closed.set()
        self._wake.set()
        for backend in self.backends.values():
            if backend.watcher is not None:
                backend.watcher.stop()
            backend.client.close()

    # ---- following backends' list changes ---------------------------------------------------------
    def _changed(self, backend: Backend, kind: str) -> None:
        """A backend's list changed (on its transport's thread: just note it)."""
        with self._sync_lock:
            self._dirty.add((backend.alias, kind))
        self._wake.set()

    def _reconnected(self, backend: Backend) -> None:
        backend.watch(self._changed)
        for kind in ("tools", "prompts", "resources"):
            self._changed(backend, kind)

    def _follow(self) -> None:
        while not self._closed.is_set():
            self._wake.wait()
            self._wake.clear()
            with self._sync_lock:
                dirty, self._dirty = self._dirty, set()
            for alias, kind in sorted(dirty):
                try:
                    self.backends[alias].refresh(kind)
                except _FAILURES as exc:
                    log.warning("could not list %s of backend %r again: %s", kind, alias, exc)
            for kind in sorted({kind for _, kind in dirty}):
                self._sync(kind)

    def _sync(self, kind: str) -> None:
        """Make the registered `kind` match the backends' current lists: add, replace, remove."""
        desired, add, remove = {
            "tools": self._desired_tools, "prompts": self._desired_prompts, "resources": self._desired_resources,
        }[kind]()
        with self._sync_lock:
            installed = self._installed[kind]
            for key in [key for key in installed if key not in desired]:
                remove(key)
                del installed[key]
            for key, (backend, entry) in desired.items():
                mark = backend.alias + "\0" + json.dumps(entry, sort_keys=True, default=str)
                if installed.get(key) != mark:
                    add(backend, entry, key)
                    installed[key] = mark

    # ---- tools -------------------------------------------------------------------------------------
    def _desired_tools(self) -> tuple[dict[str, tuple[Backend, dict[str, Any]]], _Add, Callable[[str], None]]:
        offers = {alias: [t["name"] for t in b.tools] for alias, b in self.backends.items()}
        merged = merge_names(offers, self.separator)
        self._conflicts["tools"] = merged.conflicts
        desired = {}
        for alias, backend in self.backends.items():
            for tool in backend.tools:
                public = merged.merged_name(alias, tool["name"])
                if public is not None:
                    desired[public] = (backend, tool)
        return desired, self._add_tool, self.server.remove_tool

    def _add_tool(self, backend: Backend, tool: dict[str, Any], public: str) -> None:
        original = tool["name"]

        def proxy(_gateway_context: Context, **arguments: Any) -> ToolResult:
            def forward(progress: float, total: float | None, message: str | None) -> None:
                _gateway_context.progress(progress, total, message)

            relay = _Relay(_gateway_context)
            try:
                result = backend.use().call_tool(original, arguments, progress=forward, inputs=relay.answerer)
            except _FAILURES as exc:
                relay.raise_pending()
                return backend.failed(exc)
            relay.raise_pending()
            blocks = result.get("content")
            return ToolResult(
                blocks if isinstance(blocks, list) else [],
                structured=result.get("structuredContent"),
                is_error=bool(result.get("isError")),
            )

        self.server.add_tool(
            proxy,
            name=public,
            title=tool.get("title"),
            description=tool.get("description") or f"{original} on {backend.alias}",
            input_schema=tool["inputSchema"],
            annotations=tool.get("annotations"),
            icons=tool.get("icons"),
        )

    # ---- prompts ------------------------------------------------------------------------------------
    def _desired_prompts(self) -> tuple[dict[str, tuple[Backend, dict[str, Any]]], _Add, Callable[[str], None]]:
        offers = {
            alias: [p["name"] for p in b.prompts if isinstance(p.get("name"), str)]
            for alias, b in self.backends.items()
        }
        merged = merge_names(offers, self.separator)
        self._conflicts["prompts"] = merged.conflicts
        desired = {}
        for alias, backend in self.backends.items():
            for prompt in backend.prompts:
                public = merged.merged_name(alias, str(prompt.get("name")))
                if public is not None:
                    desired[public] = (backend, prompt)
        return desired, self._add_prompt, self.server.remove_prompt

    def _add_prompt(self, backend: Backend, prompt: dict[str, Any], public: str) -> None:
        original = prompt["name"]

        def proxy(**arguments: Any) -> dict[str, Any]:
            try:
                return backend.use().get_prompt(original, {k: str(v) for k, v in arguments.items()})
            except PeerError as exc:
                backend.broken = True
                raise RpcError(-32603, f"backend {backend.alias!r} failed: {exc}") from exc

        arguments = prompt.get("arguments")
        self.server.add_prompt(
            proxy,
            name=public,
            title=prompt.get("title"),
            description=prompt.get("description") or f"{original} on {backend.alias}",
            arguments=[a for a in arguments if isinstance(a, dict)] if isinstance(arguments, list) else [],
        )

    # ---- resources ----------------------------------------------------------------------------------
    def _desired_resources(self) -> tuple[dict[str, tuple[Backend, dict[str, Any]]], _Add, Callable[[str], None]]:
        statics = {
            alias: [r["uri"] for r in b.resources if isinstance(r.get("uri"), str)]
            for alias, b in self.backends.items()
        }
        route, conflicts = merge_uris(statics)
        templates = {
            alias: [t["uriTemplate"] for t in b.templates if isinstance(t.get("uriTemplate"), str)]
            for alias, b in self.backends.items()
        }
        template_route, template_conflicts = merge_uris(templates)
        self._conflicts["resources"] = conflicts + template_conflicts
        desired = {}
        for alias, backend in self.backends.items():
            for entry in backend.resources:
                if route.get(entry.get("uri", "")) == alias:
                    desired[entry["uri"]] = (backend, entry)
            for entry in backend.templates:
                if template_route.get(entry.get("uriTemplate", "")) == alias:
                    desired[entry["uriTemplate"]] = (backend, entry)
        return desired, self._add_resource, self.server.remove_resource

    def _add_resource(self, backend: Backend, entry: dict[str, Any], uri: str) -> None:
        def proxy(**variables: str) -> list[dict[str, Any]]:
            concrete = _VARIABLE.sub(lambda m: variables.get(m.group(1).lstrip("+#./;?&"), ""), uri)
            try:
                result = backend.use().read_resource(concrete)
            except PeerError as exc:
                backend.broken = True
                raise RpcError(-32603, f"backend {backend.alias!r} failed: {exc}") from exc
            contents = result.get("contents")
            return [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []

        size = entry.get("size")
        self.server.add_resource(
            uri,
            proxy,
            name=str(entry.get("name") or uri),
            title=entry.get("title"),
            description=entry.get("description"),
            mime_type=entry.get("mimeType"),
            size=size if isinstance(size, int) else None,
        )
