"""skills_ext: the Skills extension (SEP-2640) on one dispatcher — skills/list, skills/get and
resources/directory/read, both eras.

Each served skill is a source — a directory (core.skill_tree) or another server's skill relayed
by the gateway (core.skill_relay) — registered under `skill://<skill-path>/`; every
file is also an ordinary resource in the registry (SKILL.md as text/markdown with the
frontmatter's name and description), so `resources/read` serves it like any other resource and
hosts without the extension still reach it. Listings re-stat the trees (core.skill_tree) and keep
the registry's resources in step with the files. With a skill served the extension is declared
(`{}` or `{"directoryRead": true}`) with the `resources` capability; without one the methods are
unknown (-32601). 2025-11-25 gets the same results without resultType, ttlMs and cacheScope
(wire.mcp shaping). Rules: sans-IO apart from the trees' file reads; validation of a skill
directory is the caller's (server.Server.skills runs the kit's validator first); the trees and
the SKILL.md reader (core.skill_tree, wire.skills) are imported when the first skill is served,
so a server without skills never loads them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mcp_agent_kit.core.call import Call, Method
from mcp_agent_kit.core.extension import Contributions
from mcp_agent_kit.core.methods import page_cursor, page_offset
from mcp_agent_kit.core.registry import ResourceDef, ResourceNotFound
from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.jsonrpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from mcp_agent_kit.core.registry import Registry
    from mcp_agent_kit.core.skill_tree import SkillTree

__all__ = ["SkillSource", "SkillsExtension"]


class SkillSource(Protocol):
    """A served skill: a directory (core.skill_tree) or another server's skill (core.skill_relay)."""

    uri: str
    root: str
    frontmatter: dict[str, Any]

    def refresh(self) -> bool: ...
    def paths(self) -> list[str]: ...
    def uri_of(self, rel: str) -> str: ...
    def entry(self) -> dict[str, Any]: ...
    def read(self, rel: str) -> bytes: ...
    def mime(self, rel: str) -> str: ...


