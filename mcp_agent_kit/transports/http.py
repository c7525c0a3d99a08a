"""http: Streamable HTTP served by the `httpd` engine, mapping requests onto one Dispatcher in both eras.

One endpoint (default `/mcp`). The `MCP-Protocol-Version` header picks the era (digest §8):
a modern request walks the dispatcher's ladder with header checks plugged in and gets the
status codes of §6; a handshake-era request uses `Mcp-Session-Id` sessions, a GET standalone
stream and DELETE. Before anything: Host/Origin allowlists (403) and the bearer token (401) of
`httpd.gate`, media types (406/415) and a body limit (413). The engine reads requests on its event
loop (slow clients hold no thread), enforces the timeouts and runs this mapping on bounded workers.
Rules: protocol logic stays in the dispatcher; this module maps HTTP to it and back.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from mcp_agent_kit.addresses import is_loopback, machine_names, refuse_exposed
from mcp_agent_kit.auth.dpop import proofs_in
from mcp_agent_kit.auth.resource import ProtectedResource, Refusal
from mcp_agent_kit.auth.settings import OAuthSettings
from mcp_agent_kit.core.dispatcher import Connection, Dispatcher, bare_key_hint
from mcp_agent_kit.httpd import Handler, Limits, Policy, Server
from mcp_agent_kit.httpd.head import SINGLE
from mcp_agent_kit.httpd.lifecycle import run_until_stopped
from mcp_agent_kit.transports import http_headers, http_routes
from mcp_agent_kit.transports.http_legacy import LegacySession, Sessions
from mcp_agent_kit.transports.sse import Exchange
from mcp_agent_kit.wire import jsonrpc, mcp
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST

log = logging.getLogger("mcp_agent_kit.http")
DEFAULT_MAX_BODY = 4 * 1024 * 1024
SESSION_HEADER = "Mcp-Session-Id"
STREAM, RELAYED = "stream", "relayed"  # what runs on the engine's stream threads (_long_lived)
STREAM_RETRY_AFTER = 5  # seconds, in the 503 when every stream thread is taken
STREAM_POLL = 0.25  # how often a GET stream notices its session or the server closing
HEARTBEAT_S = 15.0  # an SSE comment on a quiet GET stream, so a vanished client is noticed
_SINGLE = SINGLE | {"mcp-protocol-version"}  # headers that must not repeat (smuggling, host confusion)


def _error_body(code: int, message: str) -> bytes:
    return jsonrpc.encode(jsonrpc.error_reply(None, code, message))


_date_cache: list[Any] = [0, ""]


class McpHTTPServer(Server):
    """The MCP endpoint on the shared engine: a bounded worker pool, timeouts, a connection limit."""

    def __init__(
        self,
        address: tuple[str, int],
        dispatcher: Dispatcher,
        *,
        path: str = "/mcp",
        policy: Policy | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        max_workers: int = 64,
        header_timeout: float = 10.0,
        idle_timeout: float = 30.0,
        session_ttl: float = 3600.0,
        max_connections: int = 16384,
        max_streams: int = 256,
        principal_header: str | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.principal_header = principal_header  # opt-in, behind a trusted proxy: identity from this header
        self.path = path
        self.policy = policy or Policy(bind_host=address[0])
        self.max_body = max_body
        self.header_timeout = header_timeout
        self.idle_timeout = idle_timeout
        self.sessions = Sessions(dispatcher, idle_ttl=session_ttl)
        self.closing = threading.Event()
        self.relayed_markers = tuple(b'"%s"' % m.encode() for m in sorted(dispatcher.registry.relayed_methods))
        limits = Limits(
            workers=max_workers, max_connections=max_connections, max_body=max_body,
            header_timeout=header_timeout, body_timeout=max(header_timeout, 30.0), idle_timeout=idle_timeout,
            single_headers=_SINGLE, stream_workers=max_streams,
        )
        super().__init__(address, McpRequestHandler.serve(self), limits)

    @property
    def url(self) -> str:
        """http://HOST:PORT/PATH as bound (a wildcard bind shows as 127.0.0.1)."""
        host, port = self.server_address[:2]
        host = "127.0.0.1" if host in ("", "0.0.0.0") else "::1" if host == "::" else host
        return f"http://{f'[{host}]' if ':' in host else host}:{port}{self.path}"

    def server_close(self) -> None:
        self.closing.set()
        self.dispatcher.close()
        self.sessions.close()
        super().server_close()


