"""probe: the sans-IO state machine that decides which MCP era a peer speaks (digest §8).

Feed it events (a JSON-RPC reply, or a transport failure) and it answers with the next action:
send this request (optionally on a fresh process), or a final Verdict. Rules: no I/O, no clocks,
no threads; the per-request timeout is the driver's job and arrives here as a "timeout" failure.
Policy: only a DiscoverResult or a -32022 naming a version we speak is modern evidence; -32020,
-32021 and -32022 are corrected and retried once, never a reason to fall back; any other
JSON-RPC error (or an HTTP 4xx with a non-modern body) is a clear legacy signal; ambiguous
signals (silence, exit, garbage, HTTP 5xx) fail closed unless the peer is allowlisted; HTTP
401/403 is an auth error, never an era verdict. When both the discover and the initialize POST
get 400/404/405 without a modern body, the peer may be older still: open the 2024-11-05 HTTP+SSE
stream (`OpenStream`), accept its `endpoint` only on the same origin, and initialize there.
"""

from __future__ import annotations

from typing import Any, Final, Literal
from urllib.parse import urljoin, urlsplit

from mcp_agent_kit.wire import mcp

Era = Literal["modern", "legacy", "unavailable"]
FailureKind = Literal[
    "timeout", "exited", "garbage", "http-5xx", "http-4xx", "auth", "unreachable", "invalid", "expired"
]

# Failures that say nothing about the era: fail closed unless the peer is allowlisted.
AMBIGUOUS: Final = frozenset({"timeout", "exited", "garbage", "http-5xx", "invalid"})
MODERN_CORRECTABLE: Final = frozenset({mcp.HEADER_MISMATCH, mcp.MISSING_CAPABILITY, mcp.UNSUPPORTED_VERSION})
# HTTP statuses (without a modern body) that, on both POSTs, point at the 2024-11-05 HTTP+SSE transport.
OLDER_STILL: Final = frozenset({400, 404, 405})
SSE_VERSION: Final = "2024-11-05"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class Reply:
    """A JSON-RPC response from the peer (with the HTTP status when there is one)."""

    __slots__ = ("message", "status")

    def __init__(self, message: dict[str, Any], status: int | None = None) -> None:
        self.message = message
        self.status = status


class Failure:
    """No usable reply: the transport says why (with the HTTP status when there is one)."""

    __slots__ = ("detail", "kind", "status")

    def __init__(self, kind: FailureKind, detail: str, status: int | None = None) -> None:
        self.kind = kind
        self.detail = detail
        self.status = status


class Endpoint:
    """The first event of a 2024-11-05 HTTP+SSE stream: `data` names the POST URL, maybe relative
    to `base` (the URL the stream was opened on)."""

    __slots__ = ("base", "data")

    def __init__(self, base: str, data: str) -> None:
        self.base = base
        self.data = data


Event = Reply | Failure
"""What a channel's exchange gives back."""
Opened = Endpoint | Failure
"""What opening a 2024-11-05 HTTP+SSE stream gives back."""


class Send:
    """Send this request next; `fresh` asks a stdio driver for a new process first; `endpoint`
    (2024-11-05 HTTP+SSE) says to POST this and every later message to that URL."""

    __slots__ = ("endpoint", "fresh", "message")

    def __init__(self, message: dict[str, Any], fresh: bool = False, endpoint: str | None = None) -> None:
        self.message = message
        self.fresh = fresh
        self.endpoint = endpoint


class OpenStream:
    """Open the 2024-11-05 HTTP+SSE stream (`GET url`) and report its `endpoint` event."""

    __slots__ = ()


