"""Fuzz the Streamable HTTP server with ~4,000 hostile requests over raw sockets: it never answers
5xx, never hangs a connection, every JSON body is one JSON-RPC message answering the request's id
(transport refusals may carry no id), and at the end no worker is left behind and it still serves.

Seeded and deterministic: the same inputs every run. The raw HTTP client here is shared with the
A2A fuzz test.
"""

from __future__ import annotations

import base64
import json
import random
import socket
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mcp_agent_kit import Context, Server
from tests.fuzzing import fuzz_seed, random_json
from tests.http.conftest import META, MODERN, start
from tests.net import wait_until

SEED = 20261207
COUNT = 4_000
TIMEOUT = 20.0  # per socket read: a hang fails the test instead of stalling it
MAX_BODY = 128 * 1024
TRANSPORT_REFUSALS = frozenset({400, 403, 404, 406, 409, 411, 413, 415})


# ---- a raw HTTP/1.1 client: any bytes out, one parsed response in ---------------------------------
@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool = False  # the server ended the connection after this response


@dataclass
class Conn:
    port: int
    sock: socket.socket = field(init=False)
    buf: bytes = b""
    used: int = 0

    def __post_init__(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)

    def close(self) -> None:
        self.sock.close()

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def read_response(self, head: bool = False) -> Response | None:
        """One final response (1xx skipped); None when the server closed before sending a byte."""
        while True:
            while b"\r\n\r\n" not in self.buf:
                if not self._fill():
                    if self.buf:
                        raise AssertionError(f"truncated response head: {self.buf[:200]!r}")
                    return None
            head_bytes, self.buf = self.buf.split(b"\r\n\r\n", 1)
            lines = head_bytes.decode("iso-8859-1").split("\r\n")
            words = lines[0].split(" ", 2)
            assert len(words) >= 2 and words[0].startswith("HTTP/1.") and words[1].isdigit(), lines[0]
            status = int(words[1])
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                assert sep, f"bad response header {line!r}"
                key = name.strip().lower()
                headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
            if 100 <= status < 200:
                continue
            closed = headers.get("connection", "").lower() == "close"
            if head or status in (204, 304):
                return Response(status, headers, b"", closed)
            assert "chunked" not in headers.get("transfer-encoding", ""), "unexpected chunked reply"
            length = headers.get("content-length")
            if length is not None:
                while len(self.buf) < int(length):
                    if not self._fill():
                        raise AssertionError(f"body cut short: {len(self.buf)} of {length}")
                body, self.buf = self.buf[: int(length)], self.buf[int(length) :]
                return Response(status, headers, body, closed)
            while self._fill():  # close-delimited (SSE)
                pass
            body, self.buf = self.buf, b""
            return Response(status, headers, body, True)


class Pool:
    """A few keep-alive connections used round-robin, plus fresh ones on demand."""

    def __init__(self, port: int, size: int = 4) -> None:
        self.port = port
        self.conns = [Conn(port) for _ in range(size)]
        self.reconnects = 0
        self.fresh = 0

    def exchange(self, raw: bytes, slot: int | None, head: bool = False) -> Response:
        """Send one request (on keep-alive `slot`, or a fresh connection when None) and read its reply."""
        if slot is None:
            self.fresh += 1
            conn = Conn(self.port)
            try:
                conn.sock.sendall(raw)
                response = conn.read_response(head)
                assert response is not None, f"fresh connection closed without a reply to {raw[:120]!r}"
                return response
            finally:
                conn.close()
        conn = self.conns[slot]
        response: Response | None = None
        if conn.used:
            try:
                conn.sock.sendall(raw)
                response = conn.read_response(head)
            except (ConnectionResetError, BrokenPipeError):
                response = None
            if response is None:  # the server closed the idle connection after its last reply: reconnect
                self.reconnects += 1
                conn.close()
                conn = self.conns[slot] = Conn(self.port)
        if response is None:
            conn.sock.sendall(raw)
            response = conn.read_response(head)
            assert response is not None, f"new connection closed without a reply to {raw[:120]!r}"
        conn.used += 1
        if response.closed:
            conn.close()
            self.conns[slot] = Conn(self.port)
        return response

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


