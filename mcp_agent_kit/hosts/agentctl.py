"""hosts.agentctl: the seed's agentctl routes — one long-lived agent process driven over HTTP and WebSockets.

kandev runs `agentctl` beside each agent (AGENTS.md of its seed): the backend checks `GET /health`, starts the
agent (`POST /api/v1/start`), sends ACP requests and waits for their answers (`POST /api/v1/acp/call`), sends
messages without waiting (`POST /api/v1/acp/send`) and watches the agent's messages (`GET /api/v1/acp/stream`,
a WebSocket) and its raw output (`GET /api/v1/output`, `GET /api/v1/output/stream`). Here the agent is the
host's default one, started on the host's machine (process.PeerProcess, its sandbox if configured).
- `/api/v1/acp/call`: a JSON-RPC request, `jsonrpc` and `id` optional (`{"method":"initialize","params":
  {...}}` as the seed's curl sends it); it is relayed under an id of ours and the agent's reply comes back as
  the answer, unchanged but for its `id` (the caller's, when it gave one). `?timeout=SECONDS` (default 300).
- `/api/v1/acp/send`: any JSON-RPC message, relayed as is (an answer to the agent's request, a notification).
- `/api/v1/acp/stream`: every message the agent writes, one text message each; a message the client sends on
  it is relayed to the agent (so a watcher can answer a permission question).
- `/api/v1/output`: the last OUTPUT_LINES lines of its stdout and stderr, `{"lines": [{"seq", "stream",
  "line"}], "next": N}` (`?after=SEQ` for the newer ones); `/api/v1/output/stream` pushes each new one.
Statuses: 409 while the agent is not running (start it first), 400 for a body that is no JSON object, 502
when the agent ends before answering, 504 past the timeout. Rules: one agent process; the wire is unchanged.
"""

from __future__ import annotations

import collections
import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp_agent_kit.hosts.config import HostedAgent
from mcp_agent_kit.hosts.link import AgentProcess, LinkError
from mcp_agent_kit.hosts.registry import HostApi
from mcp_agent_kit.hosts.replies import send_error, send_json
from mcp_agent_kit.httpd import Channel, Request, WsConnection

__all__ = ["CALL_TIMEOUT_S", "OUTPUT_LINES", "Agentctl"]

CALL_TIMEOUT_S = 300.0
OUTPUT_LINES = 1000
Route = Callable[[Request, Channel], bool]


class _Watcher:
    """A WebSocket on acp/stream or output/stream (an httpd WsHandler)."""

    def __init__(self, watchers: set[WsConnection], lock: threading.Lock,
                 relay: Callable[[str], None] | None) -> None:
        self.watchers, self.lock, self.relay = watchers, lock, relay

    def opened(self, conn: WsConnection) -> None:
        with self.lock:
            self.watchers.add(conn)

    def received(self, conn: WsConnection, message: str | bytes) -> None:
        if self.relay is not None and isinstance(message, str):
            self.relay(message)

    def closed(self, conn: WsConnection, code: int, reason: str) -> None:
        with self.lock:
            self.watchers.discard(conn)