class Verdict:
    """The probe's outcome. `notify` is the notification to send after a legacy handshake."""

    __slots__ = (
        "auth",
        "capabilities",
        "era",
        "instructions",
        "notify",
        "reason",
        "server_info",
        "supported_versions",
        "version",
    )

    def __init__(
        self,
        era: Era,
        *,
        version: str | None = None,
        capabilities: dict[str, Any] | None = None,
        server_info: dict[str, Any] | None = None,
        instructions: str | None = None,
        supported_versions: list[str] | None = None,
        reason: str | None = None,
        notify: dict[str, Any] | None = None,
        auth: bool = False,
    ) -> None:
        self.era = era
        self.version = version
        self.capabilities = capabilities or {}
        self.server_info = server_info
        self.instructions = instructions
        self.supported_versions = supported_versions or []
        self.reason = reason
        self.notify = notify
        self.auth = auth

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"era": self.era, "version": self.version, "capabilities": self.capabilities}
        if self.server_info is not None:
            out["serverInfo"] = self.server_info
        if self.supported_versions:
            out["supportedVersions"] = self.supported_versions
        if self.instructions:
            out["instructions"] = self.instructions
        if self.reason:
            out["reason"] = self.reason
        if self.auth:
            out["auth"] = True
        return out


Action = Send | OpenStream | Verdict


def _error(message: dict[str, Any]) -> dict[str, Any] | None:
    error = message.get("error")
    return error if isinstance(error, dict) else None


def _matches(message: dict[str, Any], pending: int | None) -> bool:
    """A reply answers the pending request. An error reply counts whatever its id: a channel
    delivers only the reply to its own request (an HTTP body answers its POST), and servers
    in the field send errors with null or made-up ids (the 1.x SDK says "server-error")."""
    return message.get("id") == pending or "error" in message


