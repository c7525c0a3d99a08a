"""ACP's Streamable HTTP profile on the agent host, by hand: the statuses of the RFD's §1.5 (415, 501, 400, 404, 406,
202), and the routing of a whole prompt turn — the `session/new` result on the connection stream, the session's
messages buffered until its stream is opened, the agent's permission question on the session stream answered by a
POST without `Acp-Session-Id` (as the SDK sends it) and its fs/write_text_file answered with it; DELETE ends the
connection and its agent process."""

from __future__ import annotations

import json
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

from tests.hosts.hostkit import echo_config, gone, http, only_connection, running_host
from tests.net import until

JSON = {"Content-Type": "application/json"}


def rpc(method: str, params: dict[str, Any], id_: int | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        message["id"] = id_
    return json.dumps(message).encode()


class Stream:
    """One SSE GET, read message by message."""

    def __init__(self, where: str, headers: dict[str, str]) -> None:
        host, port = where.split(":")
        self.conn = HTTPConnection(host, int(port), timeout=20)
        self.conn.request("GET", "/acp", headers={"Accept": "text/event-stream", **headers})
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.read()
        assert self.response.getheader("Content-Type") == "text/event-stream"

    def next(self) -> dict[str, Any]:
        while True:
            line = self.response.fp.readline()
            assert line, "the stream ended"
            if line.startswith(b"data: "):
                message: dict[str, Any] = json.loads(line[6:])
                return message

    def close(self) -> None:
        self.conn.close()


def test_the_statuses_of_the_rfd(tmp_path: Path) -> None:
    with running_host(echo_config(tmp_path)) as (host, where):
        url = f"http://{where}/acp"
        init = rpc("initialize", {"protocolVersion": 1}, 0)
        assert http(url, "POST", init, {"Content-Type": "text/plain"})[0] == 415
        assert http(url, "POST", b"[" + init + b"]", JSON)[0] == 501
        status, _, body = http(url, "POST", b"{not json", JSON)
        assert status == 400 and "not JSON" in json.loads(body)["error"]
        assert http(url, "POST", rpc("session/new", {"cwd": "/", "mcpServers": []}, 1), JSON)[0] == 400
        assert http(url, "POST", init, {**JSON, "Acp-Connection-Id": "nope"})[0] == 404
        assert http(url, headers={"Acp-Connection-Id": "nope"})[0] == 406
        assert http(url, headers={"Accept": "text/event-stream"})[0] == 400
        assert http(url, headers={"Accept": "text/event-stream", "Acp-Connection-Id": "nope"})[0] == 404
        assert http(url, "DELETE")[0] == 400
        assert http(url, "DELETE", headers={"Acp-Connection-Id": "nope"})[0] == 404
        status, headers, body = http(url, "PUT", b"{}", JSON)
        assert status == 405 and headers["Allow"] == "GET, POST, DELETE"
        assert http(f"http://{where}/agents/nobody/acp", "POST", init, JSON)[0] == 404

        status, headers, body = http(url, "POST", init, JSON)
        assert status == 200 and json.loads(body)["result"]["protocolVersion"] == 1
        conn = {"Acp-Connection-Id": headers["Acp-Connection-Id"]}
        prompt = rpc("session/prompt", {"sessionId": "s1", "prompt": []}, 1)
        status, _, body = http(url, "POST", prompt, {**JSON, **conn})
        assert status == 400 and "Acp-Session-Id" in json.loads(body)["error"]
        assert http(url, "POST", prompt, {**JSON, **conn, "Acp-Session-Id": "s1"})[0] == 404
        assert http(url, headers={"Accept": "text/event-stream", **conn, "Acp-Session-Id": "s1"})[0] == 404
        pid = only_connection(host)["pid"]
        assert http(url, "DELETE", headers=conn)[0] == 202
        assert http(url, "POST", prompt, {**JSON, **conn})[0] == 404
        until(lambda: gone(pid), "the agent to end with its connection")


def test_a_prompt_turn_is_routed_by_session(tmp_path: Path) -> None:
    with running_host(echo_config(tmp_path)) as (host, where):
        url = f"http://{where}/acp"
        caps = {"fs": {"writeTextFile": True, "readTextFile": False}}
        status, headers, _ = http(url, "POST", rpc("initialize", {"protocolVersion": 1, "clientCapabilities": caps},
                                                   0), JSON)
        assert status == 200
        conn = {"Acp-Connection-Id": headers["Acp-Connection-Id"]}
        post = {**JSON, **conn}
        assert http(url, "POST", rpc("session/new", {"cwd": str(tmp_path), "mcpServers": []}, 1), post)[0] == 202
        connection_stream = Stream(where, conn)  # opened after the result was written: it was buffered
        created = connection_stream.next()
        assert created["id"] == 1
        session = created["result"]["sessionId"]
        scoped = {**post, "Acp-Session-Id": session}
        prompt = rpc("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}, 2)
        assert http(url, "POST", prompt, scoped)[0] == 202
        session_stream = Stream(where, {**conn, "Acp-Session-Id": session})
        seen = []
        while (message := session_stream.next()).get("method") != "session/request_permission":
            seen.append(message.get("method"))
        assert seen and set(seen) == {"session/update"}, seen
        answer = {"jsonrpc": "2.0", "id": message["id"],
                  "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}
        assert http(url, "POST", json.dumps(answer).encode(), post)[0] == 202  # no Acp-Session-Id, as the SDK
        while (message := session_stream.next()).get("method") != "fs/write_text_file":
            pass
        assert message["params"] == {"sessionId": session, "path": str(tmp_path / "echo.txt"), "content": "hi\n"}
        written = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        assert http(url, "POST", json.dumps(written).encode(), scoped)[0] == 202  # with it
        while "method" in (message := session_stream.next()):
            pass
        assert message == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
        assert only_connection(host)["sessions"] == [session]
        assert http(url, "DELETE", headers=conn)[0] == 202
        session_stream.close()
        connection_stream.close()
        until(lambda: host.registry.count() == 0, "the connection to end")


def test_a_stream_buffers_until_its_get_and_bounds_what_waits() -> None:
    """hosts.outbox: what the agent writes before the GET waits (in order); past the limit the agent's side
    waits too, until the stream is read; closing ends the stream after what is left."""
    import socket
    import threading

    from mcp_agent_kit.hosts.outbox import SseOutbox
    from mcp_agent_kit.httpd import Channel

    box = SseOutbox(limit=2)
    assert box.put('{"n":1}') and box.put('{"n":2}')
    third = threading.Thread(target=box.put, args=('{"n":3}',))
    third.start()
    third.join(0.2)
    assert third.is_alive() and box.waiting == 2  # full: the writer waits, nothing is dropped
    ours, theirs = socket.socketpair()
    with ours, theirs:
        token = box.attach()
        serving = threading.Thread(target=box.serve, args=(Channel(ours, None), token, 30.0))
        serving.start()
        third.join(10)
        assert not third.is_alive()
        box.close()
        serving.join(10)
        ours.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := theirs.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"text/event-stream" in head
    assert body == b'data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\n'
