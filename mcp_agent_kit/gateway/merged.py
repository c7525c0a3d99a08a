"""gateway.merged: serve the merged namespace of many MCP servers as one MCP server.

Backends (gateway.backend) are probed concurrently; their tools, prompts and resources are
merged (client.merge) and registered on a `Server` as proxies with the backend's own schemas; the
lists are offered (maybe empty) even while every backend is down, and follow the backends' list
changes. A failing backend shows up as an isError result naming it, and is reconnected on its
next use; a backend down at start is retried with backoff and joins when it comes up. One dead,
hung or flooding backend never takes the others down: its calls end within its timeout, calls
beyond its in-flight limit fail at once (gateway.backend), its output is rate-limited in the log
(client.loglimit). Skills (SEP-2640) of every backend are re-served under `skill://<alias>/...`
(core.skill_relay), so same-named skills of two backends resolve per origin and never shadow each
other; their bytes are fetched from the backend only when a host reads them. Configured agents (an
AgentService) add the agent tools (gateway.agent_tools) beside the merged ones. Rules: builds a
Server from client parts; no protocol logic of its own.
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
from mcp_agent_kit.client.merge import merge_names, merge_uris
from mcp_agent_kit.core import content
from mcp_agent_kit.core.content import ToolResult
from mcp_agent_kit.core.context import Context
from mcp_agent_kit.core.skill_relay import RelayedSkill, relayed_path
from mcp_agent_kit.core.skill_tree import SkillRejected
from mcp_agent_kit.core.skills_ext import SkillsExtension
from mcp_agent_kit.gateway.backend import FAILURES, RETRY_FIRST, RETRY_MOST, Backend
from mcp_agent_kit.gateway.relay import Relay
from mcp_agent_kit.server import Server
from mcp_agent_kit.wire import implementation, skills
from mcp_agent_kit.wire.jsonrpc import RpcError

if TYPE_CHECKING:
    from mcp_agent_kit.core.registry import ListKind
    from mcp_agent_kit.gateway.agent_service import AgentService
    from mcp_agent_kit.gateway.agent_tools import AgentTools

log = logging.getLogger("mcp_agent_kit.gateway")
_VARIABLE = re.compile(r"\{([^}]+)\}")
_Add = Callable[[Backend, dict[str, Any], str], None]


class GatewayServer(Server):
    """The merged server: it always offers tools, prompts and resources, so that `tools/list` (and
    the other lists) answers an empty list, not -32601, while every backend is down or offers none;
    the lists fill in when a backend comes (back) up. Its calls wait on the backends, so they are
    relayed: over HTTP they run off the request workers, and a hung backend holds none of them."""

    relayed_methods = frozenset({"tools/call", "prompts/get", "resources/read", "completion/complete"})

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
        version: str = implementation.VERSION,
        retry_first: float = RETRY_FIRST,
        retry_most: float = RETRY_MOST,
        agents: AgentService | None = None,
    ) -> None:
        self.agents = agents
        self.backends = {alias: Backend(alias, spec, timeout) for alias, spec in config.items()}
        self.retry_first = retry_first
        self.retry_most = retry_most
        self.separator = separator
        self.agent_tools: AgentTools | None = None
        if agents is not None:
            from mcp_agent_kit.gateway.agent_tools import AgentTools

            self.agent_tools = AgentTools(agents)  # invoke_agent's turns are tasks: declared with the server
        sources = () if self.agent_tools is None else (self.agent_tools,)
        self.server = GatewayServer(name, version, task_sources=sources)  # serverInfo: the kit's version unless told
        self._conflicts: dict[str, list[str]] = {}
        # What is registered now, per kind: public name or URI -> fingerprint of its source.
        self._installed: dict[str, dict[str, str]] = {"tools": {}, "prompts": {}, "resources": {}, "skills": {}}
        self._sync_lock = threading.Lock()
        self._dirty: set[tuple[str, str]] = set()
        self._wake = threading.Event()
        self._closed = threading.Event()

    @property
    def conflicts(self) -> list[str]:
        return [conflict for kind in sorted(self._conflicts) for conflict in self._conflicts[kind]]

    def start(self, *, follow: bool = True) -> None:
        """Probe every backend, register the merged namespace; with follow, keep it current when
        a backend says one of its lists changed or a backend down at start comes up (retried with
        backoff); our own clients then hear of it in turn."""
        if self.agents is not None and self.agent_tools is not None:
            self.agent_tools.install(self.server)
            self.agents.start(follow=follow)
        with ThreadPoolExecutor(max_workers=max(1, min(16, len(self.backends)))) as pool:
            list(pool.map(lambda backend: backend.start(), self.backends.values()))
        for kind in ("tools", "prompts", "resources", "skills"):
            self._sync(kind)
        for conflict in self.conflicts:
            log.warning("%s", conflict)
        if follow:
            threading.Thread(target=self._follow, name="mcp-gateway-sync", daemon=True).start()
            for backend in self.backends.values():
                backend.add_listener("reconnected", self._reconnected)
                backend.watch(self._changed)
                if backend.broken:
                    threading.Thread(
                        target=backend.retry, args=(self._closed,),
                        kwargs={"first": self.retry_first, "most": self.retry_most},
                        name=f"mcp-gateway-retry-{backend.alias}", daemon=True,
                    ).start()

    def close(self) -> None:
        """Stop following and close every backend (its processes end with it); a second call does nothing."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._wake.set()
        if self.agents is not None:
            self.agents.close()
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
                except FAILURES as exc:
                    log.warning("could not list %s of backend %r again: %s", kind, alias, exc)
            kinds = {kind for _, kind in dirty}
            for kind in sorted(kinds | ({"skills"} if "resources" in kinds else set())):
                self._sync(kind)

    def _sync(self, kind: str) -> None:
        """Make the registered `kind` match the backends' current lists: add, replace, remove."""
        desired, add, remove = {
            "tools": self._desired_tools, "prompts": self._desired_prompts, "resources": self._desired_resources,
            "skills": self._desired_skills,
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

        def proxy(ctx: Context, arguments: dict[str, Any]) -> ToolResult:
            def forward(progress: float, total: float | None, message: str | None) -> None:
                ctx.progress(progress, total, message)

            if not backend.admit():
                return ToolResult([content.text(backend.busy())], is_error=True)
            relay = Relay(ctx)
            try:
                result = backend.use().call_tool(original, arguments, progress=forward, inputs=relay.answerer)
            except FAILURES as exc:
                relay.raise_pending()
                return backend.failed(exc)
            finally:
                backend.release()
            relay.raise_pending()
            blocks = result.get("content")
            return ToolResult(
                blocks if isinstance(blocks, list) else [],
                structured=result.get("structuredContent"),
                is_error=bool(result.get("isError")),
            )

        self.server.add_raw_tool(
            public,
            tool["inputSchema"],
            proxy,
            title=tool.get("title"),
            description=tool.get("description") or f"{original} on {backend.alias}",
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
            if not backend.admit():
                raise RpcError(-32603, backend.busy())
            try:
                return backend.use().get_prompt(original, {k: str(v) for k, v in arguments.items()})
            except PeerError as exc:
                raise RpcError(-32603, backend.describe_failure(exc)) from exc
            finally:
                backend.release()

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
            return _read(backend, concrete)

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

    # ---- skills (SEP-2640) ------------------------------------------------------------------------
    @property
    def _skills(self) -> SkillsExtension:
        return self.server.skills_extension

    def _desired_skills(self) -> tuple[dict[str, tuple[Backend, dict[str, Any]]], _Add, Callable[[str], None]]:
        desired = {}
        for alias, backend in self.backends.items():
            for entry in backend.skills:
                desired[skills.skill_md_uri(relayed_path(alias, entry["uri"]))] = (backend, entry)
        return desired, self._add_skill, self._remove_skill

    def _add_skill(self, backend: Backend, entry: dict[str, Any], public: str) -> None:
        if public in {source.uri for source in self._skills.trees}:
            self._skills.remove(public)  # the backend's entry changed: serve the new one
        try:
            self._skills.add_source(RelayedSkill(backend.alias, entry, lambda uri: _read_bytes(backend, uri)))
        except SkillRejected as exc:
            log.warning("not relaying a skill of backend %r: %s", backend.alias, exc)

    def _remove_skill(self, public: str) -> None:
        if public in {source.uri for source in self._skills.trees}:
            self._skills.remove(public)


def _read(backend: Backend, uri: str) -> list[dict[str, Any]]:
    """resources/read of uri on the backend: its contents, or the -32603 naming the backend."""
    if not backend.admit():
        raise RpcError(-32603, backend.busy())
    try:
        result = backend.use().read_resource(uri)
    except PeerError as exc:
        raise RpcError(-32603, backend.describe_failure(exc)) from exc
    finally:
        backend.release()
    contents = result.get("contents")
    return [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []


def _read_bytes(backend: Backend, uri: str) -> bytes:
    try:
        return skills.content_bytes(_read(backend, uri), uri)
    except skills.SkillError as exc:
        raise RpcError(-32603, f"backend {backend.alias!r}: {exc}") from exc
