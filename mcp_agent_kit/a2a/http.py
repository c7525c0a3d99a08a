"""http: serves an A2A agent on the `httpd` engine — card, JSON-RPC, HTTP+JSON, SSE streams.

Secure by default: loopback bind, Host and Origin checked by `httpd.gate` against loopback names
(DNS rebinding and CSRF; on every bind, a public one included, the card's host and `--allow-host`/`--allow-origin`
values pass too), a body limit, and optional bearer tokens
(each token is a principal; tasks are isolated per principal). The engine reads requests on its
event loop (slow clients hold no thread) and runs these handlers on a bounded worker pool.
JSON-RPC errors go out with HTTP 200; streams are `text/event-stream`, flushed per event, and the
connection closes at the end (v1.0 has no `final` flag). An A2AEndpoint is the agent without a
socket: A2AServer serves one on its own, and `A2AEndpoint.mount` puts one on another engine server's
socket (the board: MCP at /mcp and the agent at the card's paths and under /a2a, one port), keeping its
own policy, tokens or OAuth and body limit. Rules: framing and headers only; the
bindings (jsonrpc, rest) and the engine do the protocol.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp_agent_kit.a2a import jsonrpc, rest
from mcp_agent_kit.a2a.card import BEARER_SCHEME, MAX_AGE, CardDocument, etag_matches
from mcp_agent_kit.a2a.engine import KEEPALIVE, TaskEngine
from mcp_agent_kit.a2a.protocol import A2AError
from mcp_agent_kit.a2a.service import A2AService
from mcp_agent_kit.addresses import is_loopback, is_wildcard, machine_names
from mcp_agent_kit.auth.dpop import proofs_in
from mcp_agent_kit.auth.metadata import AS_SUFFIX, well_known
from mcp_agent_kit.auth.resource import ProtectedResource, Refusal
from mcp_agent_kit.auth.settings import OAuthSettings
from mcp_agent_kit.httpd import Channel, Handler, Limits, Policy, Request, Server
from mcp_agent_kit.httpd.engine import App
from mcp_agent_kit.httpd.lifecycle import run_until_stopped

log = logging.getLogger("mcp_agent_kit.a2a")
CARD_PATHS = frozenset({"/.well-known/agent-card.json", "/.well-known/agent.json"})
RPC_PATH = "/a2a"
REST_PATH = "/a2a/rest"
TREE = RPC_PATH  # on a shared socket (A2AEndpoint.mount) every path under it is the agent's
MAX_BODY = 1 << 20
_JSON_TYPES = ("application/json", "application/a2a+json")


def _media_type(header: str | None) -> str:
    """The bare media type of a Content-Type header; "" when there is none (never taken as JSON)."""
    return (header or "").split(";")[0].strip().lower()


def principal_for(token: str) -> str:
    return "bearer:" + hashlib.sha256(token.encode()).hexdigest()[:16]


def own_names(bind: str, base_url: str) -> list[str]:
    """The names a client may reach this agent by without being told: the card's host and, on a
    wildcard bind, this machine's host names and their addresses (addresses.machine_names)."""
    return [name for name in [urlsplit(base_url).hostname or "", *machine_names(bind)] if name]