class Agentctl:
    """The agentctl routes of one host (see the module's doc)."""

    def __init__(self, host: HostApi, agent: HostedAgent | None) -> None:
        self.host, self.agent = host, agent
        self.link: AgentProcess | None = None
        self.exit = ""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._calls: dict[str, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._acp_watchers: set[WsConnection] = set()
        self._output_watchers: set[WsConnection] = set()
        self._output: collections.deque[dict[str, Any]] = collections.deque(maxlen=OUTPUT_LINES)
        self._seq = 0
        self.routes: dict[str, tuple[str, Route]] = {
            "/api/v1/status": ("GET", self._status), "/api/v1/start": ("POST", self._start),
            "/api/v1/stop": ("POST", self._stop), "/api/v1/acp/send": ("POST", self._send),
            "/api/v1/acp/call": ("POST", self._call), "/api/v1/acp/stream": ("GET", self._acp_stream),
            "/api/v1/output": ("GET", self._output_page), "/api/v1/output/stream": ("GET", self._output_stream),
        }

    # ---- the process --------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.link is not None and self.link.alive

    def start(self) -> dict[str, Any]:
        """Start the agent unless it runs; its status. LinkError when it cannot start."""
        with self._lock:
            if self.agent is None:
                raise LinkError("no default agent: give the config a \"default\"")
            if not self.running:
                link = AgentProcess(self.agent, cwd=self.host.place(self.agent), on_message=self._from_agent,
                                 on_end=self._ended, on_output=self._output_line, label="agentctl")
                link.start()
                self.link, self.exit = link, ""
        return self.status()

    def stop(self) -> None:
        with self._lock:
            link, self.link = self.link, None
        if link is not None:
            self.exit = "stopped by POST /api/v1/stop"
            link.stop(wait=True)

    def status(self) -> dict[str, Any]:
        link = self.link
        state = "running" if self.running else ("exited" if link is not None else "stopped")
        out: dict[str, Any] = {"status": state, "running": state == "running",
                               "agent": None if self.agent is None else self.agent.id,
                               "command": None if self.agent is None else self.agent.argv}
        if link is not None:
            out.update(link.usage())
        if self.exit:
            out["exit"] = self.exit
        return out

    # ---- the agent's side ------------------------------------------------------------------------------
    def _from_agent(self, text: str, message: dict[str, Any]) -> None:
        if "method" not in message and "id" in message:
            with self._lock:
                waiting = self._calls.pop(str(message["id"]), None)
            if waiting is not None:
                waiting[1].append(message)
                waiting[0].set()
        self._broadcast(self._acp_watchers, text)

    def _ended(self, why: str) -> None:
        self.exit = self.exit or why
        with self._lock:
            calls = list(self._calls.values())
            self._calls.clear()
        for done, _ in calls:
            done.set()

    def _output_line(self, stream: str, line: str) -> None:
        with self._lock:
            self._seq += 1
            entry = {"seq": self._seq, "stream": stream, "line": line, "time": round(time.time(), 3)}
            self._output.append(entry)
        self._broadcast(self._output_watchers, json.dumps(entry, ensure_ascii=False, separators=(",", ":")))

    def _broadcast(self, watchers: set[WsConnection], text: str) -> None:
        with self._lock:
            targets = list(watchers)
        for conn in targets:
            conn.send(text)

    def _relay(self, text: str) -> None:
        """A message from an acp/stream watcher: to the agent as is (when it is a JSON object)."""
        try:
            message = json.loads(text)
        except ValueError:
            return
        link = self.link
        if isinstance(message, dict) and link is not None:
            link.send(message, text.strip())

    # ---- the routes -------------------------------------------------------------------------------------
    def _status(self, request: Request, channel: Channel) -> bool:
        return send_json(channel, request, 200, self.status())

    def _start(self, request: Request, channel: Channel) -> bool:
        try:
            status = self.start()
        except LinkError as exc:
            return send_error(channel, request, 502 if self.agent is not None else 404, str(exc))
        return send_json(channel, request, 200, {"success": True, **status})

    def _stop(self, request: Request, channel: Channel) -> bool:
        self.stop()
        return send_json(channel, request, 200, {"success": True, **self.status()})

    def _message(self, request: Request, channel: Channel) -> tuple[dict[str, Any], AgentProcess] | bool:
        """The body's JSON-RPC message and the running agent; else the refusal is answered."""
        link = self.link
        if link is None or not link.alive:
            return send_error(channel, request, 409, "the agent is not running: POST /api/v1/start first")
        try:
            message = json.loads(request.body.decode("utf-8", "replace"))
        except ValueError as exc:
            return send_error(channel, request, 400, f"the body is not JSON: {exc}")
        if not isinstance(message, dict):
            return send_error(channel, request, 400, "send one JSON-RPC message (a JSON object)")
        message.setdefault("jsonrpc", "2.0")
        return message, link

    def _send(self, request: Request, channel: Channel) -> bool:
        found = self._message(request, channel)
        if not isinstance(found, tuple):
            return found
        message, link = found
        if not link.send(message):
            return send_error(channel, request, 502, f"the agent is gone: {self.exit}")
        return send_json(channel, request, 200, {"success": True})

    def _call(self, request: Request, channel: Channel) -> bool:
        found = self._message(request, channel)
        if not isinstance(found, tuple):
            return found
        message, link = found
        if not isinstance(message.get("method"), str):
            return send_error(channel, request, 400, 'a call is a request: give its "method" (and "params")')
        timeout = _timeout(request.target)
        if timeout is None:
            return send_error(channel, request, 400, "timeout must be a number of seconds from 0.1 to 3600")
        ours = f"agentctl-{next(self._ids)}"
        done, slot = threading.Event(), list[dict[str, Any]]()
        with self._lock:
            self._calls[ours] = (done, slot)
        given = message.get("id")
        if not link.send({**message, "id": ours}):
            return send_error(channel, request, 502, f"the agent is gone: {self.exit}")
        if not done.wait(timeout):
            with self._lock:
                self._calls.pop(ours, None)
            return send_error(channel, request, 504,
                              f"the agent did not answer {message['method']} within {timeout:g} s")
        if not slot:
            return send_error(channel, request, 502, f"the agent ended before it answered: {self.exit}")
        reply = slot[0]
        reply["id"] = given if given is not None else ours
        return send_json(channel, request, 200, reply)

    def _acp_stream(self, request: Request, channel: Channel) -> bool:
        return self.host.upgrade(request, channel, _Watcher(self._acp_watchers, self._lock, self._relay))

    def _output_stream(self, request: Request, channel: Channel) -> bool:
        return self.host.upgrade(request, channel, _Watcher(self._output_watchers, self._lock, None))

    def _output_page(self, request: Request, channel: Channel) -> bool:
        after = (parse_qs(urlsplit(request.target).query).get("after") or ["0"])[0]
        if not after.isdigit():
            return send_error(channel, request, 400, f"after must be a sequence number, not {after[:40]!r}")
        with self._lock:
            lines = [entry for entry in self._output if entry["seq"] > int(after)]
            last = self._seq
        return send_json(channel, request, 200, {"lines": lines, "next": last})


def _timeout(target: str) -> float | None:
    text = (parse_qs(urlsplit(target).query).get("timeout") or [str(CALL_TIMEOUT_S)])[0]
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.1 <= value <= 3600 else None
