"""A scriptable fake of the OpenAI chat-completions API on loopback, for driving real agents offline.

Test-only helper, standard library only. It answers `GET /v1/models` and `POST /v1/chat/completions`
(streamed as SSE `data:` chunks ending with `data: [DONE]`, or as one JSON object when the request
asks for no stream), and records every request. What a completion says is decided by the `script`
callable from the conversation; the default script `reply_for` reacts to keywords in the latest user
message, so a test steers the real agent with its prompt text alone:

- `WRITE <name> <content...>`: the model calls the agent's `write_file` tool with `<cwd>/<name>` (cwd
  given at construction) and the content; once the tool's result is in the conversation, it quotes it.
- `SLOW`: text dribbles out one chunk per `SLOW_STEP` seconds for up to a minute, until the client
  hangs up (the cancel case).
- anything else (also the agent's background calls: memory extraction, titles, ...): a short text.

It must not know any agent: only the public chat-completions wire shapes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SLOW_STEP = 0.2
SLOW_CHUNKS = 300
SLOW_STARTED = 3  # chunks of a slow reply sent before `slow_streaming` is set
MAX_BODY = 32 << 20


@dataclass(frozen=True)
class Reply:
    """What one completion streams: text pieces, then optionally one tool call; `delay` between pieces."""

    text: tuple[str, ...] = ()
    tool: tuple[str, dict[str, Any]] | None = None
    delay: float = 0.0
    call_id: str = ""  # given by the server, unique like a real model's


def _text(content: Any) -> str:
    """A message's text whether `content` is a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [_text(m.get("content")) for m in messages if m.get("role") == "user"]


@dataclass
class FakeOpenAI:
    """The server; `start()` binds an ephemeral loopback port, `base_url` is what agents are given."""

    cwd: Path
    script: Callable[[FakeOpenAI, dict[str, Any]], Reply] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    tool_call_ids: list[str] = field(default_factory=list)  # every tool call the model made, in order
    slow_streaming: threading.Event = field(default_factory=threading.Event)  # a slow reply is under way
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def completions(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def decide(self, body: dict[str, Any]) -> Reply:
        reply = (self.script or reply_for)(self, body)
        if reply.tool is None:
            return reply
        with self._lock:
            self.tool_call_ids.append(f"call_fake_{len(self.tool_call_ids) + 1}")
            return replace(reply, call_id=self.tool_call_ids[-1])


def reply_for(fake: FakeOpenAI, body: dict[str, Any]) -> Reply:
    """The default script (see the module docstring)."""
    messages = body.get("messages") or []
    asked = last_user_text(messages)
    words = asked.split()
    if "WRITE" in words and len(words) > words.index("WRITE") + 2:
        at = words.index("WRITE")
        if messages and messages[-1].get("role") == "tool":  # the agent ran the tool: report what it said
            return Reply(text=("The tool said: ", _text(messages[-1].get("content"))[:200]))
        content = " ".join(words[at + 2:])
        return Reply(text=("Writing it now.",),
                     tool=("write_file", {"file_path": str(fake.cwd / words[at + 1]), "content": content}))
    if "SLOW" in words:
        return Reply(text=tuple(f"tick {n} " for n in range(SLOW_CHUNKS)), delay=SLOW_STEP)
    return Reply(text=("Hello ", "from the ", "fake model."))


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def stream_chunks(reply: Reply, model: str) -> list[dict[str, Any]]:
    """The SSE payloads of one streamed reply, in order."""
    out = [_chunk(model, {"role": "assistant", "content": ""})]
    out += [_chunk(model, {"content": piece}) for piece in reply.text]
    if reply.tool is not None:
        name, arguments = reply.tool
        call = {"index": 0, "id": reply.call_id, "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}
        out.append(_chunk(model, {"tool_calls": [call]}))
    out.append(_chunk(model, {}, "tool_calls" if reply.tool else "stop"))
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    out.append({**_chunk(model, {}), "choices": [], "usage": usage})
    return out


def whole_completion(reply: Reply, model: str) -> dict[str, Any]:
    """The non-streamed answer carrying the same reply."""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(reply.text)}
    if reply.tool is not None:
        name, arguments = reply.tool
        message["tool_calls"] = [{"id": reply.call_id, "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(arguments)}}]
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            fake.record({"method": "GET", "path": self.path, "body": None})
            if self.path.rstrip("/").endswith("/models"):
                model = {"id": "fake-model", "object": "model", "owned_by": "fake"}
                self._json(200, {"object": "list", "data": [model]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            if size > MAX_BODY:
                self._json(413, {"error": {"message": "body too large"}})
                return
            try:
                body = json.loads(self.rfile.read(size) or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "body is not JSON"}})
                return
            fake.record({"method": "POST", "path": self.path, "body": body})
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            reply, model = fake.decide(body), str(body.get("model") or "fake-model")
            if not body.get("stream"):
                self._json(200, whole_completion(reply, model))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for sent, payload in enumerate(stream_chunks(reply, model)):
                    self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                    self.wfile.flush()
                    if reply.delay:
                        if sent == SLOW_STARTED:
                            fake.slow_streaming.set()
                        time.sleep(reply.delay)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except OSError:  # the agent hung up (cancel): nothing more to send
                pass
            self.close_connection = True

    return Handler