def file_content(data: bytes) -> str | bytes:
    """What resources/read sends: the exact bytes as text when they are UTF-8, else a blob."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


class SkillsExtension:
    """The skills one server publishes, and the three methods that publish them."""

    name = "skills"

    def __init__(self, *, directory_read: bool = True) -> None:
        self.directory_read = directory_read
        self._trees: dict[str, SkillSource] = {}  # SKILL.md uri -> source
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()  # one re-stat at a time keeps the registry in step
        self._registry: Registry | None = None

    def bind(self, registry: Registry) -> Contributions:
        self._registry = registry
        rows: dict[str, Callable[[Call], dict[str, Any]]] = {
            "skills/list": self.skills_list,
            "skills/get": self.skills_get,
            "resources/directory/read": self.directory_read_method,
        }
        return Contributions(
            methods={(name, era): Method(fn) for name, fn in rows.items() for era in mcp.ERAS},
            capabilities={era: self._declare for era in mcp.ERAS},
        )

    def close(self) -> None:
        return None

    # ---- registration -------------------------------------------------------------------------------
    def add(self, directory: Path, skill_path: str) -> SkillTree:
        """Serve one (already validated) skill directory at skill://<skill_path>/SKILL.md."""
        from mcp_agent_kit.core.skill_tree import SkillTree

        tree = SkillTree(directory, skill_path)
        self.add_source(tree, str(directory))
        return tree

    def add_source(self, source: SkillSource, label: str | None = None) -> None:
        """Serve one skill source at its URI; SkillRejected when the URI is taken or the
        frontmatter name is not the URI's final segment."""
        from mcp_agent_kit.core.skill_tree import SkillRejected
        from mcp_agent_kit.wire import skills

        name = source.frontmatter.get("name")
        if name != skills.skill_name(source.uri):
            problem = f"frontmatter name {name!r} is not the last segment of {source.uri}"
            raise SkillRejected(label or source.uri, [problem])
        registry = self._registry
        assert registry is not None, "bind() first"
        taken = [uri for uri in map(source.uri_of, source.paths()) if isinstance(
            (registry.find_resource(uri) or (None,))[0], ResourceDef)]
        with self._lock:
            if source.uri in self._trees or taken:
                raise SkillRejected(label or source.uri, [f"{(taken or [source.uri])[0]} is already served"])
            self._trees[source.uri] = source
        for rel in source.paths():
            self._register(source, rel)

    def remove(self, uri: str) -> None:
        """Stop serving the skill at `uri` (its files leave the resources too)."""
        with self._lock:
            source = self._trees.pop(uri)
        registry = self._registry
        assert registry is not None
        for rel in source.paths():
            with contextlib.suppress(KeyError):
                registry.remove_resource(source.uri_of(rel))

    @property
    def trees(self) -> list[SkillSource]:
        with self._lock:
            return [self._trees[uri] for uri in sorted(self._trees)]

    def _register(self, tree: SkillSource, rel: str) -> None:
        from mcp_agent_kit.wire import skills

        registry = self._registry
        assert registry is not None, "bind() first"

        def read() -> str | bytes:
            if rel not in tree.paths():
                raise ResourceNotFound(tree.uri_of(rel))
            try:
                return file_content(tree.read(rel))
            except FileNotFoundError as exc:  # removed since the last listing
                raise ResourceNotFound(tree.uri_of(rel)) from exc

        if rel == skills.SKILL_MD:
            front = tree.frontmatter
            registry.add_resource(tree.uri, read, name=str(front.get("name")),
                                  description=str(front.get("description")), mime_type=skills.MARKDOWN)
        else:
            registry.add_resource(tree.uri_of(rel), read, name=rel, mime_type=tree.mime(rel),
                                  description=f"a file of the {tree.frontmatter.get('name')} skill")

    def _sync(self, tree: SkillSource) -> None:
        """Re-stat one tree; follow added and removed files (and SKILL.md's name and description)
        in the registry."""
        from mcp_agent_kit.wire import skills

        registry = self._registry
        assert registry is not None
        with self._sync_lock:
            before, front = set(tree.paths()), dict(tree.frontmatter)
            changed = tree.refresh()
            after = set(tree.paths())
            if tree.frontmatter != front and skills.SKILL_MD in before & after:
                before.discard(skills.SKILL_MD)  # listed again with the new name and description
                changed = True
            if not changed:
                return
            for rel in sorted(before - after) + ([skills.SKILL_MD] if skills.SKILL_MD not in before else []):
                with contextlib.suppress(KeyError):  # already gone
                    registry.remove_resource(tree.uri_of(rel))
            for rel in sorted(after - before):
                self._register(tree, rel)

    def _current(self) -> list[SkillSource]:
        trees = self.trees
        for tree in trees:
            self._sync(tree)
        return trees

    # ---- capabilities ---------------------------------------------------------------------------------
    def _declare(self, version: str, caps: dict[str, Any]) -> None:
        if not self._trees:
            return
        from mcp_agent_kit.wire import skills

        caps.setdefault("resources", {"subscribe": False, "listChanged": False})
        settings: dict[str, Any] = {"directoryRead": True} if self.directory_read else {}
        caps["extensions"] = {**caps.get("extensions", {}), skills.EXTENSION: settings}

    def _served(self, call: Call) -> None:
        if not self._trees:
            raise RpcError.method_not_found(f"{call.method} (this server serves no skills)")

    # ---- methods ----------------------------------------------------------------------------------------
    def skills_list(self, call: Call) -> dict[str, Any]:
        self._served(call)
        trees = self._current()
        size = call.registry.page_size
        start = page_offset("skills", call.params.get("cursor"), len(trees))
        result: dict[str, Any] = {"skills": [tree.entry() for tree in trees[start : start + size]]}
        if start + size < len(trees):
            result["nextCursor"] = page_cursor("skills", start + size)
        return result

    def skills_get(self, call: Call) -> dict[str, Any]:
        self._served(call)
        uri = call.params.get("uri")
        if not isinstance(uri, str):
            raise RpcError.invalid_params('skills/get needs "uri", the URI of a SKILL.md')
        with self._lock:
            tree = self._trees.get(uri)
        if tree is None:
            raise RpcError(INVALID_PARAMS, f"No skill is served at {uri}", {"uri": uri})
        self._sync(tree)
        return {"skill": tree.entry()}

    def directory_read_method(self, call: Call) -> dict[str, Any]:
        self._served(call)
        if not self.directory_read:
            raise RpcError.method_not_found("resources/directory/read (directoryRead is off)")
        uri = call.params.get("uri")
        if not isinstance(uri, str):
            raise RpcError.invalid_params('resources/directory/read needs "uri"')
        children = self._children(uri)
        if children is None:
            raise RpcError.invalid_params(f"{uri} is not a directory of a served skill", {"uri": uri})
        size = call.registry.page_size
        start = page_offset("directory", call.params.get("cursor"), len(children))
        result: dict[str, Any] = {"resources": children[start : start + size]}
        if start + size < len(children):
            result["nextCursor"] = page_cursor("directory", start + size)
        return result

    def _children(self, uri: str) -> list[dict[str, Any]] | None:
        from mcp_agent_kit.core.skill_tree import children
        from mcp_agent_kit.wire import skills

        registry = self._registry
        assert registry is not None
        for tree in self.trees:
            if uri != tree.root and not uri.startswith(tree.root + "/"):
                continue
            self._sync(tree)
            found = children(tree.paths(), uri[len(tree.root) + 1 :])
            if found is None:
                return None
            rows = []
            for rel, is_dir in found:
                child = tree.uri_of(rel)
                if is_dir:
                    rows.append({"uri": child, "name": rel.rsplit("/", 1)[-1], "mimeType": skills.DIRECTORY_MIME})
                else:
                    definition = registry.find_resource(child)
                    rows.append(dict(definition[0].wire) if definition else {"uri": child, "name": rel})
            return rows
        return None