def http_request(method: str, path: str, headers: list[tuple[str, str]], body: bytes | None,
                 *, length: int | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1"] + [f"{name}: {value}" for name, value in headers]
    if body is not None:
        lines.append(f"Content-Length: {len(body) if length is None else length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogatepass") + (body or b"")


def readable_id(value: Any) -> Any:
    """The request id a reply must echo, or None when the body has no readable one."""
    if not isinstance(value, dict):
        return None
    id_ = value.get("id")
    return id_ if isinstance(id_, str | int) and not isinstance(id_, bool) else None


def sse_messages(body: bytes) -> list[Any]:
    out = []
    for block in body.decode("utf-8").split("\n\n"):
        data = [line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            out.append(json.loads("\n".join(data)))
    return out


# ---- the MCP server under test -----------------------------------------------------------------------
def make_server() -> Server:
    server = Server("fuzz", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    def boom() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    @server.tool
    def steps(n: int, ctx: Context) -> str:
        """Report progress (an SSE stream when the client accepts one)."""
        for step in range(min(max(n, 0), 3)):
            ctx.progress(step + 1, 3)
        return "done"

    @server.tool(input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
        },
    })
    def routed(region: str | None = None, n: int | None = None) -> str:
        """Echo header-mirrored arguments."""
        return f"{region}:{n}"

    @server.resource("fuzz://r", mime_type="text/plain")
    def r() -> str:
        """A resource."""
        return "hello"

    @server.prompt
    def greet(name: str) -> str:
        """Greet someone."""
        return f"hello {name}"

    return server


METHODS = [
    "server/discover", "tools/list", "tools/call", "resources/list", "resources/read",
    "resources/templates/list", "prompts/list", "prompts/get", "completion/complete",
    "initialize", "ping", "nope", "", "notifications/initialized", "tasks/get", "logging/setLevel",
]
TOOLS = ["echo", "add", "boom", "steps", "routed", "missing"]
ARGUMENTS: dict[str, dict[str, Any]] = {
    "echo": {"text": "hi"}, "add": {"a": 1, "b": 2}, "boom": {}, "steps": {"n": 3}, "routed": {"region": "eu", "n": 2},
}
LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


def valid_request(rng: random.Random, id_: Any) -> dict[str, Any]:
    streams = rng.random() < 0.1  # a tool that reports progress: an SSE reply when the client accepts one
    method = "tools/call" if streams else rng.choice(METHODS)
    params: dict[str, Any] = {"_meta": dict(META)}
    if streams or rng.random() < 0.2:
        params["_meta"]["progressToken"] = rng.choice(["p", 7])
    if method == "tools/call":
        tool = "steps" if streams else rng.choice(TOOLS)
        params.update(name=tool, arguments=dict(ARGUMENTS.get(tool, {"text": "hi", "a": 1, "b": 2})))
    elif method == "resources/read":
        params["uri"] = rng.choice(["fuzz://r", "fuzz://missing", "x:"])
    elif method == "prompts/get":
        params.update(name="greet", arguments={"name": "x"})
    elif method == "completion/complete":
        params.update(ref={"type": "ref/prompt", "name": "greet"}, argument={"name": "name", "value": ""})
    elif method == "initialize":
        params = {"protocolVersion": rng.choice(LEGACY), "capabilities": {},
                  "clientInfo": {"name": "fuzz", "version": "0"}}
    elif method == "tasks/get":
        params["taskId"] = "t-1"
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def mutate(rng: random.Random, message: dict[str, Any]) -> Any:
    clone = json.loads(json.dumps(message))
    params = clone["params"]
    choice = rng.randrange(12)
    if choice == 0:
        del clone[rng.choice(list(clone))]
    elif choice == 1:
        clone[rng.choice(list(clone))] = random_json(rng)
    elif choice == 2 and params:
        params[rng.choice(list(params))] = random_json(rng)
    elif choice == 3 and isinstance(params.get("_meta"), dict):
        meta = params["_meta"]
        meta[rng.choice(list(meta))] = random_json(rng)
    elif choice == 4:
        params["_meta"] = random_json(rng)
    elif choice == 5:
        params["arguments"] = random_json(rng)
    elif choice == 6:
        return [clone, clone] if rng.random() < 0.5 else []
    elif choice == 7:
        clone.pop("method", None)
        clone[rng.choice(["result", "error"])] = random_json(rng)  # a response, or a malformed one
    elif choice == 8:
        clone.pop("id")  # a notification
    elif choice == 9:
        params["arguments"] = {"text": "x" * rng.randrange(MAX_BODY // 2, MAX_BODY - 4096)}
    elif choice == 10:
        depth = rng.choice([50, 500, 5000])
        params["deep"] = json.loads("[" * depth + "]" * depth) if depth < 900 else None
        if depth >= 900:
            return ("DEEP", depth, clone)
    else:
        clone["id"] = rng.choice([None, True, 1.5, [], {}, "", -1, 2**70])
    return clone


@dataclass
class Case:
    raw: bytes
    slot: int | None
    head: bool = False
    value: Any = None  # the parsed body, when it is JSON
    jsonrpc: bool = True  # a JSON-RPC exchange (POST to the endpoint)


def encode_body(rng: random.Random, value: Any) -> tuple[bytes, Any]:
    if isinstance(value, tuple) and value and value[0] == "DEEP":
        _, depth, clone = value
        text = json.dumps(clone)
        return text[:-1].encode() + b', "deep": ' + b"[" * depth + b"]" * depth + b"}", clone
    body = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()
    if rng.random() < 0.03 and b'"' in body:  # invalid UTF-8 inside a string
        at = body.index(b'"') + 1
        body = body[:at] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80"]) + body[at:]
        return body, None
    return body, value


def build_headers(rng: random.Random, port: int, message: Any, sessions: list[str]) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    host = rng.choices([f"127.0.0.1:{port}", "localhost", "evil.example.com", None, "[::1]:1", "127.0.0.1:x"],
                       [90, 4, 2, 1, 1, 1])[0]
    if host is not None:
        headers.append(("Host", host))
    ctype = rng.choices(["application/json", "application/json; charset=utf-8", "APPLICATION/JSON", None,
                         "text/plain", "application/x-www-form-urlencoded", ";"], [85, 5, 2, 2, 2, 2, 2])[0]
    if ctype is not None:
        headers.append(("Content-Type", ctype))
    accept = rng.choices(["application/json, text/event-stream", "application/json", "text/event-stream", "*/*",
                          None, "text/html", ",,;q=1", "application/json;q=0"], [60, 15, 5, 5, 6, 3, 3, 3])[0]
    if accept is not None:
        headers.append(("Accept", accept))
    version = rng.choices([MODERN, None, *LEGACY, "garbage", "", " 2026-07-28 "], [75, 8, 2, 2, 1, 1, 3, 2, 2])[0]
    if version is not None:
        headers.append(("MCP-Protocol-Version", version))
    method = message.get("method") if isinstance(message, dict) else None
    params = message.get("params") if isinstance(message, dict) else None
    params = params if isinstance(params, dict) else {}
    mcp_method = rng.choices(
        [method if isinstance(method, str) else None, "tools/list", None, "=?base64?" + base64.b64encode(
            str(method).encode()).decode() + "?=", "=?base64?!!?=", "\u00e9"], [80, 5, 5, 5, 3, 2])[0]
    if mcp_method is not None:
        headers.append(("Mcp-Method", mcp_method.encode("utf-8").decode("latin-1")))
    name = params.get("name", params.get("uri", params.get("taskId")))
    mcp_name = rng.choices([name if isinstance(name, str | int | float) else None, "other", None, "1e3"],
                           [80, 5, 10, 5])[0]
    if mcp_name is not None:
        headers.append(("Mcp-Name", str(mcp_name)))
    if name == "routed" and rng.random() < 0.8:
        headers.append(("Mcp-Param-Region", rng.choice(["eu", "us", "=?base64?ZXU=?="])))
        headers.append(("Mcp-Param-N", rng.choice(["2", "2.0", "x"])))
    if rng.random() < 0.2:
        where = rng.random()  # one draw whatever the server handed out, so the seed fixes the stream
        known = sessions[int(where * len(sessions))] if sessions else "none"
        headers.append(("Mcp-Session-Id", rng.choice([known, known, "bogus", ""])))
    extra = rng.randrange(40)
    if extra == 0:
        headers.append(("Origin", rng.choice(["http://evil.example.com", "null", f"http://localhost:{port}"])))
    elif extra == 1:
        headers.append(("Expect", "100-continue"))
    elif extra == 2:
        headers.append(("Connection", "close"))
    elif extra == 3:
        headers.append(("Authorization", "Bearer nope"))
    return headers


def malformed(rng: random.Random, port: int) -> bytes:
    """A request the HTTP layer itself must refuse (or tolerate) without dying."""
    host = f"Host: 127.0.0.1:{port}\r\n"
    return rng.choice([
        b"GARBAGE\r\n\r\n",
        b"POST /mcp HTTP/2.0\r\n" + host.encode() + b"\r\n",
        b"POST /mcp HTTP/1.1\r\n" + host.encode() + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"POST /mcp HTTP/1.1\r\n" + host.encode() + b"No colon here\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\n" + host.encode() + b"X-Long: " + b"a" * 70_000 + b"\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\n" + host.encode() + b"".join(b"X-%d: 1\r\n" % i for i in range(120)) + b"\r\n",
        b"POST /" + b"m" * 70_000 + b" HTTP/1.1\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\n" + host.encode() + b"Content-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\n" + host.encode() + b"Content-Type: application/json\r\nContent-Length: -1\r\n\r\n",
        b"\xff\xfe /mcp HTTP/1.1\r\n\r\n",
    ])


HOSTILE_EVENT_IDS = [
    "", "x", "-", "1-", "-1", "999999-0", "1-" + "9" * 400, "\u0661-\u0660", "a-b-c", " 7-x ", "1-0\x7f",
]


def build_cases(rng: random.Random, port: int, sessions: list[str], n: int) -> Case:
    slot = None if n % 10 == 9 else n % 4
    kind = n % 8
    if kind == 7 and rng.random() < 0.25:
        return Case(malformed(rng, port), None, jsonrpc=False)
    id_: Any = f"h{n}" if n % 3 else n
    value: Any
    if kind == 0:
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        value = None
    elif kind == 1:
        value = random_json(rng)
        body, value = encode_body(rng, value)
    elif kind in (2, 3):
        body, value = encode_body(rng, valid_request(rng, id_))
    else:
        body, value = encode_body(rng, mutate(rng, valid_request(rng, id_)))
    headers = build_headers(rng, port, value, sessions)
    verb = rng.choices(["POST", "GET", "DELETE", "PUT", "HEAD", "OPTIONS"], [90, 3, 3, 1, 2, 1])[0]
    path = rng.choices(["/mcp", "/mcp?x=1", "/other", "/", "//mcp", "*"], [92, 3, 2, 1, 1, 1])[0]
    if verb == "GET" and any(name == "Mcp-Session-Id" and value in sessions for name, value in headers):
        if rng.random() < 0.5:  # a resumption attempt at no live stream: answered (404) and closed
            headers.append(("Last-Event-ID", rng.choice(HOSTILE_EVENT_IDS)))
        else:
            verb = "DELETE"  # a GET with a live session opens a stream that stays open: not a fuzz target
    length = None
    if rng.random() < 0.01:
        length = MAX_BODY + rng.randrange(1, 10**9)  # over the limit: the server must not read it
        body = b""
    raw = http_request(verb, path, headers, body if verb not in ("GET", "HEAD") else None, length=length)
    return Case(
        raw,
        slot,
        head=verb == "HEAD",
        value=value,
        jsonrpc=verb == "POST" and path.split("?")[0] == "/mcp" and length is None,
    )


ALLOWED = frozenset({200, 202, 400, 403, 404, 405, 406, 409, 411, 413, 414, 415, 431})


def check(case: Case, response: Response, seen: Counter[str]) -> list[str]:
    """Problems with one response (an empty list when it is fine)."""
    problems: list[str] = []
    status = response.status
    seen[str(status)] += 1
    if status not in ALLOWED:
        problems.append(f"status {status}")
    ctype = response.headers.get("content-type", "").split(";")[0].strip()
    if status == 202 and response.body:
        problems.append("202 with a body")
    if ctype == "application/json":
        messages = [json.loads(response.body)]
    elif ctype == "text/event-stream":
        messages = sse_messages(response.body)
        if not messages:
            problems.append("empty event stream")
    else:
        if case.jsonrpc and status in (200, 400) and response.body:
            # a well-formed POST answered in plain text: the request was misread (e.g. a desync)
            problems.append(f"{status} with a {ctype!r} body: {response.body[:100]!r}")
        return problems
    want = readable_id(case.value)
    replies = [m for m in messages if isinstance(m, dict) and "method" not in m]
    for message in messages:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            problems.append(f"not a JSON-RPC message: {message!r:.200}")
    if len(replies) != 1:
        problems.append(f"{len(replies)} replies in one response")
        return problems
    reply = replies[0]
    if ("result" in reply) == ("error" in reply):
        problems.append(f"reply has neither or both of result/error: {reply!r:.200}")
    got = reply.get("id")
    seen["sse" if ctype == "text/event-stream" else "json"] += 1
    if got is not None and got == want:
        seen["id echoed"] += 1
    if got is not None and got != want:
        problems.append(f"reply id {got!r} for request id {want!r}")
    if got is None:
        refusal = status in TRANSPORT_REFUSALS and reply.get("error", {}).get("code") in (-32600, -32700, -32602)
        if want is not None and not refusal:
            problems.append(f"reply without an id for request id {want!r} ({status}, {reply!r:.200})")
        if "result" in reply:
            problems.append("a result without an id")
    if isinstance(reply.get("result"), dict) and status != 200:
        problems.append(f"a result with status {status}")
    if isinstance(reply.get("result"), dict) and case.value is not None and want is None:
        problems.append("a result for a request without an id")
    if isinstance(reply.get("result"), dict) and isinstance(case.value, dict) and "method" not in case.value:
        problems.append("a result for a response")
    return problems


def remember_session(response: Response, sessions: list[str]) -> None:
    session = response.headers.get("mcp-session-id")
    if session and session not in sessions and len(sessions) < 50:
        sessions.append(session)


def test_fuzz_http_never_fails_never_hangs_and_answers_each_id() -> None:
    baseline = threading.active_count()
    running = start(make_server().dispatcher, max_body=MAX_BODY, max_workers=16, header_timeout=10.0)
    server = running.server
    seed = fuzz_seed(SEED)
    rng = random.Random(seed)
    pool = Pool(running.port)
    sessions: list[str] = []
    seen: Counter[str] = Counter()
    failures: list[str] = []
    try:
        for n in range(COUNT):
            case = build_cases(rng, running.port, sessions, n)
            try:
                response = pool.exchange(case.raw, case.slot, case.head)
            except TimeoutError:
                late = f"no reply within {TIMEOUT}s to {case.raw[:300]!r}"
                raise AssertionError(f"FUZZ_SEED={seed} #{n}: {late}") from None
            remember_session(response, sessions)
            for problem in check(case, response, seen):
                failures.append(f"#{n} {problem}; request {case.raw[:300]!r}")
            if len(failures) > 20:
                break
        assert not failures, f"FUZZ_SEED={seed} replays this stream:\n" + "\n".join(failures)
        # still serving: a valid modern call succeeds
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "last",
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": META},
            }
        ).encode()
        headers = [
            ("Host", "127.0.0.1"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "add"),
        ]
        final = pool.exchange(http_request("POST", "/mcp", headers, body), None)
        assert final.status == 200, final
        assert json.loads(final.body) == {
            "jsonrpc": "2.0",
            "id": "last",
            "result": {**json.loads(final.body)["result"], "content": [{"type": "text", "text": "5"}]},
        }
    finally:
        pool.close()
        # no worker is left behind once the clients are gone
        assert wait_until(lambda: server.busy_workers == 0), f"{server.busy_workers} workers still busy"
        server.shutdown()
        server.server_close()
    assert wait_until(lambda: threading.active_count() <= baseline + 2), threading.enumerate()
    assert seen["200"] > COUNT // 20 and seen["400"] > 0 and seen["415"] > 0, seen
    assert seen["sse"] > 20 and seen["id echoed"] > COUNT // 5, seen
    assert pool.fresh >= COUNT // 10


# ---- regressions found by the fuzz test ----------------------------------------------------------------
def raw_exchange(port: int, raw: bytes, head: bool = False) -> tuple[Response | None, Conn]:
    conn = Conn(port)
    conn.sock.sendall(raw)
    return conn.read_response(head), conn


LIST = http_request(
    "POST",
    "/mcp",
    [
        ("Host", "127.0.0.1"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/list"),
    ],
    json.dumps({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {"_meta": META}}).encode(),
)


def test_unknown_method_is_answered_405_at_once_and_head_has_no_body() -> None:
    running = start(make_server().dispatcher)
    try:
        for verb in ("PUT", "OPTIONS", "HEAD", "PATCH"):
            response, conn = raw_exchange(
                running.port, f"{verb} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode(), head=verb == "HEAD"
            )
            assert response is not None and response.status == 405, verb
            assert conn.buf == b"", f"{verb}: bytes after the reply"
            conn.sock.sendall(LIST)  # the connection is still in step: the next reply is the next request's
            following = conn.read_response()
            assert following is not None and json.loads(following.body)["id"] == "list", verb
            conn.close()
    finally:
        running.server.shutdown()
        running.server.server_close()


def test_overlong_request_line_gets_414() -> None:
    running = start(make_server().dispatcher)
    try:
        response, conn = raw_exchange(running.port, b"GET /" + b"m" * 70_000 + b" HTTP/1.1\r\n\r\n")
        conn.close()
        assert response is not None and response.status == 414
    finally:
        running.server.shutdown()
        running.server.server_close()


def test_a_body_the_server_does_not_read_is_not_taken_for_the_next_request() -> None:
    running = start(make_server().dispatcher)
    try:
        for verb in ("DELETE", "GET", "PUT"):
            raw = http_request(verb, "/mcp", [("Host", "127.0.0.1"), ("MCP-Protocol-Version", MODERN)], LIST)
            response, conn = raw_exchange(running.port, raw)
            assert response is not None and response.status == 405, verb
            assert conn.read_response() is None, f"{verb}: its body was served as a second request"
            conn.close()
    finally:
        running.server.shutdown()
        running.server.server_close()


def test_the_seed_alone_fixes_the_stream() -> None:
    """What the server hands out (session ids) changes header values, never the draws that follow."""

    def draw(sessions: list[str]) -> tuple[list[bytes], object]:
        rng = random.Random(SEED)
        raws = [build_cases(rng, 8000, sessions, n).raw for n in range(300)]
        return raws, rng.getstate()

    first, state = draw([])
    assert draw([]) == (first, state)
    _, filled_state = draw([f"s{i}" for i in range(37)])
    assert filled_state == state
    other = random.Random(SEED + 1)
    assert [build_cases(other, 8000, [], n).raw for n in range(300)] != first
