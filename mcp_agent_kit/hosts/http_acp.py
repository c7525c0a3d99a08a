"""hosts.http_acp: ACP's Streamable HTTP profile (the RFD, over HTTP/1.1) in front of one agent process per connection.

`POST initialize` without `Acp-Connection-Id` starts an agent, relays the message and answers 200 with the
agent's JSON reply and the new `Acp-Connection-Id`. Every later POST carries that id and gets 202: the agent's
output arrives on Server-Sent Events streams, opened by `GET` (Accept: text/event-stream): the connection's
stream (`Acp-Connection-Id` alone) and one per session (plus `Acp-Session-Id`). Routing of the agent's output,
the ACP SDK's: a response whose result names a `sessionId`, or the answer to `session/new|load|resume|fork`,
registers that session and goes on the connection stream; an answer to a request about a known session, and
a request or notification whose `params.sessionId` is known, go on that session's stream; everything else on
the connection stream. Streams buffer until their GET comes (hosts.outbox). Answers to the agent's requests
are accepted with or without `Acp-Session-Id` (the SDK omits it). `DELETE` ends the connection and its agent.
Statuses (the RFD's §Content Negotiation and §Unified Endpoint Routing): 415 not application/json, 501 a batch,
400 a missing `Acp-Connection-Id` (or a session-scoped method without `Acp-Session-Id`), 404 an unknown
connection or session, 406 a GET that does not accept text/event-stream, 202 a DELETE; 503 when the agent has
all the connections it may have, 502/504 when its process fails or does not answer initialize in time.
A connection whose initialize named a workspace (hosts.app: `Acp-Workspace`) starts its agent there, and the
host answers the agent's fs and terminal requests (hosts.confined). Rules: the ACP wire passes unchanged (but
initialize's clientCapabilities on a workspace-bound connection); the gate ran before (hosts.app).
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from mcp_agent_kit.hosts.config import HostedAgent
from mcp_agent_kit.hosts.confined import Confined
from mcp_agent_kit.hosts.link import AgentProcess, LinkError
from mcp_agent_kit.hosts.outbox import SseOutbox
from mcp_agent_kit.hosts.registry import HostApi
from mcp_agent_kit.hosts.replies import send, send_error
from mcp_agent_kit.httpd import Channel, Request

__all__ = ["INIT_TIMEOUT_S", "HttpAcpConnection", "handle"]

INIT_TIMEOUT_S = 30.0
SCOPED = frozenset({"session/prompt", "session/cancel", "session/set_mode", "session/set_model",
                    "session/set_config_option", "session/close"})  # need Acp-Session-Id on POST
OPENERS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
ATTACHING = frozenset({"session/load", "session/resume"})  # may name a session this connection has not seen


def _key(value: Any) -> str:
    return str(value)


def _session_of(part: Any) -> str | None:
    found = part.get("sessionId") if isinstance(part, dict) else None
    return found if isinstance(found, str) and found else None


class HttpAcpConnection:
    """One Streamable HTTP connection: its agent process, its streams, the requests it waits answers for."""

    profile = "http"

    def __init__(self, host: HostApi, agent: HostedAgent, cwd: str, workspace: str | None = None) -> None:
        self.host, self.agent = host, agent
        self.id = uuid.uuid4().hex
        self.box = SseOutbox()
        self.sessions: dict[str, SseOutbox] = {}
        self._asked: dict[str, tuple[str, str | None]] = {}  # the client's request id -> (method, sessionId)
        self._direct: dict[str, tuple[threading.Event, list[str]]] = {}  # answered in the POST's own reply
        self._lock = threading.Lock()
        self.ended = False
        self.why = ""
        self.link = AgentProcess(agent, cwd=cwd, on_message=self._from_agent, on_end=self.end,
                              label=f"acp-http-{self.id[:8]}")
        self.confined = None if workspace is None else Confined(workspace, agent, self.link.send)

    def _advertised(self, message: dict[str, Any], text: str) -> tuple[dict[str, Any], str | None]:
        """`initialize` with the host's fs and terminal advertised, on a workspace-bound connection."""
        changed = None if self.confined is None else self.confined.initialize(message)
        return (message, text) if changed is None else (changed, None)

    # ---- the client's side -----------------------------------------------------------------------------
    def initialize(self, message: dict[str, Any], text: str) -> str:
        """Relay initialize and wait for the agent's reply (its JSON text); LinkError, TimeoutError."""
        done, slot = threading.Event(), list[str]()
        with self._lock:
            self._direct[_key(message.get("id"))] = (done, slot)
        if not self.link.send(*self._advertised(message, text)):
            raise LinkError(self.why or "the agent is gone")
        if not done.wait(INIT_TIMEOUT_S):
            raise TimeoutError(f"the agent did not answer initialize within {INIT_TIMEOUT_S:g} s")
        if not slot:
            raise LinkError(self.why or "the agent is gone")
        return slot[0]

    def post(self, message: dict[str, Any], text: str, session: str | None) -> tuple[int, str]:
        """Relay one message: (202, "") or (status, why it is refused)."""
        method = message.get("method")
        named = _session_of(message.get("params"))
        if session is not None:
            if named is not None and named != session:
                return 400, f"Acp-Session-Id {session} differs from params.sessionId {named}: send the same id"
            with self._lock:
                known = session in self.sessions
            if not known and method not in ATTACHING:
                return 404, f"unknown Acp-Session-Id {session} on this connection: open it with session/new or load"
            if not known:
                self._open_session(session)
        elif method in SCOPED and named is not None:
            return 400, f"{method} is session-scoped: send the Acp-Session-Id header ({named})"
        if isinstance(method, str) and "id" in message:
            with self._lock:
                self._asked[_key(message["id"])] = (method, named or session)
        if not self.link.send(*self._advertised(message, text)):
            return 404, f"the connection has ended ({self.why or 'the agent is gone'}): POST initialize again"
        return 202, ""

    def stream(self, session: str | None) -> SseOutbox | None:
        if session is None:
            return self.box
        with self._lock:
            return self.sessions.get(session)

    # ---- the agent's side --------------------------------------------------------------------------------
    def _open_session(self, session: str) -> SseOutbox:
        with self._lock:
            box = self.sessions.get(session)
            if box is None:
                box = self.sessions[session] = SseOutbox()
                if self.ended:
                    box.close()
            return box

    def _from_agent(self, text: str, message: dict[str, Any]) -> None:
        if self.confined is not None and self.confined.intercept(message):
            return
        box = self.box
        if "method" not in message and "id" in message:  # a response: classify by method first (ids repeat)
            key = _key(message["id"])
            with self._lock:
                direct = self._direct.pop(key, None)
                asked = None if direct is not None else self._asked.pop(key, None)
            if direct is not None:
                direct[1].append(text)
                direct[0].set()
                return
            method, named = asked or ("", None)
            minted = _session_of(message.get("result"))
            if minted is not None or (method in ATTACHING and named is not None and "result" in message):
                self._open_session(minted or named or "")
            elif method not in OPENERS and named is not None:
                box = self.stream(named) or self.box
        else:
            named = _session_of(message.get("params"))
            if named is not None:
                box = self.stream(named) or self.box
        box.put(text)

    def end(self, why: str, discard: bool = False) -> None:
        """End the connection: its agent stops, its streams end (after what is left, unless `discard`)."""
        with self._lock:
            if self.ended:
                return
            self.ended, self.why = True, why
            boxes = [self.box, *self.sessions.values()]
            waiting = list(self._direct.values())
            self._direct.clear()
        self.link.stop()
        if self.confined is not None:
            self.confined.close()
        for box in boxes:
            box.close(discard)
        for done, _ in waiting:
            done.set()
        self.host.registry.remove(self)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            sessions = sorted(self.sessions)
            streams = sum(box.attached for box in [self.box, *self.sessions.values()])
        return {"id": self.id, "agent": self.agent.id, "profile": self.profile, "sessions": sessions,
                "streams": streams, **self.link.usage()}


