"""client.oauth.session: `OAuth`, the per-server authorization an HttpChannel consults.

`headers(method, url)` gives the Authorization (and DPoP) headers for a request to the server —
nothing for any other origin; a token close to expiry (store.Token.refresh_margin: min(60 s, a
quarter of its lifetime), by the injectable `clock`) is refreshed first — unless the store already
holds a newer token for it (another process refreshed it). `challenge(status,
response headers, sent headers)` handles a 401/403 and says whether to send the request again:
a DPoP `use_dpop_nonce` is retried with the nonce; a 403 `insufficient_scope` re-authorizes with
the union of the scopes asked for so far and the challenged ones (SEP-2350), at most
MAX_STEP_UPS times and never when the challenge asks for nothing new; a 401 re-runs discovery
(which is how an authorization-server migration shows), then refreshes when the issuer is the
same and a refresh token is held, else runs the configured grant. Registration follows the spec's
order (pre-registered, client ID metadata document, RFC 7591), bound to the issuer; `client_auth`,
`authorization_request` and `authorization_grant` are the code grant's pieces for a caller that runs
the browser step itself (board.web_oauth: a board signing a person in). A failed flow
stays failed (`error`) for RETRY_AFTER seconds, so a refusing server is not asked again and
again. Rules: blocking; one lock per server; never logs a token, a secret or a code.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from mcp_agent_kit.auth.signer import EcKey
from mcp_agent_kit.client.oauth import discovery as disco
from mcp_agent_kit.client.oauth.challenge import pick
from mcp_agent_kit.client.oauth.errors import LoginNeeded, OAuthError
from mcp_agent_kit.client.oauth.grants import JWT_BEARER, TOKEN_EXCHANGE, ClientAuth, Dpop, pkce_pair, request_token
from mcp_agent_kit.client.oauth.net import Fetcher, Send, fetcher_for, origin, post_json
from mcp_agent_kit.client.oauth.redirect import HeadlessRedirect, Redirector
from mcp_agent_kit.client.oauth.store import MemoryTokenStore, Registration, Token, TokenStore

log = logging.getLogger("mcp_agent_kit.client.oauth")
MAX_STEP_UPS = 2
RETRY_AFTER = 60.0  # seconds a failed login stays failed before a new challenge may start another
GRANTS = ("authorization_code", "client_credentials", "jwt_bearer", "token_exchange")
_SECRET_METHODS = ("client_secret_basic", "client_secret_post")


@dataclass(frozen=True)
class AuthorizationRequest:
    """One authorization-code request: where the browser goes, and what its answer must match."""

    url: str
    state: str
    verifier: str = field(repr=False)
    redirect_uri: str


@dataclass
class OAuthConfig:
    """What the client knows before it meets an authorization server (all optional)."""

    client_id: str | None = None
    client_secret: str | None = None
    auth_method: str | None = None  # token endpoint auth; default: the best the server supports
    private_key_pem: str | None = None  # for private_key_jwt
    issuer: str | None = None  # the issuer pre-registered credentials belong to (SEP-2352)
    client_metadata_url: str | None = None  # a client ID metadata document URL (https, with a path)
    client_name: str = "mcp-agent-kit"
    application_type: str = "native"  # RFC 7591 / OIDC registration: "web" for a server-side client (the board)
    scopes: list[str] = field(default_factory=list)  # asked for on top of what the server names
    grant: str = "authorization_code"
    assertion: str | None = None  # the JWT for the jwt_bearer grant
    exchange: dict[str, str] = field(default_factory=dict)  # token_exchange: idp_token_endpoint, idp_id_token...
    refresh: bool = True  # ask for refresh tokens (offline_access when the server lists it)
    dpop: bool = True  # use DPoP when the authorization server offers ES256 proofs
    login: bool = True  # False: use a cached token (and its refresh) only, never start a new grant

    def __post_init__(self) -> None:
        if self.grant not in GRANTS:
            raise ValueError(f"unknown grant {self.grant!r}; use one of {', '.join(GRANTS)}")


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


class OAuth:
    """Authorization for one MCP server URL."""

    def __init__(self, server_url: str, config: OAuthConfig | None = None, *, redirector: Redirector | None = None,
                 store: TokenStore | None = None, transport: Send | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.server_url = server_url
        self.config = config or OAuthConfig()
        self.redirector = redirector or HeadlessRedirect()
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.send = transport if transport is not None else fetcher_for(server_url)  # SSRF rules: net.py
        self.clock = clock  # wall-clock seconds: expiry times are absolute
        self.origin = origin(server_url)
        self.token: Token | None = self._cached()
        self.requested: list[str] = self.token.scope.split() if self.token else []
        self.found: disco.Discovery | None = None
        self.dpop: Dpop | None = None
        self.error: str | None = None
        self._failed_at = 0.0
        self.step_ups = 0
        self._unproven: str | None = None  # a token from a login that no request has got through with yet
        self._key = EcKey.from_pem(self.config.private_key_pem) if self.config.private_key_pem else None
        self._lock = threading.RLock()

    # ---- what the channel calls ----------------------------------------------------------------------
    def headers(self, method: str, url: str) -> dict[str, str]:
        if origin(url) != self.origin:
            return {}
        with self._lock:
            token = self.token
            if token is not None and token.refresh_token and token.refresh_due(self.clock()):
                token = self._adopt_newer(token) or self._refresh_quietly(token)
        if token is None:
            return {}
        if token.dpop and self.dpop is not None:
            return {"Authorization": f"DPoP {token.access_token}",
                    "DPoP": self.dpop.proof(method, url, token.access_token)}
        return {"Authorization": f"Bearer {token.access_token}"}

    def challenge(self, status: int, response: dict[str, str], sent: dict[str, str], url: str) -> bool:
        """Handle a 401/403 from the server; True when the request should be sent again."""
        used = sent.get("Authorization", "").partition(" ")[0].lower()  # its challenge carries the error
        found = pick(response.get("www-authenticate", ""), (used, "dpop", "bearer") if used else ("dpop", "bearer"))
        params = found.params if found else {}
        with self._lock:
            held = self.token.access_token if self.token else None
            if held is not None and not sent.get("Authorization", "").endswith(f" {held}"):
                return True  # another request already renewed the token
            if self.error is not None:
                if time.monotonic() - self._failed_at < RETRY_AFTER:
                    return False
                self.error = None
            if params.get("error") == "use_dpop_nonce" and self.dpop is not None:
                return self.dpop.remember(url, response)
            try:
                if status == 403:
                    return self._step_up(params)
                return self._reauthorize(params)
            except OAuthError as exc:
                self.error, self._failed_at = str(exc), time.monotonic()
                log.log(logging.INFO if isinstance(exc, LoginNeeded) else logging.ERROR,
                        "authorization for %s failed: %s", self.server_url, exc)
                return False

    def accepted(self, sent: dict[str, str]) -> None:
        """A request carrying `sent` got past authorization: its token works."""
        if self._unproven is not None and sent.get("Authorization", "").endswith(f" {self._unproven}"):
            self._unproven = None

    def login(self) -> Token:
        """Authorize now, without waiting for a challenge (discovery from the well-known URLs)."""
        with self._lock:
            self.error = None
            if not self._reauthorize({}):
                raise OAuthError(self.error or "authorization failed")
            assert self.token is not None
            return self.token

    # ---- decisions -----------------------------------------------------------------------------------
    def _step_up(self, params: dict[str, str]) -> bool:
        if params.get("error") != "insufficient_scope":
            return False
        wanted = (params.get("scope") or "").split()
        if not wanted or set(wanted) <= set(self.requested) or self.step_ups >= MAX_STEP_UPS:
            return False  # nothing new to ask for: the refusal is permanent
        self._may_log_in()
        self.step_ups += 1
        self._discover(params.get("resource_metadata"))
        self._obtain(_union(self.requested, wanted))
        return True

    def _adopt_newer(self, held: Token | None) -> Token | None:
        """A token another process (or client) stored for the same key since `held` was read: use
        it rather than spend a refresh token that process may have rotated already."""
        if held is None:
            return None
        for token in self.store.tokens():
            if token.key() == held.key() and token.access_token != held.access_token \
                    and not token.refresh_due(self.clock()):
                self.token = token
                return token
        return None

    def _reauthorize(self, params: dict[str, str]) -> bool:
        if self._adopt_newer(self.token) is not None:
            return True
        old, self.token = self.token, None
        if old is not None:
            self.store.drop_token(old)
        if old is None or not old.refresh_token:
            self._may_log_in()
        found = self._discover(params.get("resource_metadata"))
        if old is not None and old.access_token == self._unproven and old.issuer == found.issuer:
            why = params.get("error_description") or params.get("error") or "no reason given"
            raise OAuthError(f"{self.server_url} refuses the token {found.issuer} just issued for it "
                             f"({params.get('error', 'invalid_token')}: {why})")
        if old is not None and old.refresh_token and old.issuer == found.issuer:
            try:
                self._refresh(old)
                return True
            except OAuthError as exc:
                log.info("refreshing the token for %s failed (%s); authorizing again", self.server_url, exc)
        self._may_log_in()
        challenged = (params.get("scope") or "").split()
        self._obtain(_union(challenged or found.scopes_supported, self.config.scopes))
        return True

    def _may_log_in(self) -> None:
        if not self.config.login:
            raise LoginNeeded(f"{self.server_url} needs OAuth authorization and no usable token is cached for it")

    def _discover(self, header_url: str | None) -> disco.Discovery:
        self.found = disco.discover(self.send, self.server_url, header_url, self.config.issuer)
        return self.found

    def _obtain(self, scopes: list[str]) -> None:
        found = self.found
        assert found is not None
        supported = found.metadata.get("scopes_supported")
        if self.config.refresh and isinstance(supported, list) and "offline_access" in supported and scopes:
            scopes = _union(scopes, ["offline_access"])
        self.requested = scopes
        dpop_algs = found.metadata.get("dpop_signing_alg_values_supported")
        if self.config.dpop and isinstance(dpop_algs, list) and "ES256" in dpop_algs and self.dpop is None:
            self.dpop = Dpop()
        form = {"resource": found.resource, **({"scope": " ".join(scopes)} if scopes else {})}
        grant = self.config.grant
        if grant == "authorization_code":  # the scope went with the authorization request
            auth = self._client_auth(found, self.redirector.redirect_uri)
            form = {"resource": found.resource, **self._authorization_code(found, auth, scopes)}
        else:
            auth = self._client_auth(found, "")
            form.update(self._other_grant(found, grant, form))
        answer = request_token(self.send, self._endpoint(found, "token_endpoint"), form, auth, self.dpop)
        self._keep(answer, found, auth.client_id, " ".join(scopes))

    def _other_grant(self, found: disco.Discovery, grant: str, form: dict[str, str]) -> dict[str, str]:
        if grant == "client_credentials":
            return {"grant_type": "client_credentials"}
        if grant == "jwt_bearer":
            if not self.config.assertion:
                raise OAuthError("the jwt_bearer grant needs an assertion (a JWT)")
            return {"grant_type": JWT_BEARER, "assertion": self.config.assertion}
        return {"grant_type": JWT_BEARER, "assertion": self._id_jag(found, form)}

    def _id_jag(self, found: disco.Discovery, form: dict[str, str]) -> str:
        """RFC 8693 exchange of an identity token for an ID-JAG at the enterprise IdP (SEP-990)."""
        ex = self.config.exchange
        if not ex.get("idp_token_endpoint") or not ex.get("idp_id_token"):
            raise OAuthError("the token_exchange grant needs idp_token_endpoint and idp_id_token")
        request = {"grant_type": TOKEN_EXCHANGE, "subject_token": ex["idp_id_token"],
                   "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                   "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                   "audience": found.issuer, **form}
        idp_auth = ClientAuth(ex.get("idp_client_id", ""), "client_secret_post" if ex.get("idp_client_secret")
                              else "none", ex.get("idp_client_secret"))
        answer = request_token(self.send, ex["idp_token_endpoint"], request, idp_auth, None)
        return str(answer["access_token"])

    def _authorization_code(self, found: disco.Discovery, auth: ClientAuth, scopes: list[str]) -> dict[str, str]:
        asked = self.authorization_request(found, auth, scopes, self.redirector.redirect_uri)
        return self.authorization_grant(found, asked, self.redirector.authorize(asked.url))

    def authorization_request(self, found: disco.Discovery, auth: ClientAuth, scopes: list[str],
                              redirect_uri: str) -> AuthorizationRequest:
        """The authorization URL to send a browser to (PKCE S256, a fresh `state`, the RFC 8707
        `resource`), and what its answer is checked against (board.web_oauth keeps it in a cookie)."""
        verifier, code_challenge = pkce_pair()
        state = secrets.token_urlsafe(24)
        query = {"response_type": "code", "client_id": auth.client_id, "redirect_uri": redirect_uri, "state": state,
                 "code_challenge": code_challenge, "code_challenge_method": "S256", "resource": found.resource}
        if scopes:
            query["scope"] = " ".join(scopes)
            if "offline_access" in scopes:
                query["prompt"] = "consent"
        endpoint = self._endpoint(found, "authorization_endpoint")
        if isinstance(self.send, Fetcher):
            self.send.check(endpoint)  # the browser (or the headless redirect) goes there: the same rules
        url = f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"
        return AuthorizationRequest(url, state, verifier, redirect_uri)

    def authorization_grant(self, found: disco.Discovery, asked: AuthorizationRequest,
                            answer: dict[str, str]) -> dict[str, str]:
        """The token request's grant for the authorization response `answer` (the redirect's query) to
        `asked`: OAuthError when its issuer or state is not the expected one, or it carries an error."""
        self._check_iss(found, answer.get("iss"))
        # as bytes: a str with non-ASCII characters would make compare_digest raise TypeError
        if not secrets.compare_digest(str(answer.get("state", "")).encode("utf-8", "surrogatepass"),
                                      asked.state.encode("utf-8", "surrogatepass")):
            raise OAuthError("the authorization response's state does not match the request's: refusing it")
        if answer.get("error"):
            raise OAuthError(f"the authorization server refused: {answer['error']}"
                             + (f" ({answer['error_description']})" if answer.get("error_description") else ""))
        if not answer.get("code"):
            raise OAuthError("the authorization response carries no code")
        return {"grant_type": "authorization_code", "code": answer["code"], "redirect_uri": asked.redirect_uri,
                "code_verifier": asked.verifier}

    @staticmethod
    def _check_iss(found: disco.Discovery, iss: str | None) -> None:
        """RFC 9207 §2.4 with MCP's rule: compare whenever present, exactly; required when advertised."""
        expected = str(found.metadata.get("issuer") or found.issuer)
        if iss is not None and iss != expected:
            raise OAuthError(f"the authorization response came from issuer {iss!r}, not {expected!r} (RFC 9207)")
        if iss is None and found.metadata.get("authorization_response_iss_parameter_supported") is True:
            raise OAuthError("the authorization server promises an iss parameter and the response has none (RFC 9207)")

    @staticmethod
    def _endpoint(found: disco.Discovery, name: str) -> str:
        endpoint = found.endpoint(name)
        if endpoint is None:
            raise OAuthError(f"the authorization server {found.issuer} names no {name}")
        return endpoint

    # ---- registration -----------------------------------------------------------------------------
    def client_auth(self, found: disco.Discovery, redirect_uri: str) -> ClientAuth:
        """The client at `found`'s authorization server for `redirect_uri`: the configured one, a client
        ID metadata document, or a registration (the store's, else a new RFC 7591 one)."""
        return self._client_auth(found, redirect_uri)

    def _client_auth(self, found: disco.Discovery, redirect_uri: str) -> ClientAuth:
        config, meta, issuer = self.config, found.metadata, found.issuer
        offered = meta.get("token_endpoint_auth_methods_supported")
        methods = [m for m in offered if isinstance(m, str)] if isinstance(offered, list) else ["client_secret_basic"]
        if config.client_id:
            if config.issuer not in (None, issuer):
                raise OAuthError(f"the client id is registered with {config.issuer}, but {self.server_url} now uses "
                                 f"{issuer}: register with it and pass that client id")
            method = config.auth_method or self._method(methods, bool(config.client_secret), self._key is not None)
            return ClientAuth(config.client_id, method, config.client_secret, self._key, issuer)
        if meta.get("client_id_metadata_document_supported") is True and config.client_metadata_url:
            return ClientAuth(config.client_metadata_url, "none", issuer=issuer)
        known = self.store.registration(issuer, redirect_uri)
        if known is None:
            known = self._register(found, redirect_uri, methods)
        return ClientAuth(known.client_id, known.auth_method, known.client_secret, None, issuer)

    @staticmethod
    def _method(methods: list[str], secret: bool, key: bool) -> str:
        usable: list[str] = [*(_SECRET_METHODS if secret else ()), *(("private_key_jwt",) if key else ()), "none"]
        return next((method for method in usable if method in methods), usable[0])

    def _register(self, found: disco.Discovery, redirect_uri: str, methods: list[str]) -> Registration:
        endpoint = found.endpoint("registration_endpoint")
        if endpoint is None:
            raise OAuthError(f"{found.issuer} offers no dynamic client registration: configure a client id")
        wanted = "none" if "none" in methods else next((m for m in _SECRET_METHODS if m in methods), "none")
        body: dict[str, Any] = {
            "client_name": self.config.client_name, "redirect_uris": [redirect_uri] if redirect_uri else [],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": wanted, "application_type": self.config.application_type,
        }
        reply = post_json(self.send, endpoint, body)
        if reply.status not in (200, 201):
            raise OAuthError(f"dynamic client registration at {endpoint} failed: HTTP {reply.status}")
        answer = reply.json()
        if not isinstance(answer.get("client_id"), str):
            raise OAuthError(f"dynamic client registration at {endpoint} returned no client_id")
        secret = answer.get("client_secret") if isinstance(answer.get("client_secret"), str) else None
        method = answer.get("token_endpoint_auth_method")
        registration = Registration(found.issuer, answer["client_id"], secret,
                                    method if isinstance(method, str) else wanted, redirect_uri)
        self.store.put_registration(registration)
        return registration

    # ---- tokens ------------------------------------------------------------------------------------
    def _keep(self, answer: dict[str, Any], found: disco.Discovery, client_id: str, asked: str) -> None:
        expires = answer.get("expires_in")
        refresh = answer.get("refresh_token")
        now = self.clock()
        token = Token(str(answer["access_token"]), str(answer.get("token_type") or "Bearer"), found.resource,
                      found.issuer, client_id,
                      now + float(expires) if isinstance(expires, (int, float)) else None,
                      refresh if isinstance(refresh, str) else None, str(answer.get("scope") or asked),
                      str(answer.get("token_type", "")).lower() == "dpop", issued_at=now)
        self.token = token
        self._unproven = token.access_token
        self.store.put_token(token)

    def _refresh(self, old: Token) -> None:
        found = self.found
        if found is None or found.issuer != old.issuer:
            metadata = disco.authorization_server(self.send, old.issuer)
            found = self.found = disco.Discovery(old.resource, old.issuer, metadata)
        auth = self._refresh_auth(found, old)
        form = {"grant_type": "refresh_token", "refresh_token": old.refresh_token or "", "resource": old.resource}
        answer = request_token(self.send, self._endpoint(found, "token_endpoint"), form, auth, self.dpop)
        answer.setdefault("refresh_token", old.refresh_token)
        self._keep(answer, found, auth.client_id, old.scope)

    def _refresh_auth(self, found: disco.Discovery, old: Token) -> ClientAuth:
        """The client the token was issued to: its own registration, whatever redirect URI it was made
        with (`auth login --redirect-port` one day, the gateway's default port the next)."""
        if self.config.client_id is None:
            for known in self.store.registrations():
                if known.issuer == old.issuer and known.client_id == old.client_id:
                    return ClientAuth(known.client_id, known.auth_method, known.client_secret, None, old.issuer)
        coded = self.config.grant == "authorization_code"
        return self._client_auth(found, self.redirector.redirect_uri if coded else "")

    def _refresh_quietly(self, token: Token) -> Token | None:
        try:
            self._refresh(token)
        except OAuthError as exc:
            log.info("refreshing the token for %s failed: %s", self.server_url, exc)
            self.store.drop_token(token)
            self.token = None
        return self.token

    def _cached(self) -> Token | None:
        for token in self.store.tokens():
            if disco.resource_allowed(token.resource, self.server_url) and not token.dpop and (
                    self.config.client_id in (None, token.client_id)):
                return token
        return None
