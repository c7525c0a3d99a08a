"""acp.agent.session: an agent's sessions — their history, config values and state — and where they are kept.

An AgentSession is plain data the agent owns: id, cwd, extra directories, title, update time, the
conversation history (user and agent messages as content blocks, replayed by `session/load`),
the current config option values and a JSON-able `state` dict for the author. A store keeps
sessions: MemorySessionStore for one process, JsonSessionStore for one JSON file per session under a
directory, so a new process can load them. Rules: no I/O beyond the store's own directory; no
protocol knowledge beyond the SessionInfo field names; session ids from clients are checked
before they become file names; every file read is size-capped.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import mcp_agent_kit.safefile as safefile
from mcp_agent_kit.acp.agent import updates

SAFE_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")
RECORD_LIMIT = 16 * safefile.MIB  # one session file
LIST_LIMIT = 10_000  # sessions a JsonSessionStore will read for one session/list


def now() -> str:
    """The current time as ISO 8601 UTC with a Z (SessionInfo.updatedAt)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Message:
    """One message of the history: `role` "user" or "agent", its content blocks, a stable id."""

    role: str
    content: list[dict[str, Any]] = field(default_factory=list)
    message_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "messageId": self.message_id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        return cls(str(data["role"]), list(data.get("content") or []), str(data.get("messageId") or uuid.uuid4().hex))


REPLAY = {"user": updates.user_message, "agent": updates.agent_message}


@dataclass
class AgentSession:
    """One ACP session as the agent sees it."""

    session_id: str
    cwd: str
    additional_directories: list[str] = field(default_factory=list)
    title: str | None = None
    updated_at: str = field(default_factory=now)
    history: list[Message] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)  # as the client last sent them; not stored

    def text_history(self) -> list[tuple[str, str]]:
        """(role, text) per message, the text blocks joined: what an author usually needs."""
        return [(m.role, "".join(b.get("text", "") for b in m.content if b.get("type") == "text"))
                for m in self.history]

    def replay_updates(self) -> list[dict[str, Any]]:
        """The history as `user_message_chunk` / `agent_message_chunk` updates, in order."""
        return [REPLAY[m.role](block, m.message_id) for m in self.history if m.role in REPLAY for block in m.content]

    def info(self) -> dict[str, Any]:
        """Its SessionInfo for `session/list`."""
        data: dict[str, Any] = {"sessionId": self.session_id, "cwd": self.cwd}
        if self.additional_directories:
            data["additionalDirectories"] = list(self.additional_directories)
        if self.title is not None:
            data["title"] = self.title
        data["updatedAt"] = self.updated_at
        return data

    def forked(self, session_id: str, cwd: str) -> AgentSession:
        """A copy of this session under a new id (history, title, config values and state, deep-copied)."""
        data = json.loads(json.dumps(self.to_json()))
        data.update(sessionId=session_id, cwd=cwd, updatedAt=now())
        return AgentSession.from_json(data)

    def to_json(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "cwd": self.cwd, "additionalDirectories": self.additional_directories,
                "title": self.title, "updatedAt": self.updated_at, "history": [m.to_json() for m in self.history],
                "config": self.config, "state": self.state}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentSession:
        return cls(str(data["sessionId"]), str(data["cwd"]), list(data.get("additionalDirectories") or []),
                   data.get("title"), str(data.get("updatedAt") or now()),
                   [Message.from_json(m) for m in data.get("history") or []],
                   dict(data.get("config") or {}), dict(data.get("state") or {}))


class AgentSessionStore(Protocol):
    """Where sessions are kept between turns (and, for a persistent store, between processes)."""

    def get(self, session_id: str) -> AgentSession | None: ...

    def put(self, session: AgentSession) -> None: ...

    def delete(self, session_id: str) -> None: ...

    def all(self) -> list[AgentSession]: ...


class MemorySessionStore:
    """Sessions in a dict: they live as long as the process."""

    def __init__(self) -> None:
        self._sessions: dict[str, AgentSession] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str) -> AgentSession | None:
        with self._lock:
            return self._sessions.get(session_id)

    def put(self, session: AgentSession) -> None:
        with self._lock:
            self._sessions[session.session_id] = session

    def delete(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def all(self) -> list[AgentSession]:
        with self._lock:
            return list(self._sessions.values())


class JsonSessionStore:
    """One `<sessionId>.json` per session under `directory` (created 0700), written atomically.

    Sessions are cached in memory once read, so a running turn and the file agree."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._cache = MemorySessionStore()
        self._lock = threading.Lock()

    def _path(self, session_id: str) -> Path | None:
        return self.directory / f"{session_id}.json" if SAFE_ID.fullmatch(session_id) else None

    def _read(self, path: Path) -> AgentSession | None:
        try:
            data = json.loads(safefile.read_text(path, limit=RECORD_LIMIT, root=self.directory))
            return AgentSession.from_json(data) if isinstance(data, dict) else None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing, unsafe, too large or not a session file: as if absent

    def get(self, session_id: str) -> AgentSession | None:
        cached = self._cache.get(session_id)
        if cached is not None:
            return cached
        path = self._path(session_id)
        session = self._read(path) if path is not None else None
        if session is not None and session.session_id == session_id:
            self._cache.put(session)
            return session
        return None

    def put(self, session: AgentSession) -> None:
        path = self._path(session.session_id)
        if path is None:
            raise ValueError(f"session id {session.session_id!r} cannot name a file")
        self._cache.put(session)
        body = json.dumps(session.to_json(), ensure_ascii=False).encode("utf-8")
        if len(body) > RECORD_LIMIT:  # it could not be read back: keep the last file that can
            raise ValueError(f"session {session.session_id} is {len(body)} bytes, over the {RECORD_LIMIT}-byte limit;"
                             " not saved")
        with self._lock:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(body)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise

    def delete(self, session_id: str) -> None:
        self._cache.delete(session_id)
        path = self._path(session_id)
        if path is not None:
            with self._lock:
                path.unlink(missing_ok=True)

    def all(self) -> list[AgentSession]:
        try:
            paths = sorted(self.directory.glob("*.json"))[:LIST_LIMIT]
        except OSError:
            return []
        found = (self.get(path.stem) for path in paths if not path.name.startswith("."))
        return [session for session in found if session is not None]


def default_directory(env_var: str, app: str) -> Path:
    """`$env_var` when set, else `~/.cache/<app>/sessions` (the place a JsonSessionStore keeps files)."""
    configured = os.environ.get(env_var)
    return Path(configured) if configured else Path.home() / ".cache" / app / "sessions"