def _origin(parts: Any) -> tuple[str, str, int | None]:
    scheme = str(parts.scheme).lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return scheme, str(parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def resolve_endpoint(base: str, data: str) -> tuple[str | None, str]:
    """The absolute POST URL an `endpoint` event names, or None and why it is refused. Security:
    only the stream's own origin (scheme, host, port) is accepted, without user info, so a
    server cannot point the client — and the headers it carries — at another host."""
    text = data.strip()
    if not text or any(ch in text for ch in "\r\n"):
        return None, "the endpoint event carries no usable URL"
    url = urljoin(base, text)
    parts, origin = urlsplit(url), urlsplit(base)
    if parts.scheme.lower() not in _DEFAULT_PORTS:
        return None, f"the endpoint {text!r} is not an http(s) URL"
    if parts.username is not None or parts.password is not None:
        return None, f"the endpoint {text!r} carries user info"
    if _origin(parts) != _origin(origin):
        return None, f"cross-origin endpoint {text!r} refused: the stream's origin is {_origin(origin)[:2]}"
    return url, ""


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


class Probe:
    """One era decision. `start()` gives the first action; `feed(event)` each next one."""

    def __init__(
        self,
        *,
        client_info: dict[str, Any],
        capabilities: dict[str, Any] | None = None,
        legacy_capabilities: dict[str, Any] | None = None,
        allow_legacy: bool = False,
        versions: tuple[str, ...] = mcp.MODERN_VERSIONS,
        legacy_versions: tuple[str, ...] = mcp.LEGACY_VERSIONS,
        offerable: dict[str, Any] | None = None,
        known_era: Era | None = None,
    ) -> None:
        self.client_info = client_info
        self.capabilities = dict(capabilities or {})
        self.legacy_capabilities = dict(legacy_capabilities or {})
        self.allow_legacy = allow_legacy
        self.versions = versions
        self.legacy_versions = legacy_versions
        self.offerable = offerable or {}  # capabilities we could add when -32021 asks for them
        self.known_era = known_era
        self.version = versions[0]
        self._ids = 0
        self._stage: Literal["discover", "initialize", "stream", "done"] = "discover"
        self._corrected: set[int] = set()
        self._legacy_retried = False
        self._pending: int | None = None
        self._discover_status: int | None = None  # the HTTP status of a discover that failed with 4xx
        self._sse = False  # the 2024-11-05 HTTP+SSE transport is in use (or being opened)

    # ---- requests ---------------------------------------------------------------------------
    def _next_id(self) -> int:
        self._ids += 1
        self._pending = self._ids
        return self._ids

    def discover(self) -> dict[str, Any]:
        meta = {
            mcp.META_PROTOCOL_VERSION: self.version,
            mcp.META_CLIENT_INFO: self.client_info,
            mcp.META_CLIENT_CAPABILITIES: self.capabilities,
        }
        self._stage = "discover"
        return {"jsonrpc": "2.0", "id": self._next_id(), "method": "server/discover", "params": {"_meta": meta}}

    def initialize(self, version: str | None = None) -> dict[str, Any]:
        params = {
            "protocolVersion": version or self.legacy_versions[0],
            "capabilities": self.legacy_capabilities,
            "clientInfo": self.client_info,
        }
        self._stage = "initialize"
        return {"jsonrpc": "2.0", "id": self._next_id(), "method": "initialize", "params": params}

    # ---- transitions ----------------------------------------------------------------------------
    def start(self) -> Action:
        if self.known_era == "legacy":
            return Send(self.initialize())
        return Send(self.discover())

    def feed(self, event: Event | Endpoint) -> Action:
        if self._stage == "done":
            raise RuntimeError("the probe has already reached a verdict")
        if isinstance(event, Reply) and not _matches(event.message, self._pending):
            reason = f"reply carries an unexpected id {event.message.get('id')!r}"
            return self._done(Verdict("unavailable", reason=reason))
        if self._stage == "stream":
            action = self._on_stream(event)
        elif isinstance(event, Endpoint):
            action = Verdict("unavailable", reason="an SSE endpoint event arrived where a reply was expected")
        elif self._stage == "discover":
            action = self._on_discover(event)
        else:
            action = self._on_initialize(event)
        if isinstance(action, Verdict):
            return self._done(action)
        return action

    def _done(self, verdict: Verdict) -> Verdict:
        self._stage = "done"
        return verdict

    def _ambiguous(self, failure: Failure, stage: str) -> Action:
        reason = f"{stage}: {failure.kind}: {failure.detail}"
        if failure.kind == "auth":
            return Verdict("unavailable", reason=f"authorization required ({failure.detail})", auth=True)
        if failure.kind == "unreachable":
            return Verdict("unavailable", reason=reason)
        if failure.kind == "http-4xx":
            self._discover_status = failure.status
            return Send(self.initialize())  # a 4xx without a modern body is a clear legacy signal
        if self.allow_legacy:
            return Send(self.initialize(), fresh=True)
        return Verdict("unavailable", reason=reason + " (not on the legacy allowlist, so no initialize fallback)")

    def _on_discover(self, event: Event) -> Action:
        if isinstance(event, Failure):
            return self._ambiguous(event, "server/discover")
        error = _error(event.message)
        if error is None:
            return self._on_discover_result(event.message.get("result"))
        code = error.get("code")
        if code in MODERN_CORRECTABLE:
            return self._correct(code, error)
        return Send(self.initialize())  # any other JSON-RPC error: a legacy server

    def _on_discover_result(self, result: Any) -> Action:
        supported = _strings(result.get("supportedVersions")) if isinstance(result, dict) else []
        if not isinstance(result, dict) or "supportedVersions" not in result:
            return Send(self.initialize())
        mutual = [version for version in self.versions if version in supported]
        if mutual:
            meta = result.get("_meta")
            info = meta.get(mcp.META_SERVER_INFO) if isinstance(meta, dict) else None
            if info is None and isinstance(result.get("serverInfo"), dict):
                info = result["serverInfo"]
            caps = result.get("capabilities")
            instructions = result.get("instructions")
            return Verdict(
                "modern",
                version=mutual[0],
                capabilities=caps if isinstance(caps, dict) else {},
                server_info=info if isinstance(info, dict) else None,
                instructions=instructions if isinstance(instructions, str) else None,
                supported_versions=supported,
            )
        if any(version in self.legacy_versions for version in supported):
            return Send(self.initialize())
        return Verdict("unavailable", reason=f"no common protocol version: server supports {supported}")

    def _correct(self, code: int, error: dict[str, Any]) -> Action:
        data = error.get("data")
        data = data if isinstance(data, dict) else {}
        if code in self._corrected:
            reason = f"server/discover rejected again after correction ({code}: {error.get('message')})"
            return Verdict("unavailable", reason=reason)
        self._corrected.add(code)
        if code == mcp.UNSUPPORTED_VERSION:
            supported = _strings(data.get("supported"))
            mutual = [version for version in self.versions if version in supported]
            if mutual:
                self.version = mutual[0]
                return Send(self.discover())
            if any(version in self.legacy_versions for version in supported):
                return Send(self.initialize())
            return Verdict("unavailable", reason=f"no common protocol version: server supports {supported}")
        if code == mcp.MISSING_CAPABILITY:
            required = data.get("requiredCapabilities")
            required = required if isinstance(required, dict) else {}
            missing = [name for name in required if name not in self.offerable]
            if missing:
                return Verdict("unavailable", reason=f"server requires client capabilities we lack: {missing}")
            for name in required:
                self.capabilities[name] = self.offerable[name]
            return Send(self.discover())
        return Send(self.discover())  # -32020: resend with headers rebuilt from the body

    def _older_still(self, failure: Failure) -> bool:
        """Both POSTs (or initialize alone, when the era was known) got 400/404/405 without a
        modern body: the digest's cue for the 2024-11-05 HTTP+SSE transport."""
        if self._sse or SSE_VERSION not in self.legacy_versions:
            return False
        if failure.kind != "http-4xx" or failure.status not in OLDER_STILL:
            return False
        return self.known_era == "legacy" or self._discover_status in OLDER_STILL

    def _on_stream(self, event: Event | Endpoint) -> Action:
        where = "GET (2024-11-05 HTTP+SSE)"
        if isinstance(event, Failure):
            if event.kind == "auth":
                return Verdict("unavailable", reason=f"authorization required ({event.detail})", auth=True)
            return Verdict("unavailable", reason=f"{where}: {event.kind}: {event.detail}")
        if not isinstance(event, Endpoint):
            return Verdict("unavailable", reason=f"{where}: expected an endpoint event, not a reply")
        url, why = resolve_endpoint(event.base, event.data)
        if url is None:
            return Verdict("unavailable", reason=f"{where}: {why}")
        return Send(self.initialize(SSE_VERSION), endpoint=url)

    def _on_initialize(self, event: Event) -> Action:
        if isinstance(event, Failure):
            if event.kind == "auth":
                return Verdict("unavailable", reason=f"authorization required ({event.detail})", auth=True)
            if self._older_still(event):
                self._sse = True
                self._stage = "stream"
                return OpenStream()
            return Verdict("unavailable", reason=f"initialize: {event.kind}: {event.detail}")
        assert isinstance(event, Reply)
        error = _error(event.message)
        if error is not None:
            data = error.get("data")
            offered = _strings(data.get("supported")) if isinstance(data, dict) else []
            mutual = [version for version in self.legacy_versions if version in offered]
            if mutual and not self._legacy_retried:
                self._legacy_retried = True
                return Send(self.initialize(mutual[0]))
            return Verdict("unavailable", reason=f"initialize failed: {error.get('code')}: {error.get('message')}")
        result = event.message.get("result")
        if not isinstance(result, dict):
            return Verdict("unavailable", reason="initialize result is not an object")
        version = result.get("protocolVersion")
        if version not in self.legacy_versions:
            return Verdict("unavailable", reason=f"server answered initialize with unsupported version {version!r}")
        caps = result.get("capabilities")
        info = result.get("serverInfo")
        instructions = result.get("instructions")
        return Verdict(
            "legacy",
            version=str(version),
            capabilities=caps if isinstance(caps, dict) else {},
            server_info=info if isinstance(info, dict) else None,
            instructions=instructions if isinstance(instructions, str) else None,
            notify={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