# ---- the HTTP requests -----------------------------------------------------------------------------------
def handle(host: HostApi, agent: HostedAgent | None, request: Request, channel: Channel,
           workspace: str | None = None) -> bool:
    """One request to an ACP endpoint that is no WebSocket upgrade (`workspace`: the bound workspace's path,
    used by an `initialize` that opens a connection)."""
    if request.method == "POST":
        return _post(host, agent, request, channel, workspace)
    method = {"GET": _get, "DELETE": _delete}.get(request.method)
    if method is None:
        return send_error(channel, request, 405, f"{request.method} is not served on an ACP endpoint: "
                          "use POST, GET (or a WebSocket upgrade) or DELETE", {"Allow": "GET, POST, DELETE"})
    return method(host, agent, request, channel)


def _connection(host: HostApi, agent: HostedAgent | None, request: Request,
                channel: Channel) -> HttpAcpConnection | bool:
    """The connection the request names; else the refusal is answered (what `handle` returns)."""
    conn_id = request.headers.get("acp-connection-id")
    if not conn_id:
        return send_error(channel, request, 400, "send the Acp-Connection-Id header that initialize answered with "
                          "(POST initialize first)")
    conn = host.registry.get(conn_id.strip())
    if not isinstance(conn, HttpAcpConnection) or agent is None or conn.agent.id != agent.id:
        return send_error(channel, request, 404, f"unknown Acp-Connection-Id {conn_id[:64]!r}: it ended or never "
                          "existed here; POST initialize for a new connection")
    return conn


