"""dispatcher: turns one parsed JSON-RPC message into at most one reply, for both eras.

It fixes a connection's era, walks the modern envelope ladder (digest §1), finds the handler
in the method table, and shapes the result for the era. A ladder error for a request that
carries an older kit's bare `_meta` keys (`protocolVersion`, ...) names the MCP keys to send;
those keys are read only on the way to an error. Rules: it knows no sockets, threads
or encodings; transports give it a Connection (per stdio stream or HTTP session), an Outbox
(notifications and legacy server→client requests) and a cancel flag, and optional header
checks (HTTP) at the two ladder steps that need them. Each dispatcher owns its method table,
keyed by (method, era): the core rows of core.methods plus what its extensions contributed
when it was built (core.extension); nothing is added to it later.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NoReturn

from mcp_agent_kit.core import methods
from mcp_agent_kit.core.call import Call, DispatchView, MethodTable, Outbox, ToolAnnotator, ToolInterceptor
from mcp_agent_kit.core.connection import Connection
from mcp_agent_kit.core.extension import CapabilityHook, Extension
from mcp_agent_kit.core.registry import Registry
from mcp_agent_kit.logs import logger
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, RpcError
from mcp_agent_kit.wire.mcp import LEGACY, MODERN

if TYPE_CHECKING:
    from mcp_agent_kit.store.base import Store

__all__ = ["Connection", "Dispatcher", "NullOutbox", "Outbox"]


class NullOutbox:
    """An outbox for callers with no peer to talk back to (tests, HTTP JSON replies)."""

    def notify(self, message: dict[str, Any]) -> None:
        return None

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RpcError(INTERNAL_ERROR, "this transport cannot send requests to the client")


HeaderCheck = Callable[[str, dict[str, Any]], None]
"""check(stage, message): stage "envelope" (ladder step 4) or "params" (step 8); raises RpcError."""


def _meta_of(params: Any) -> dict[str, Any] | None:
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict):
            return meta
    return None


def is_enveloped(message: dict[str, Any]) -> bool:
    meta = _meta_of(message.get("params"))
    return meta is not None and mcp.META_PROTOCOL_VERSION in meta


# The un-namespaced `_meta` keys older "stateless MCP" kits sent, and the MCP key each one means.
# Read only on the way to an error reply, never on the hot path.
BARE_META_KEYS: Final = {
    "protocolVersion": mcp.META_PROTOCOL_VERSION,
    "clientCapabilities": mcp.META_CLIENT_CAPABILITIES,
    "clientInfo": mcp.META_CLIENT_INFO,
}


def bare_key_hint(message: dict[str, Any]) -> str:
    """For a failing request: '' or "send `io.modelcontextprotocol/…` in _meta (bare `…` is not an MCP key)"."""
    meta = _meta_of(message.get("params"))
    if meta is None:
        return ""
    bare = [key for key, namespaced in BARE_META_KEYS.items() if key in meta and namespaced not in meta]
    if not bare:
        return ""
    wanted = ", ".join(f"`{BARE_META_KEYS[key]}`" for key in bare)
    named = ", ".join(f"`{key}`" for key in bare)
    verb = "is not an MCP key" if len(bare) == 1 else "are not MCP keys"
    return f"send {wanted} in _meta (bare {named} {verb})"


def _with_hint(text: str, message: dict[str, Any]) -> str:
    hint = bare_key_hint(message)
    return f"{text}; {hint}" if hint else text


def modern_only(method: str, message: dict[str, Any]) -> RpcError:
    """The -32601 for a 2026-07-28-only method reached without the `_meta` envelope."""
    hint = bare_key_hint(message) or (
        f"send `{mcp.META_PROTOCOL_VERSION}` and `{mcp.META_CLIENT_CAPABILITIES}` in params._meta"
    )
    return RpcError.method_not_found(f"{method} needs the 2026-07-28 _meta envelope: {hint}")


def _envelope_error(meta: dict[str, Any], message: dict[str, Any]) -> NoReturn:
    """Raise the -32602 for a _meta without a well-typed protocol version and capabilities."""
    for key, kind in ((mcp.META_PROTOCOL_VERSION, str), (mcp.META_CLIENT_CAPABILITIES, dict)):
        if key not in meta:
            raise RpcError.invalid_params(_with_hint(f'_meta is missing "{key}"', message))
        if not isinstance(meta[key], kind):
            raise RpcError.invalid_params(f'_meta "{key}" must be a {kind.__name__}')
    raise AssertionError("called for a well-formed _meta")


def mcp_unsupported(requested: Any) -> RpcError:
    return RpcError(mcp.UNSUPPORTED_VERSION, "Unsupported protocol version", mcp.unsupported_version_data(requested))


class Dispatcher:
    """One per server: serves every connection and transport, with its own method table."""

    def __init__(self, registry: Registry, extensions: Iterable[Extension] = ()) -> None:
        self.registry = registry
        self.store: Store | None = None  # shared with other replicas (Server.use_store): legacy sessions too
        self._offered: frozenset[str] | None = None
        self._server_info: dict[str, Any] | None = None
        self.methods: MethodTable = dict(methods.METHODS)
        self.interceptors: dict[str, tuple[ToolInterceptor, ...]] = {era: () for era in mcp.ERAS}
        self.annotators: dict[str, tuple[ToolAnnotator, ...]] = {era: () for era in mcp.ERAS}
        self._capability_hooks: dict[str, tuple[CapabilityHook, ...]] = {era: () for era in mcp.ERAS}
        self.extensions: tuple[Extension, ...] = tuple(extensions)
        for extension in self.extensions:
            self._compose(extension)
        # What handlers read (call.view): fixed from here on, like the tables it shows.
        self.view = DispatchView(
            registry, MappingProxyType(self.interceptors), MappingProxyType(self.annotators), self.capabilities
        )
        registry.on_change(self._registry_changed)

    def _compose(self, extension: Extension) -> None:
        """Merge one extension's contributions into this dispatcher's tables (construction only)."""
        given = extension.bind(self.registry)
        taken = given.methods.keys() & self.methods.keys()
        if taken:
            raise ValueError(f"extension {extension.name!r} redefines {sorted(taken)}")
        self.methods.update(given.methods)
        for era, intercept in given.interceptors.items():
            self.interceptors[era] = (*self.interceptors[era], intercept)
        for era, annotate in given.annotators.items():
            self.annotators[era] = (*self.annotators[era], annotate)
        for era, extend in given.capabilities.items():
            self._capability_hooks[era] = (*self._capability_hooks[era], extend)

    def extension(self, name: str) -> Extension | None:
        """The composed extension called `name`, if any."""
        return next((ext for ext in self.extensions if ext.name == name), None)

    def close(self) -> None:
        """Server shutdown: every extension ends what it has open (e.g. subscriptions/listen)."""
        for extension in self.extensions:
            extension.close()

    def end_connection(self, conn: Connection) -> None:
        """A connection ended (HTTP session deleted, evicted or expired; stdio EOF): extensions that
        keep per-connection state (`end_connection(conn)`, e.g. 2025-11-25 tasks) drop it."""
        for extension in self.extensions:
            ender = getattr(extension, "end_connection", None)
            if ender is not None:
                ender(conn)

    def end_shared(self, conn: Connection) -> None:
        """A shared connection (a legacy session kept in a store) ended for good, on every replica:
        extensions that keep its state in the store (`end_shared(conn)`) end it there too."""
        for extension in self.extensions:
            ender = getattr(extension, "end_shared", None)
            if ender is not None:
                ender(conn)

    # ---- entry points -------------------------------------------------------------------------
    def handle(
        self,
        message: dict[str, Any],
        conn: Connection,
        out: Outbox | None = None,
        cancel: threading.Event | None = None,
        check: HeaderCheck | None = None,
    ) -> dict[str, Any] | None:
        """The reply to a request, or None for a notification or a cancelled request."""
        if "id" not in message:
            self.notification(message, conn)
            return None
        id_ = message["id"]
        try:
            if (conn.era or self.fix_era(message, conn)) == MODERN:
                result = self._modern(message, conn, out or NullOutbox(), cancel, check)
            else:
                result = self._legacy(message, conn, out or NullOutbox(), cancel)
        except RpcError as exc:
            return jsonrpc.error_reply(id_, exc.code, exc.message, exc.data)
        except Exception:
            logger("mcp_agent_kit").exception("internal error while handling %s", message.get("method"))
            return jsonrpc.error_reply(id_, INTERNAL_ERROR, jsonrpc.MESSAGES[INTERNAL_ERROR])
        if cancel is not None and cancel.is_set():
            return None
        return {"jsonrpc": "2.0", "id": id_, "result": result}

    def notification(self, message: dict[str, Any], conn: Connection) -> None:
        handler = methods.NOTIFICATIONS.get(message["method"])
        if handler is not None:
            handler(conn, message.get("params") or {})

    def fix_era(self, message: dict[str, Any], conn: Connection) -> str:
        """The era of a connection: fixed by its first request (digest §8)."""
        if conn.era is None:
            modern = message["method"] != "initialize" and is_enveloped(message)
            conn.era = MODERN if modern else LEGACY
        return conn.era

    # ---- eras ------------------------------------------------------------------------------
    def _modern(
        self,
        message: dict[str, Any],
        conn: Connection,
        out: Outbox,
        cancel: threading.Event | None,
        check: HeaderCheck | None,
    ) -> dict[str, Any]:
        method = message["method"]
        params = message.get("params")
        if method == "initialize" and not is_enveloped(message):
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            raise mcp_unsupported(requested)
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict) or not isinstance(params, dict):
            raise RpcError.invalid_params("every request needs params._meta")
        version = meta.get(mcp.META_PROTOCOL_VERSION)
        declared = meta.get(mcp.META_CLIENT_CAPABILITIES)
        if not isinstance(version, str) or not isinstance(declared, dict):
            _envelope_error(meta, message)
        if check is not None:
            check("envelope", message)
        if version not in mcp.MODERN_VERSIONS:
            raise mcp_unsupported(version)
        entry = self.methods.get((method, MODERN))
        if entry is None or not (entry.needs is None or self._offers(entry.needs)):
            raise RpcError.method_not_found(method)
        if entry.client_needs is not None:
            from mcp_agent_kit.core.context import capability_declared, missing_capability

            if not capability_declared(declared, entry.client_needs):
                raise missing_capability(entry.client_needs)
        if check is not None:
            check("params", message)
        level = meta.get(mcp.META_LOG_LEVEL)
        if level is not None and level not in mcp.LOG_LEVEL_RANK:
            raise RpcError.invalid_params(f"unknown log level {level!r}")
        client_info = meta.get(mcp.META_CLIENT_INFO)
        call = Call(
            self.view, conn, method, message["id"], params, MODERN, version, declared,
            client_info if isinstance(client_info, dict) else None, out, cancel, level, meta.get("progressToken"),
        )
        return self.shape_modern(method, entry.fn(call))

    def _legacy(
        self, message: dict[str, Any], conn: Connection, out: Outbox, cancel: threading.Event | None
    ) -> dict[str, Any]:
        method = message["method"]
        if is_enveloped(message):
            raise RpcError(jsonrpc.INVALID_REQUEST, "Invalid Request: this connection uses the initialize handshake")
        entry = self.methods.get((method, LEGACY))
        if entry is None or not self._offers(entry.needs):
            if entry is None and (method, MODERN) in self.methods:
                raise modern_only(method, message)
            raise RpcError.method_not_found(_with_hint(method, message))
        params = message.get("params") or {}
        meta = _meta_of(params) or {}
        call = Call(
            self.view, conn, method, message["id"], params, LEGACY, conn.version,
            conn.client_capabilities, conn.client_info, out if conn.can_request else None,
            cancel, conn.log_level or "debug", meta.get("progressToken"),
        )
        result = entry.fn(call)
        return mcp.shape_legacy_result(result, conn.version)

    # ---- shaping -----------------------------------------------------------------------------
    def shape_modern(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        if "resultType" not in result:
            result["resultType"] = "complete"
        info = self._server_info
        if info is None:
            info = self._server_info = self.registry.server_info()
        meta = result.get("_meta")
        if meta is None:
            result["_meta"] = {mcp.META_SERVER_INFO: info}
        else:
            meta = dict(meta) if isinstance(meta, dict) else {}
            meta[mcp.META_SERVER_INFO] = info
            result["_meta"] = meta
        if method in mcp.CACHEABLE_METHODS and result["resultType"] == "complete":
            result.setdefault("ttlMs", self.registry.cache_ttl_ms)
            result.setdefault("cacheScope", self.registry.cache_scope)
        return result

    # ---- capabilities ---------------------------------------------------------------------------
    def _offers(self, need: str | None) -> bool:
        if need is None:
            return True
        offered = self._offered
        if offered is None:
            offered = self._offered = frozenset(self.capabilities(MODERN))
        return need in offered

    def _registry_changed(self, kind: str, uri: str | None) -> None:
        self._offered = None

    def capabilities(self, era: str, version: str | None = None) -> dict[str, Any]:
        """ServerCapabilities at `era` (and, for the handshake, the negotiated `version`), derived
        from what is registered right now and what the extensions add."""
        registry = self.registry
        legacy = era == LEGACY
        caps: dict[str, Any] = {"logging": {}}
        if registry.has("tools"):
            caps["tools"] = {"listChanged": legacy}
        if registry.has("resources") or registry.has("resourceTemplates"):
            caps["resources"] = {"subscribe": legacy, "listChanged": legacy}
        if registry.has("prompts"):
            caps["prompts"] = {"listChanged": legacy}
        if registry.has_completions or registry.has("prompts") or registry.has("resourceTemplates"):
            caps["completions"] = {}
        at = version or (mcp.MODERN_VERSIONS[0] if not legacy else mcp.LATEST_LEGACY)
        for extend in self._capability_hooks[era]:
            extend(at, caps)
        return caps
