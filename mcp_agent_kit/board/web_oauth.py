"""board.web_oauth: the web board's OAuth sign-in — an authorization-code flow with PKCE, run by the board
for a person's browser, ending in the same `mak_session` cookie as a token sign-in.

With `--oauth-issuer` the board is a protected resource (auth.resource.ProtectedResource). `GET
/login/oauth` (board.web_app) asks `start(back)` for the authorization URL: the issuer's RFC 8414
metadata (fetched on first use, checked by client.oauth.discovery: the issuer it names, PKCE S256),
the client (`--oauth-client-id` / `--oauth-client-secret-env`, else an RFC 7591 registration when the
issuer offers one, kept in the board's store so every replica uses the first one made), a fresh
`state` and PKCE verifier (client.oauth.session's `authorization_request`), `redirect_uri` =
<the board's origin>/login/callback, `resource` = the board's URL (RFC 8707, the tokens' audience),
`scope` = the scopes the board requires. The browser carries state, verifier and return path in the
signed `mak_oauth` cookie (board.web_auth). `GET /login/callback` hands the redirect's query to
`finish`: state (constant time) and issuer checked and the code exchanged (the client's
`authorization_grant`, client.oauth.grants' `request_token`), the access token validated by the
board's ProtectedResource exactly as on /mcp; the principal is its subject. Every failure is a
SignInError with one line for the page, naming the step that failed.
Rules: reuses client.oauth (no second client); the access token is never stored, logged, put in a
URL or a page — only the principal it names leaves here.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcp_agent_kit.client.oauth.errors import OAuthError
from mcp_agent_kit.client.oauth.store import Registration

if TYPE_CHECKING:
    from mcp_agent_kit.auth.resource import ProtectedResource
    from mcp_agent_kit.client.oauth.discovery import Discovery
    from mcp_agent_kit.client.oauth.grants import ClientAuth
    from mcp_agent_kit.client.oauth.net import Send
    from mcp_agent_kit.client.oauth.session import AuthorizationRequest, OAuth
    from mcp_agent_kit.client.oauth.store import Token
    from mcp_agent_kit.store.base import Store

__all__ = ["CALLBACK", "START", "SignInError", "StoreRegistrations", "WebOAuth"]

START, CALLBACK = "/login/oauth", "/login/callback"
KIND = "board_web"  # the store records: the session key (board.web_auth) and OAuth client registrations
_REGISTRATION = "oauth_client "


class SignInError(Exception):
    """An OAuth sign-in that failed: `status` for the reply, the message one line for the person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class StoreRegistrations:
    """A client.oauth TokenStore that keeps only client registrations, as records of the board's store
    (insert-if-absent: when two replicas register at once, the first record wins); tokens are never kept."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @staticmethod
    def _key(issuer: str, redirect_uri: str) -> str:
        return _REGISTRATION + json.dumps([issuer, redirect_uri])

    def tokens(self) -> list[Token]:
        return []

    def put_token(self, token: Token) -> None:
        pass

    def drop_token(self, token: Token) -> None:
        pass

    def registration(self, issuer: str, redirect_uri: str) -> Registration | None:
        found = self.store.get(KIND, self._key(issuer, redirect_uri))
        try:
            return None if found is None else Registration(**found.body)
        except TypeError:
            return None

    def registrations(self) -> list[Registration]:
        records = self.store.query(KIND, limit=1000).records
        return [Registration(**r.body) for r in records if r.key.startswith(_REGISTRATION)]

    def put_registration(self, registration: Registration) -> None:
        from dataclasses import asdict

        from mcp_agent_kit.store.base import Record

        key = self._key(registration.issuer, registration.redirect_uri)
        self.store.insert(Record(KIND, key, asdict(registration)))

    def forget(self, resource: str | None) -> int:
        return 0


class WebOAuth:
    """The sign-in flow of one board (its ProtectedResource; the client it is registered as, if it is)."""

    def __init__(self, resource: ProtectedResource, store: Store, *, client_id: str | None = None,
                 client_secret: str | None = None, transport: Send | None = None) -> None:
        from mcp_agent_kit.client.oauth.net import send
        from mcp_agent_kit.client.oauth.session import OAuth, OAuthConfig

        self.resource = resource
        self.issuer = resource.authorization_servers[0]
        parts = urlsplit(resource.resource)
        self.redirect_uri = f"{parts.scheme}://{parts.netloc}{CALLBACK}"
        self.registrations = StoreRegistrations(store)
        config = OAuthConfig(client_id=client_id, client_secret=client_secret, issuer=self.issuer,
                             client_name="mcp-agent-kit board", application_type="web",
                             scopes=list(resource.scopes), refresh=False, dpop=False)
        self.send: Send = transport if transport is not None else send  # the operator named the issuer
        self.client: OAuth = OAuth(resource.resource, config, store=self.registrations, transport=self.send)
        self._found: Discovery | None = None
        self._auth: ClientAuth | None = None
        self._lock = threading.Lock()

    def _prepared(self) -> tuple[Discovery, ClientAuth]:
        """The issuer's checked metadata and this board's client there (both kept once found)."""
        from mcp_agent_kit.client.oauth.discovery import Discovery, authorization_server
        from mcp_agent_kit.client.oauth.grants import ClientAuth

        with self._lock:
            if self._found is None:
                metadata = authorization_server(self.send, self.issuer)
                self._found = Discovery(self.resource.resource, self.issuer, metadata, list(self.resource.scopes))
            if self._auth is None:
                auth = self.client.client_auth(self._found, self.redirect_uri)
                kept = None if self.client.config.client_id else self.registrations.registration(
                    self.issuer, self.redirect_uri)  # a racing replica's registration, when its record won
                if kept is not None and kept.client_id != auth.client_id:
                    auth = ClientAuth(kept.client_id, kept.auth_method, kept.client_secret, None, self.issuer)
                self._auth = auth
            return self._found, self._auth

    def start(self) -> AuthorizationRequest:
        """A new authorization request (its URL for the browser; state and verifier for the cookie)."""
        try:
            found, auth = self._prepared()
            return self.client.authorization_request(found, auth, list(self.resource.scopes), self.redirect_uri)
        except OAuthError as exc:
            raise SignInError(502, f"Sign-in with {self.issuer} is not available now: {exc}") from None

    def finish(self, asked: AuthorizationRequest, answer: dict[str, str]) -> str:
        """The principal the authorization response `answer` (to `asked`) signs in, else SignInError."""
        from mcp_agent_kit.auth.resource import Refusal
        from mcp_agent_kit.client.oauth.grants import request_token

        try:
            found, auth = self._prepared()
        except OAuthError as exc:
            raise SignInError(502, f"Sign-in with {self.issuer} is not available now: {exc}") from None
        try:
            grant = self.client.authorization_grant(found, asked, answer)
        except OAuthError as exc:
            raise SignInError(403 if answer.get("error") else 400, f"Not signed in: {exc}.") from None
        endpoint = found.endpoint("token_endpoint")
        try:
            if endpoint is None:
                raise OAuthError(f"{self.issuer} names no token_endpoint")
            token: dict[str, Any] = request_token(self.send, endpoint, {"resource": found.resource, **grant},
                                                  auth, None)
        except OAuthError as exc:
            raise SignInError(502, f"The board could not exchange the authorization code: {exc}.") from None
        try:
            return self.resource.authenticate(f"Bearer {token['access_token']}").principal
        except Refusal as exc:
            raise SignInError(401, f"The token {self.issuer} issued is not one this board accepts: "
                              f"{exc.description}.") from None