def _post(host: HostApi, agent: HostedAgent | None, request: Request, channel: Channel,
          workspace: str | None) -> bool:
    if not request.complete:
        return send_error(channel, request, 413, f"the body is over {host.max_body} bytes or not length-framed: "
                          "POST one JSON-RPC message with a Content-Length")
    content_type = (request.headers.get("content-type") or "").partition(";")[0].strip().lower()
    if content_type != "application/json":
        return send_error(channel, request, 415, "send Content-Type: application/json")
    text = request.body.decode("utf-8", "replace").strip()
    try:
        message = json.loads(text)
    except ValueError as exc:
        return send_error(channel, request, 400, f"the body is not JSON: {exc}")
    if isinstance(message, list):
        return send_error(channel, request, 501, "JSON-RPC batches are not supported: POST one message at a time")
    if not isinstance(message, dict):
        return send_error(channel, request, 400, "the body must be one JSON-RPC message (a JSON object)")
    if not request.headers.get("acp-connection-id") and message.get("method") == "initialize" and "id" in message:
        return _initialize(host, agent, request, channel, message, text, workspace)
    conn = _connection(host, agent, request, channel)
    if not isinstance(conn, HttpAcpConnection):
        return conn
    session = request.headers.get("acp-session-id")
    status, why = conn.post(message, text, session.strip() if session else None)
    return send(channel, request, status) if status == 202 else send_error(channel, request, status, why)


def _initialize(host: HostApi, agent: HostedAgent | None, request: Request, channel: Channel,
                message: dict[str, Any], text: str, workspace: str | None) -> bool:
    if agent is None:
        return send_error(channel, request, 404, host.no_default())
    if not host.registry.reserve(agent):
        return send_error(channel, request, 503, f"agent {agent.id!r} has {agent.spec.max_concurrent} connections, "
                          "its limit (max_concurrent): try again later", {"Retry-After": "5"})
    conn = HttpAcpConnection(host, agent, workspace or host.place(agent), workspace)
    try:
        conn.link.start()
    except LinkError as exc:
        host.registry.release(agent)
        return send_error(channel, request, 502, str(exc))
    host.registry.add(conn)
    try:
        reply = conn.initialize(message, text)
    except (LinkError, TimeoutError) as exc:
        conn.end(str(exc), discard=True)
        return send_error(channel, request, 504 if isinstance(exc, TimeoutError) else 502, str(exc))
    return send(channel, request, 200, reply.encode(), "application/json", {"Acp-Connection-Id": conn.id})


def _get(host: HostApi, agent: HostedAgent | None, request: Request, channel: Channel) -> bool:
    if "text/event-stream" not in (request.headers.get("accept") or "").lower():
        return send_error(channel, request, 406, "a GET opens a stream: send Accept: text/event-stream "
                          "(or upgrade to a WebSocket)")
    conn = _connection(host, agent, request, channel)
    if not isinstance(conn, HttpAcpConnection):
        return conn
    session = (request.headers.get("acp-session-id") or "").strip() or None
    box = conn.stream(session)
    if box is None:
        return send_error(channel, request, 404, f"unknown Acp-Session-Id {session!r} on this connection")
    token = box.attach()
    if not host.hand_off(channel, lambda: box.serve(channel, token, host.keepalive)):
        return send_error(channel, request, 503, "too many open streams: try again later", {"Retry-After": "5"})
    return False


def _delete(host: HostApi, agent: HostedAgent | None, request: Request, channel: Channel) -> bool:
    conn = _connection(host, agent, request, channel)
    if not isinstance(conn, HttpAcpConnection):
        return conn
    conn.end("the client ended the connection (DELETE)", discard=True)
    return send(channel, request, 202)
