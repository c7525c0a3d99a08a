"""client.oauth.store: where tokens and client registrations are kept between runs.

Tokens are keyed by (resource, issuer, client id) and registrations by (issuer, redirect URI),
so credentials of one authorization server are never offered to another (SEP-2352). `MemoryStore`
keeps them for the process; `FileStore` in one JSON file created with mode 0600 (rewritten whole,
through a temporary file in the same directory) under the user's config directory
(`$XDG_CONFIG_HOME/mcp-agent-kit/oauth.json`, default `~/.config/...`). DPoP-bound tokens are kept
in memory only (their key is not written down). Rules: no network; never logs a value.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

MAX_FILE = 4 << 20


@dataclass
class Token:
    access_token: str
    token_type: str
    resource: str
    issuer: str
    client_id: str
    expires_at: float | None = None
    refresh_token: str | None = None
    scope: str = ""
    dpop: bool = False

    def key(self) -> str:
        return token_key(self.resource, self.issuer, self.client_id)

    def expires_within(self, seconds: float) -> bool:
        return self.expires_at is not None and self.expires_at - time.time() < seconds

    def public(self) -> dict[str, Any]:
        """What `auth status` shows: everything but the secrets."""
        return {"resource": self.resource, "issuer": self.issuer, "client_id": self.client_id,
                "token_type": self.token_type, "scope": self.scope, "expires_at": self.expires_at,
                "refreshable": self.refresh_token is not None}


@dataclass
class Registration:
    issuer: str
    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    redirect_uri: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def token_key(resource: str, issuer: str, client_id: str) -> str:
    return json.dumps([resource, issuer, client_id])


class TokenStore(Protocol):
    def tokens(self) -> list[Token]: ...
    def put_token(self, token: Token) -> None: ...
    def drop_token(self, token: Token) -> None: ...
    def registration(self, issuer: str, redirect_uri: str) -> Registration | None: ...
    def put_registration(self, registration: Registration) -> None: ...
    def forget(self, resource: str | None) -> int: ...


class MemoryStore:
    def __init__(self) -> None:
        self._tokens: dict[str, Token] = {}
        self._registrations: dict[str, Registration] = {}
        self._lock = threading.Lock()

    def tokens(self) -> list[Token]:
        with self._lock:
            return list(self._tokens.values())

    def put_token(self, token: Token) -> None:
        with self._lock:
            self._tokens[token.key()] = token
        self._changed()

    def drop_token(self, token: Token) -> None:
        with self._lock:
            self._tokens.pop(token.key(), None)
        self._changed()

    def registration(self, issuer: str, redirect_uri: str) -> Registration | None:
        with self._lock:
            return self._registrations.get(json.dumps([issuer, redirect_uri]))

    def put_registration(self, registration: Registration) -> None:
        with self._lock:
            self._registrations[json.dumps([registration.issuer, registration.redirect_uri])] = registration
        self._changed()

    def forget(self, resource: str | None) -> int:
        """Drop the tokens of one resource (all when None); how many went."""
        with self._lock:
            gone = [k for k, t in self._tokens.items() if resource is None or t.resource == resource]
            for key in gone:
                del self._tokens[key]
        self._changed()
        return len(gone)

    def _changed(self) -> None:
        """Hook for FileStore."""


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mcp-agent-kit"


class FileStore(MemoryStore):
    """A MemoryStore mirrored to a 0600 JSON file."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__()
        self.path = path or config_dir() / "oauth.json"
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                data = json.loads(handle.read(MAX_FILE))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read the token cache {self.path}: {exc}") from None
        try:
            for item in data.get("tokens", []):
                token = Token(**item)
                self._tokens[token.key()] = token
            for item in data.get("registrations", []):
                registration = Registration(**item)
                self._registrations[json.dumps([registration.issuer, registration.redirect_uri])] = registration
        except (TypeError, AttributeError):
            raise ValueError(f"the token cache {self.path} is malformed; delete it to log in afresh") from None

    def _changed(self) -> None:
        with self._lock:
            data = {"tokens": [asdict(t) for t in self._tokens.values() if not t.dpop],
                    "registrations": [asdict(r) for r in self._registrations.values()]}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".oauth-", suffix=".json")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1)
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