class McpRequestHandler(Handler):
    server: McpHTTPServer  # type: ignore[assignment]  # served by httpd, not socketserver
    server_version = "mcp-agent-kit"

    def run(self) -> None:
        if "transfer-encoding" in self.headers or (
            self.command != "POST" and self.headers.get("content-length", "0").strip() != "0"
        ):  # a body we never read (or framing we do not speak) must not be parsed as the next request
            self.close_connection = True
        oauth = self.server.policy.oauth
        path = self.path.partition("?")[0]
        if oauth is not None and self.command in ("GET", "HEAD") and path in oauth.metadata_paths:
            public = {"Access-Control-Allow-Origin": "*", "Cache-Control": "public, max-age=300"}
            self._plain(200, oauth.document, public, "application/json")  # RFC 9728: before any token check
            self.wfile.flush()
            return
        waits = self._long_lived()
        if waits:
            if self.server.hand_off(self.wfile, self._run_stream):  # type: ignore[arg-type]
                return
            if waits == RELAYED:  # every stream thread taken: run here, as any other call
                super().run()
            else:
                self.close_connection = True
                self._json_error(503, INTERNAL_ERROR, "Service Unavailable: too many open streams",
                                 {"Retry-After": str(STREAM_RETRY_AFTER)})
                self.wfile.flush()
            return
        super().run()

    def _long_lived(self) -> str | None:
        """What runs on a stream thread, not a request worker: a GET stream or a subscriptions/listen
        (STREAM), or a call the server relays to another server, which may wait on it (RELAYED).
        Bytes are matched, not parsed: a false match only moves a request to another thread."""
        if self.command == "GET":
            return STREAM
        if self.command != "POST":
            return None
        body = self.rfile.getvalue()  # type: ignore[attr-defined]
        if b"subscriptions/listen" in body:
            return STREAM
        return RELAYED if any(marker in body for marker in self.server.relayed_markers) else None

    def _run_stream(self) -> bool:
        super().run()
        return not self.close_connection

    def method_missing(self) -> None:
        self._plain(405, b"method not allowed", {"Allow": "GET, POST, DELETE"})

    def log_message(self, format: str, *args: Any) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s " + format, self.address_string(), *args)

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header, formatted once per second rather than per reply."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = int(time.time())
        cached = _date_cache
        if cached[0] != now:
            cached[:] = [now, super().date_time_string(now)]
        return str(cached[1])

    # ---- small replies ------------------------------------------------------------------------
    def _plain(self, status: int, body: bytes, headers: dict[str, str] | None = None,
               content_type: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json_error(self, status: int, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._plain(status, _error_body(code, message), headers, "application/json")

    def _gate(self) -> tuple[bool, str | None]:
        """Path, Host, Origin and token checks: (passed, principal); a failure is already answered."""
        srv = self.server
        if self.path.split("?", 1)[0] != srv.path:
            self.close_connection = True
            self._plain(404, b"not found")
            return False, None
        policy = srv.policy
        problem = policy.refusal(self.headers.get("Host"), self.headers.get("Origin"))
        if problem is not None:
            self.close_connection = True
            self._json_error(403, INVALID_REQUEST, f"Forbidden: {problem}")
            return False, None
        try:
            principal = policy.authorize(self.headers.get("Authorization"), self.command, self.path,
                                         proofs_in(self.headers.get("DPoP")))
        except Refusal as refused:
            self.close_connection = True
            what = "Forbidden" if refused.status == 403 else "Unauthorized"
            self._json_error(refused.status, INVALID_REQUEST, f"{what}: {refused.description}",
                             {"WWW-Authenticate": refused.challenge})
            return False, None
        if srv.principal_header is not None:  # the token (if any) admits the proxy; the header names the user
            return self._trusted_principal(srv.principal_header)
        return True, principal

    def _trusted_principal(self, name: str) -> tuple[bool, str | None]:
        """The trusted proxy's identity header: required, one line, at most 256 characters."""
        value = (self.headers.get(name) or "").strip()
        if not value or len(value) > 256:
            self.close_connection = True
            self._json_error(401, INVALID_REQUEST, f"Unauthorized: the {name} header (set by the trusted proxy) "
                                                   "is required")
            return False, None
        return True, value

    def _accepts(self, *types: str) -> bool:
        accept = self.headers.get("Accept")
        if accept is None:
            return True
        kinds = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
        return bool(kinds & {*types, "*/*"})

    def _is_modern(self, version: str | None) -> bool:
        return version is not None and version.strip() not in mcp.LEGACY_VERSIONS

    # ---- methods ------------------------------------------------------------------------------
    def do_POST(self) -> None:
        passed, principal = self._gate()
        if not passed:
            return
        ctype = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            self.close_connection = True
            self._json_error(415, INVALID_REQUEST, "Unsupported Media Type: use application/json")
            return
        if not self._accepts("application/json", "text/event-stream"):
            self.close_connection = True
            self._json_error(406, INVALID_REQUEST, "Not Acceptable: accept application/json or text/event-stream")
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            self.close_connection = True
            self._json_error(411, INVALID_REQUEST, "Length Required")
            return
        if int(length) > self.server.max_body:
            self.close_connection = True
            self._json_error(413, INVALID_REQUEST, f"Payload Too Large: at most {self.server.max_body} bytes")
            return
        body = self.rfile.read(int(length))
        incoming = jsonrpc.decode(body)
        if incoming.kind == "invalid":
            assert incoming.reply is not None
            self._plain(400, jsonrpc.encode(incoming.reply), content_type="application/json")
            return
        message = incoming.message
        route = http_routes.route(
            self.headers.get("MCP-Protocol-Version"), self.headers.get(SESSION_HEADER) is not None,
            incoming.kind, message,
        )
        if route == http_routes.STATELESS:
            self._stateless(incoming.kind, message, principal)
        elif route == http_routes.MODERN:
            self._modern(incoming.kind, message, principal)
        else:
            self._legacy(incoming.kind, message, principal)

    def _legacy_session_request(self) -> LegacySession | None:
        """GET and DELETE exist only for handshake-era sessions: gate, 405 for modern, find the session."""
        passed, principal = self._gate()
        if not passed:
            return None
        if self._is_modern(self.headers.get("MCP-Protocol-Version")):
            self._plain(405, b"", {"Allow": "POST"})
            return None
        return self._session(principal)

    def do_GET(self) -> None:
        session = self._legacy_session_request()
        if session is None:
            return
        if not self._accepts("text/event-stream"):
            self._json_error(406, INVALID_REQUEST, "Not Acceptable: the GET stream is text/event-stream")
            return
        last_event_id = self.headers.get("Last-Event-ID")
        if last_event_id is not None:
            self._resume_stream(session, last_event_id)
        else:
            self._standalone_stream(session)

    def do_DELETE(self) -> None:
        session = self._legacy_session_request()
        if session is None:
            return
        self.server.sessions.delete(session.id)
        self._plain(200, b"")

    # ---- modern era ---------------------------------------------------------------------------
    def _modern(self, kind: str, message: dict[str, Any], principal: str | None) -> None:
        if kind == "response":
            self._json_error(400, INVALID_REQUEST, "Invalid Request: clients do not send responses here")
            return
        if kind == "notification":
            self._plain(202, b"")
            return
        if message["method"] == "subscriptions/listen" and not self._accepts("text/event-stream"):
            self._json_error(406, INVALID_REQUEST, "Not Acceptable: subscriptions/listen answers with SSE")
            return
        srv = self.server
        headers = self.headers
        reached: list[str] = []

        def lookup(name: str) -> str | None:
            return headers.get(name)

        def check(stage: str, msg: dict[str, Any]) -> None:
            reached.append(stage)
            if stage == "envelope":
                http_headers.check_envelope(lookup, msg)
            elif stage == "params":
                http_headers.check_params(lookup, msg, srv.dispatcher.registry)

        exchange = Exchange(self, can_stream=self._accepts("text/event-stream"))
        conn = Connection(era=mcp.MODERN, principal=principal, can_request=False)
        reply = srv.dispatcher.handle(message, conn, exchange, exchange.cancel, check)
        exchange.finish(reply, _status(reply, bool(reached)))

    def _stateless(self, kind: str, message: dict[str, Any], principal: str | None) -> None:
        """A request with no version header, no session and no envelope (kagent's curl shape):
        served once, with no initialize and no session, under the implied envelope (http_routes)."""
        if kind != "request":
            self._modern(kind, message, principal)
            return
        reached: list[str] = []  # no headers to check against the body; only where the ladder got to
        exchange = Exchange(self, can_stream=self._accepts("text/event-stream"))
        conn = Connection(era=mcp.MODERN, principal=principal, can_request=False)
        reply = self.server.dispatcher.handle(http_routes.implied_envelope(message), conn, exchange, exchange.cancel,
                                              lambda stage, _msg: reached.append(stage))
        exchange.finish(reply, _status(reply, bool(reached)))

    # ---- legacy era ---------------------------------------------------------------------------
    def _session(self, principal: str | None, message: dict[str, Any] | None = None) -> LegacySession | None:
        id_ = self.headers.get(SESSION_HEADER)
        if id_ is None:
            text = "Bad Request: Mcp-Session-Id header is required"
            hint = bare_key_hint(message) if message is not None else ""  # an older kit's bare _meta keys
            self._json_error(400, INVALID_REQUEST, f"{text}; or, without a session, {hint}" if hint else text)
            return None
        session = self.server.sessions.get(id_.strip(), principal)
        if session is None:
            self._json_error(404, INVALID_REQUEST, "Session not found")
        return session

    def _legacy(self, kind: str, message: dict[str, Any], principal: str | None) -> None:
        srv = self.server
        if kind == "request" and message["method"] == "initialize":
            session = srv.sessions.create(principal)
        else:
            found = self._session(principal, message)
            if found is None:
                return
            session = found
        if kind == "response":
            session.resolve(message)
            self._plain(202, b"")
            return
        if kind == "notification":
            srv.dispatcher.notification(message, session.conn)
            if message.get("method") == "notifications/initialized":
                srv.sessions.save(session)
            self._plain(202, b"")
            return
        sessions = srv.sessions

        def requester(via: Exchange, method: str, params: dict[str, Any]) -> dict[str, Any]:
            return sessions.request(session, via, method, params)

        can_stream = self._accepts("text/event-stream")
        # A tool call of a 2025-11-25 session streams from the start, resumably (sse_replay).
        resumable = can_stream and message["method"] == "tools/call" and session.conn.version >= "2025-11-25"
        exchange = Exchange(
            self,
            can_stream=can_stream,
            extra_headers={SESSION_HEADER: session.id},
            requester=requester,
            stream=session.events.open() if resumable else None,
            afterwards=session.push,  # a task's later notifications ride the GET stream
        )
        if resumable:
            exchange.start_stream()
        id_ = message["id"]
        session.conn.inflight[id_] = exchange.cancel
        try:
            reply = srv.dispatcher.handle(message, session.conn, exchange, exchange.cancel)
        finally:
            session.conn.inflight.pop(id_, None)
        if message["method"] == "initialize" and reply is not None:
            if "error" in reply:
                sessions.delete(session.id)
            else:
                sessions.save(session)
        exchange.finish(reply, 200)

    def _standalone_stream(self, session: LegacySession) -> None:
        exchange = Exchange(self, can_stream=True, extra_headers={SESSION_HEADER: session.id})
        # Check, open and register under one lock: a second GET, or a push that follows the
        # client seeing our headers, always finds this stream registered.
        with session.stream_lock:
            conflict = session.stream is not None and not session.stream.broken
            if not conflict:
                exchange.start_stream()
                exchange.queue_writes()  # pushes only queue (bounded); this thread writes them
                session.stream = exchange
        if conflict:
            self._json_error(409, INVALID_REQUEST, "Conflict: this session already has a GET stream")
            return
        try:
            quiet_since = time.monotonic()
            while not (session.closed.is_set() or self.server.closing.is_set()):
                written = exchange.pump(STREAM_POLL)
                if written < 0:
                    break
                now = time.monotonic()
                if written:
                    quiet_since = now
                elif now - quiet_since >= HEARTBEAT_S:
                    quiet_since = now
                    if not exchange.heartbeat():
                        break
        finally:
            if session.stream is exchange:
                session.stream = None
            exchange.close_stream()

    def _resume_stream(self, session: LegacySession, last_event_id: str) -> None:
        """GET with Last-Event-ID: what the client missed on that stream, then the rest live."""
        found = session.events.find(last_event_id)
        exchange = Exchange(self, can_stream=True, extra_headers={SESSION_HEADER: session.id})
        if found is None or not found[0].resume(found[1], exchange):
            self._json_error(404, INVALID_REQUEST, "Not Found: no stream to resume at that Last-Event-ID")
            return
        stream = found[0]
        while not (stream.wait(15.0) or session.closed.is_set() or self.server.closing.is_set()):
            if not exchange.heartbeat():
                break
        exchange.end()


def _status(reply: dict[str, Any] | None, past_envelope: bool) -> int:
    """The HTTP status of a modern reply (digest §5, §6)."""
    if reply is None:
        return 200
    error = reply.get("error")
    if not isinstance(error, dict):
        return 200
    code = error.get("code")
    status = mcp.HTTP_STATUS_BY_CODE.get(code) if isinstance(code, int) else None
    if status is not None:
        return status
    if code == INVALID_PARAMS and not past_envelope:
        return 400
    return 200


def make_server(dispatcher: Dispatcher, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> McpHTTPServer:
    """Build (and bind) the server without serving; `port=0` picks a free port."""
    policy_keys = ("allowed_hosts", "allowed_origins", "token", "tokens")
    policy_options = {key: options.pop(key) for key in policy_keys if key in options}
    oauth: OAuthSettings | ProtectedResource | None = options.pop("oauth", None)
    options.pop("insecure", None)  # the public-bind rule is serve_http's; a built server is not refused
    # on a wildcard bind this machine's own names pass too, as on the A2A agent (addresses.machine_names)
    policy_options["allowed_hosts"] = [*machine_names(host), *(policy_options.get("allowed_hosts") or ())]
    policy = Policy(bind_host=host, **policy_options)
    server = McpHTTPServer((host, port), dispatcher, policy=policy, **options)
    if isinstance(oauth, OAuthSettings):
        try:  # the audience defaults to the URL this server is reached at, known once bound
            oauth = oauth.build(server.url, name=dispatcher.registry.name)
        except (OSError, ValueError):
            server.server_close()
            raise
    policy.oauth = oauth
    return server


def serve_http(dispatcher: Dispatcher, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> int:
    """Serve until interrupted; returns the process exit code. A non-loopback `host` needs
    token=, tokens= or oauth= (or insecure=True): ValueError otherwise, before anything binds."""
    refuse_exposed(host, options)
    options.pop("insecure", None)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        if log.level == logging.NOTSET:
            log.setLevel(logging.INFO)  # a normal start is news, not a warning

    def announce(server: McpHTTPServer) -> None:
        bound_host, bound_port = server.server_address[:2]
        log.info("serving MCP over Streamable HTTP at http://%s:%s%s", bound_host, bound_port, server.path)
        if not is_loopback(str(bound_host)):
            log.info("accepting %s", server.policy.accepted_hosts())

    # SIGTERM (docker stop, Kubernetes) stops accepting and lets serve_forever return: exit 0.
    return run_until_stopped(lambda: make_server(dispatcher, host, port, **options), announce)
