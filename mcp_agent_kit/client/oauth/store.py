"""client.oauth.store: where tokens and client registrations are kept between runs.

Tokens are keyed by (resource, issuer, client id) and registrations by (issuer, redirect URI),
so credentials of one authorization server are never offered to another (SEP-2352). `MemoryTokenStore`
keeps them for the process; `FileStore` in one JSON file created with mode 0600 under the user's
config directory (`$XDG_CONFIG_HOME/mcp-agent-kit/oauth.json`, default `~/.config/...`). Several
processes may share the file (`auth login` beside a running gateway): every change is a
read-modify-write under an exclusive `fcntl.flock` on `oauth.json.lock` beside it — re-read the
file, apply the one change, write a temporary file in the same directory and rename it over — so
no process loses another's entry; readers see a newer file as soon as it is renamed in. DPoP-bound
tokens are kept in memory only (their key is not written down). A token is due for refresh
`refresh_margin` seconds before it expires: min(60 s, a quarter of its lifetime), so a 30 s token
is used for most of its life. Rules: no network; never logs a value.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

MAX_FILE = 4 << 20
REFRESH_MARGIN = 60.0  # the most seconds before expiry a token is refreshed
REFRESH_FRACTION = 0.25  # ... and at most this share of its lifetime
T = TypeVar("T")


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
    issued_at: float | None = None

    def key(self) -> str:
        return token_key(self.resource, self.issuer, self.client_id)

    def refresh_margin(self) -> float:
        """Seconds before expiry to refresh: min(REFRESH_MARGIN, REFRESH_FRACTION of the lifetime)."""
        if self.expires_at is None or self.issued_at is None:
            return REFRESH_MARGIN
        return max(0.0, min(REFRESH_MARGIN, REFRESH_FRACTION * (self.expires_at - self.issued_at)))

    def refresh_due(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at - now < self.refresh_margin()

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
    def registrations(self) -> list[Registration]: ...
    def put_registration(self, registration: Registration) -> None: ...
    def forget(self, resource: str | None) -> int: ...


Tokens = dict[str, Token]
Registrations = dict[str, Registration]


def _registration_key(issuer: str, redirect_uri: str) -> str:
    return json.dumps([issuer, redirect_uri])


class MemoryTokenStore:
    def __init__(self) -> None:
        self._tokens: Tokens = {}
        self._registrations: Registrations = {}
        self._lock = threading.Lock()

    def _read(self) -> None:
        """Hook for FileStore: bring the in-memory copy up to date (called under the lock)."""

    def _update(self, change: Callable[[Tokens, Registrations], T]) -> T:
        """Apply one change to the tokens and registrations (FileStore: to the file, under its lock)."""
        with self._lock:
            return change(self._tokens, self._registrations)

    def tokens(self) -> list[Token]:
        with self._lock:
            self._read()
            return list(self._tokens.values())

    def put_token(self, token: Token) -> None:
        self._update(lambda tokens, _: tokens.__setitem__(token.key(), token))

    def drop_token(self, token: Token) -> None:
        """Forget this token — not a newer one another process stored under the same key since."""
        def change(tokens: Tokens, _: Registrations) -> None:
            kept = tokens.get(token.key())
            if kept is not None and kept.access_token == token.access_token:
                del tokens[token.key()]
        self._update(change)

    def registration(self, issuer: str, redirect_uri: str) -> Registration | None:
        with self._lock:
            self._read()
            return self._registrations.get(_registration_key(issuer, redirect_uri))

    def registrations(self) -> list[Registration]:
        with self._lock:
            self._read()
            return list(self._registrations.values())

    def put_registration(self, registration: Registration) -> None:
        key = _registration_key(registration.issuer, registration.redirect_uri)
        self._update(lambda _, registrations: registrations.__setitem__(key, registration))

    def forget(self, resource: str | None) -> int:
        """Drop the tokens of one resource (all when None); how many went."""
        def change(tokens: Tokens, _: Registrations) -> int:
            gone = [k for k, t in tokens.items() if resource is None or t.resource == resource]
            for key in gone:
                del tokens[key]
            return len(gone)
        return self._update(change)


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mcp-agent-kit"


class FileStore(MemoryTokenStore):
    """A MemoryTokenStore mirrored to a 0600 JSON file that other processes may change too."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__()
        self.path = path or config_dir() / "oauth.json"
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._seen: tuple[int, int, int] | None = None  # (inode, size, mtime) of the file last read
        with self._lock:
            self._read()

    def _read(self) -> None:
        """Re-read the file when it changed since the last read (an atomic rename: never half-written)."""
        try:
            with open(self.path, "rb") as handle:
                info = os.fstat(handle.fileno())
                seen = (info.st_ino, info.st_size, info.st_mtime_ns)
                if seen == self._seen:
                    return
                data = json.loads(handle.read(MAX_FILE))
        except FileNotFoundError:
            data, seen = {}, (0, 0, 0)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read the token cache {self.path}: {exc}") from None
        tokens: Tokens = {key: token for key, token in self._tokens.items() if token.dpop}  # memory-only
        registrations: Registrations = {}
        try:
            for item in data.get("tokens", []):
                token = Token(**item)
                tokens[token.key()] = token
            for item in data.get("registrations", []):
                registration = Registration(**item)
                registrations[_registration_key(registration.issuer, registration.redirect_uri)] = registration
        except (TypeError, AttributeError):
            raise ValueError(f"the token cache {self.path} is malformed; delete it to log in afresh") from None
        self._tokens, self._registrations, self._seen = tokens, registrations, seen

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _update(self, change: Callable[[Tokens, Registrations], T]) -> T:
        with self._lock, self._file_lock():
            self._read()
            result = change(self._tokens, self._registrations)
            self._write()
            return result

    def _write(self) -> None:
        data = {"tokens": [asdict(t) for t in self._tokens.values() if not t.dpop],
                "registrations": [asdict(r) for r in self._registrations.values()]}
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".oauth-", suffix=".json")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1)
                handle.flush()
                info = os.fstat(handle.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        self._seen = (info.st_ino, info.st_size, info.st_mtime_ns)


MemoryStore = MemoryTokenStore  # the documented name, kept importable