def card_schemes(bearer: bool, oauth: ProtectedResource | None) -> dict[str, tuple[dict[str, Any], list[str]]] | None:
    """The card's securitySchemes: OAuth 2.0 (authorization code with PKCE, from the authorization
    server's metadata) when configured, and the static bearer token when tokens are."""
    if oauth is None:
        return None
    schemes: dict[str, tuple[dict[str, Any], list[str]]] = {}
    meta = oauth.server_metadata or {}
    scopes = {scope: scope for scope in oauth.scopes}
    if isinstance(meta.get("authorization_endpoint"), str) and isinstance(meta.get("token_endpoint"), str):
        flow: dict[str, Any] = {"authorizationUrl": meta["authorization_endpoint"], "tokenUrl": meta["token_endpoint"],
                                "scopes": scopes, "pkceRequired": True}
        scheme = {"flows": {"authorizationCode": flow}, "oauth2MetadataUrl": well_known(oauth.authorization_servers[0],
                                                                                       AS_SUFFIX)}
        schemes["oauth"] = ({"oauth2SecurityScheme": scheme}, list(oauth.scopes))
    else:  # keys given by hand, no metadata: say only that a bearer JWT is expected
        schemes["oauth"] = ({"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}, list(oauth.scopes))
    if bearer:
        schemes["bearer"] = (BEARER_SCHEME, [])
    return schemes


def base_url_for(bind_host: str, port: int, public_url: str | None = None) -> str:
    """The URL the card names for an agent bound on (bind_host, port): `public_url` when given; a
    wildcard bind shows as this machine's name."""
    shown = socket.getfqdn() if is_wildcard(bind_host) else f"[{bind_host}]" if ":" in bind_host else bind_host
    return (public_url or f"http://{shown}:{port}").rstrip("/")


class A2AEndpoint:
    """An A2A agent's HTTP face, bound to no socket: `engine` (any A2AService: a2a.engine.TaskEngine,
    board.a2a_face.BoardFace), its card at `base_url`, its Host/Origin policy, tokens or OAuth, and its
    body limit. A2AServer serves one on its own socket; `mount(server)` serves it on another engine
    server's socket, beside that server's own app, at its `paths` (the card's, its OAuth metadata's) and
    under TREE."""

    def __init__(
        self,
        engine: A2AService,
        base_url: str,
        *,
        bind_host: str = "127.0.0.1",
        tokens: list[str] | Mapping[str, str] | None = None,
        max_body: int = MAX_BODY,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        oauth: OAuthSettings | ProtectedResource | None = None,
    ) -> None:
        """bind_host: the address the socket it is served on is bound to. allowed_hosts /
        allowed_origins: Host and Origin values accepted beyond the defaults (loopback names, the bound
        address, the host of the card's URLs); "*" accepts any. oauth: accept OAuth access tokens whose
        audience is `base_url` (docs/oauth.md). OSError or ValueError when OAuth cannot be set up."""
        self.engine = engine
        # a list: each token its own principal; a mapping: token -> principal (`--tokens-file`)
        self.tokens = dict(tokens) if isinstance(tokens, Mapping) else {t: principal_for(t) for t in tokens or []}
        self.max_body = max_body
        self.bound = bind_host
        self.base_url = base_url.rstrip("/")
        self.server: Server | None = None  # the engine server it runs on (its stream threads)
        built = oauth.build(self.base_url, name=engine.agent.name) if isinstance(oauth, OAuthSettings) else None
        protected = built or (oauth if isinstance(oauth, ProtectedResource) else None)
        # DNS-rebinding and CSRF protection on every bind, as on the MCP endpoint: the Host must name
        # this agent (as its card does, or as given), an Origin must be one of those or allowed.
        self.policy = Policy(
            bind_host=bind_host,
            allowed_hosts=[*own_names(bind_host, self.base_url), *allowed_hosts],
            allowed_origins=allowed_origins,
            tokens=self.tokens,
            oauth=protected,
            realm="a2a",
        )
        interfaces = [(self.base_url + RPC_PATH, "JSONRPC"), (self.base_url + REST_PATH, "HTTP+JSON")]
        self.card = CardDocument(engine.agent, interfaces, bearer=bool(self.tokens),
                                 schemes=card_schemes(bool(self.tokens), protected))

    @property
    def paths(self) -> frozenset[str]:
        """The exact paths it answers on a shared socket: the card's and its OAuth metadata's (RFC 9728);
        everything else of it (JSON-RPC, HTTP+JSON) lies under TREE."""
        oauth = self.policy.oauth
        return CARD_PATHS | (oauth.metadata_paths if oauth is not None else frozenset())

    def app(self, server: Server) -> App:
        """The engine app that serves this agent on `server` (streams run on its stream threads)."""
        self.server = server
        handle: App = A2ARequestHandler.serve(self)
        return handle

    def mount(self, server: Server) -> None:
        """Serve this agent on `server`'s socket too: its paths and TREE; the server's own app keeps the rest."""
        server.mount(self.app(server), paths=self.paths, trees=(TREE,))

    def hand_off(self, channel: Channel, run: Callable[[], bool]) -> bool:
        """httpd.Server.hand_off on the server it runs on."""
        assert self.server is not None, "an endpoint's app is made for a server first (app, mount)"
        return self.server.hand_off(channel, run)


class A2AServer(Server):
    """An A2A agent over HTTP on its own socket: an A2AEndpoint (`endpoint`) bound to (host, port).
    Its attributes (engine, tokens, max_body, bound, base_url, policy, card) are the endpoint's."""

    def __init__(
        self,
        engine: A2AService,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        tokens: list[str] | Mapping[str, str] | None = None,
        public_url: str | None = None,
        max_body: int = MAX_BODY,
        max_workers: int = 128,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        oauth: OAuthSettings | ProtectedResource | None = None,
    ) -> None:
        """The options are A2AEndpoint's; public_url: the card's base URL (default: as bound)."""
        # an over-limit body up to 8x the limit is read away (on the loop), so the client sees the 413
        limits = Limits(workers=max_workers, max_body=max_body, drain_limit=8 * max_body)
        # bound first: the endpoint's URL names the port; the app then serves the endpoint
        super().__init__((host, port), self._serve, limits)
        try:
            self.endpoint = A2AEndpoint(engine, base_url_for(host, self.server_address[1], public_url),
                                        bind_host=host, tokens=tokens, max_body=max_body,
                                        allowed_hosts=allowed_hosts, allowed_origins=allowed_origins, oauth=oauth)
        except (OSError, ValueError):
            self.server_close()
            raise
        self._endpoint_app = self.endpoint.app(self)

    def _serve(self, request: Request, channel: Channel) -> bool:
        return self._endpoint_app(request, channel)

    # ---- the endpoint's, as before the split ----------------------------------------------------
    @property
    def engine(self) -> A2AService:
        return self.endpoint.engine

    @property
    def tokens(self) -> dict[str, str]:
        return self.endpoint.tokens

    @property
    def max_body(self) -> int:
        return self.endpoint.max_body

    @property
    def bound(self) -> str:
        return self.endpoint.bound

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    @property
    def policy(self) -> Policy:
        return self.endpoint.policy

    @property
    def card(self) -> CardDocument:
        return self.endpoint.card


class A2ARequestHandler(Handler):
    server_version = "mcp-agent-kit-a2a"
    server: A2AEndpoint  # type: ignore[assignment]  # served by httpd, not socketserver

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    # ---- plumbing -------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: dict[str, Any], **headers: str) -> None:
        self._send(status, json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(), **headers)

    def _refuse(self, exc: A2AError, rpc: bool, **headers: str) -> None:
        body = {"jsonrpc": "2.0", "id": None, "error": exc.rpc_error()} if rpc else exc.rest_error()
        self._json(exc.status, body, **headers)

    def _host_refused(self) -> str | None:
        """None when Host and Origin pass; else the refusal, naming the flag that allows it."""
        refused = self.server.policy.refusal(self.headers.get("Host"), self.headers.get("Origin"), "the agent")
        return None if refused is None else f"{refused} (or --public-url URL)"

    def _body(self, rpc: bool) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._refuse(A2AError("InvalidRequest", "Send a Content-Length; chunked bodies are not accepted"), rpc)
            return None
        length_text = self.headers.get("Content-Length") or "0"
        if not length_text.isdigit():
            self.close_connection = True
            self._refuse(A2AError("InvalidRequest", "Invalid Content-Length"), rpc)
            return None
        length = int(length_text)
        if length > self.server.max_body:
            self.close_connection = True
            limit = self.server.max_body
            if length <= 8 * limit:  # read it away, so the client sees the 413 instead of a reset
                self._discard(length)
            self._refuse(A2AError("PayloadTooLarge", f"Request body of {length} bytes is over the {limit} limit"), rpc)
            return None
        if not self.body_complete:  # over the limit of the socket it shares (A2AEndpoint.mount): never read
            self.close_connection = True
            self._refuse(A2AError("PayloadTooLarge", f"Request body of {length} bytes is over this server's limit"),
                         rpc)
            return None
        return self.rfile.read(length)

    def _discard(self, length: int) -> None:
        left = length
        while left > 0:
            chunk = self.rfile.read(min(65536, left))
            if not chunk:
                return
            left -= len(chunk)

    def _stream(self, events: Iterator[dict[str, Any]], frame: Any) -> None:
        """An SSE stream runs on an engine stream thread, never holding a request worker."""
        self.close_connection = True
        if not self.server.hand_off(self.wfile, lambda: self._write_stream(events, frame)):  # type: ignore[arg-type]
            close = getattr(events, "close", None)
            if close is not None:
                close()
            self._json(503, {"error": {"code": 503, "status": "UNAVAILABLE", "message": "too many open streams"}},
                       Retry_After="5")

    def _write_stream(self, events: Iterator[dict[str, Any]], frame: Any) -> bool:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Accel-Buffering", "no")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for event in events:
                if event is KEEPALIVE:
                    self.wfile.write(b": keep-alive\n\n")
                else:
                    self.wfile.write(b"data: " + json.dumps(frame(event), separators=(",", ":")).encode() + b"\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            log.debug("stream client went away")
        except Exception as exc:
            log.exception("A2A stream failed")
            error = A2AError("Internal", detail=type(exc).__name__)
            with contextlib.suppress(OSError):
                self.wfile.write(b"event: error\ndata: " + json.dumps(frame(error)).encode() + b"\n\n")
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        return False

    # ---- routes ----------------------------------------------------------------------------------
    def _gate(self, rpc: bool) -> str | None:
        problem = self._host_refused()
        if problem is not None:
            self.close_connection = True
            self._refuse(A2AError("InvalidRequest", problem), rpc)
            return None
        try:
            return self.server.policy.authorize(self.headers.get("Authorization"), self.command, self.path,
                                               proofs_in(self.headers.get("DPoP"))) or ""
        except Refusal as refused:
            name = "PermissionDenied" if refused.status == 403 else "Unauthenticated"
            self._refuse(A2AError(name, refused.description), rpc, WWW_Authenticate=refused.challenge)
            return None

    def do_HEAD(self) -> None:
        self.do_GET()

    def _no_body(self) -> None:
        """A body sent with GET/DELETE is never read: close rather than parse it as the next request."""
        if (self.headers.get("Content-Length") or "0").strip() != "0" or self.headers.get("Transfer-Encoding"):
            self.close_connection = True

    def do_GET(self) -> None:
        self._no_body()
        url = urlsplit(self.path)
        oauth = self.server.policy.oauth
        if url.path in CARD_PATHS:
            self._card()
        elif oauth is not None and url.path in oauth.metadata_paths:  # RFC 9728, public like the card
            self._send(200, oauth.document, Access_Control_Allow_Origin="*", Cache_Control=f"public, max-age={MAX_AGE}")
        else:
            self._rest(url.path, url.query)

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if url.path in (RPC_PATH, RPC_PATH + "/", "/"):
            self._rpc(url.query)
        else:
            self._rest(url.path, url.query)

    def do_DELETE(self) -> None:
        self._no_body()
        url = urlsplit(self.path)
        self._rest(url.path, url.query)

    do_PUT = do_PATCH = do_DELETE  # no route takes them: 405/404 as JSON, not http.server's HTML 501

    def _card(self) -> None:
        problem = self._host_refused()
        if problem is not None:
            self.close_connection = True
            self._refuse(A2AError("InvalidRequest", problem), False)
            return
        body, etag, modified = self.server.card.current()
        headers = {"Cache-Control": f"public, max-age={MAX_AGE}", "ETag": etag, "Last_Modified": modified}
        if etag_matches(self.headers.get("If-None-Match"), etag):
            self.send_response(304)
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._send(200, body, **headers)

    def _version(self, query: str) -> str | None:
        header = self.headers.get("A2A-Version")
        if header is None:
            values = parse_qs(query).get("A2A-Version")
            header = values[0] if values else None
        return header

    def _rpc(self, query: str) -> None:
        principal = self._gate(True)
        if principal is None:
            return
        body = self._body(True)
        if body is None:
            return
        kind = _media_type(self.headers.get("Content-Type"))
        if kind not in _JSON_TYPES:  # a missing type too: a CORS "simple" POST must never run a skill
            exc = A2AError("ContentTypeNotSupported", f"Content-Type {kind!r} is not supported; send application/json")
            self.close_connection = True
            self._json(200, {"jsonrpc": "2.0", "id": None, "error": exc.rpc_error()})
            return
        reply = jsonrpc.handle(self.server.engine, body, self._version(query), principal)
        if reply.stream is not None:
            id_ = reply.id
            self._stream(
                reply.stream,
                lambda event: (
                    jsonrpc.stream_error(id_, event)
                    if isinstance(event, A2AError)
                    else jsonrpc.stream_event(id_, event)
                ),
            )
            return
        self._json(200, reply.body or {})

    def _rest(self, path: str, query: str) -> None:
        if not (path == REST_PATH or path.startswith(REST_PATH + "/")):
            self._no_body()
            base = self.server.base_url
            verb = self.command if self.command != "HEAD" else "GET"
            pointer = rest.legacy_pointer(verb, path, base + RPC_PATH, base + REST_PATH)
            if pointer is not None and pointer.body is not None:
                self._json(pointer.status, pointer.body)
                return
            self._refuse(A2AError("MethodNotFound", f"No such resource: {path}"), False)
            return
        principal = self._gate(False)
        if principal is None:
            return
        body = b""
        if self.command in ("POST", "PUT", "PATCH"):
            got = self._body(False)
            if got is None:
                return
            body = got
            kind = _media_type(self.headers.get("Content-Type"))
            if kind not in _JSON_TYPES and (body.strip() or kind):  # only a bodiless POST may omit the type
                exc = A2AError("ContentTypeNotSupported", f"Content-Type {kind!r} is not supported")
                self.close_connection = True
                error = exc.rest_error()
                error["error"]["code"] = 415  # an HTTP-level refusal: 415, as on the MCP endpoint
                self._json(415, error)
                return
        reply = rest.route(
            self.server.engine,
            self.command if self.command != "HEAD" else "GET",
            path[len(REST_PATH) :] or "/",
            parse_qs(query),
            body,
            self._version(query),
            principal,
        )
        if reply.stream is not None:
            self._stream(reply.stream, lambda event: event.rest_error() if isinstance(event, A2AError) else event)
            return
        self._json(reply.status, reply.body or {})


def serve(
    engine: TaskEngine,
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    tokens: list[str] | Mapping[str, str] | None = None,
    public_url: str | None = None,
    max_body: int = MAX_BODY,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    oauth: OAuthSettings | None = None,
) -> int:
    """Serve until interrupted; returns the exit code."""
    def announce(server: A2AServer) -> None:
        log.info("A2A agent %r at %s", engine.agent.name, server.base_url)
        if not is_loopback(server.bound):
            log.info("accepting %s", server.policy.accepted_hosts())

    # SIGTERM: stop accepting, let in-flight requests finish (bounded), exit 0
    try:
        return run_until_stopped(
            lambda: A2AServer(engine, host, port, tokens=tokens, public_url=public_url, max_body=max_body,
                              allowed_hosts=allowed_hosts, allowed_origins=allowed_origins, oauth=oauth), announce
        )
    finally:
        engine.close()
