"""One port, both faces: `mcp-agent-kit board --http HOST:PORT` answers MCP at /mcp (the official `mcp` client)
and is an A2A agent on the same origin (the official a2a-sdk client: the card at /.well-known/agent-card.json,
SendMessage at /a2a), each face with its own gate: with tokens on, both refuse a request without the token and
accept one with it; both refuse a foreign Host and a foreign Origin; with OAuth each takes only tokens meant for
its own URL and serves its own RFC 9728 metadata. `--a2a-port` still serves the agent on a
port of its own, `--no-a2a` not at all (board.cli's wiring: make_board_http, a2a_face, Serving)."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_agent_kit.board.cli import SAME_PORT, Serving, a2a_face, make_board_http
from tests.board.fake_board import FakeBoard
from tests.board.test_mcp_tools import NAMES

TOKEN = "s3cret-board-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def send_message(text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": "SendMessage",
            "params": {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]},
                       "configuration": {"returnImmediately": True}}}


class Board:
    def __init__(self, board: FakeBoard, serving: Serving) -> None:
        self.board, self.serving = board, serving
        self.port = int(serving.http.server_address[1])
        self.origin = f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None, port: int | None = None) -> tuple[int, dict[str, str], Any]:
        """(status, headers, JSON body or None) of one plain HTTP request."""
        conn = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=30)
        try:
            sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                    "A2A-Version": "1.0", **(headers or {})}
            conn.request(method, path, json.dumps(body).encode() if body is not None else None, sent)
            reply = conn.getresponse()
            data = reply.read()
            try:
                parsed = json.loads(data) if data else None
            except ValueError:
                parsed = data
            return reply.status, {k.lower(): v for k, v in reply.getheaders()}, parsed
        finally:
            conn.close()


def serve(tmp_path: Path, where: int | str | None, options: dict[str, Any]) -> Iterator[Board]:
    board = FakeBoard(None, tmp_path)
    http_server, tools = make_board_http(board, "127.0.0.1", 0, **options)
    serving = Serving(http_server, tools, a2a_face(board, http_server, "127.0.0.1", where, options))
    thread = threading.Thread(target=serving.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Board(board, serving)
    finally:
        serving.shutdown()
        serving.server_close()
        thread.join(10)
        board.close()


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Board]:
    """The board on one port with a token (as `--token` gives it: token -> principal)."""
    yield from serve(tmp_path, SAME_PORT, {"tokens": {TOKEN: "alice"}})


async def _official_clients(origin: str) -> tuple[list[str], str]:
    """The mcp SDK's tools/list at /mcp and the a2a-sdk's SendMessage, both sending the token."""
    import httpx2
    from a2a.client import A2ACardResolver, ClientConfig, create_client
    from a2a.types import SendMessageRequest
    from google.protobuf.json_format import ParseDict
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=AUTH) as mcp_http, \
            Client(streamable_http_client(origin + "/mcp", http_client=mcp_http)) as mcp_client:
        names = sorted(tool.name for tool in (await mcp_client.list_tools()).tools)
    async with httpx.AsyncClient() as plain:
        card = await A2ACardResolver(plain, origin).get_agent_card()  # the card is public, as on any agent
    assert card.supported_interfaces[0].url == origin + "/a2a"
    async with httpx.AsyncClient(headers=AUTH, timeout=30) as a2a_http:
        client = await create_client(card, client_config=ClientConfig(streaming=False, httpx_client=a2a_http))
        request = ParseDict(send_message("Add a flag")["params"], SendMessageRequest())
        task_id = ""
        async for event in client.send_message(request):
            if event.WhichOneof("payload") == "task":
                task_id = event.task.id
        await client.close()
    return names, task_id


def test_one_port_answers_mcp_and_a2a_with_the_token(guarded: Board) -> None:
    names, task_id = asyncio.run(asyncio.wait_for(_official_clients(guarded.origin), 60))
    assert names == NAMES
    assert guarded.board.get_task(task_id)["prompt"] == "Add a flag"  # the A2A task is the board's task
    assert guarded.serving.a2a is not None and guarded.serving.a2a.url == guarded.origin + "/a2a"


def test_both_faces_refuse_a_request_without_the_token(guarded: Board) -> None:
    status, headers, body = guarded.request("POST", "/mcp", INIT)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer"), body
    status, headers, body = guarded.request("POST", "/mcp", INIT, {"Authorization": "Bearer wrong"})
    assert status == 401, body
    status, headers, body = guarded.request("POST", "/a2a", send_message("no token"))
    assert status == 401 and body["error"]["data"][0]["reason"] == "UNAUTHENTICATED", body
    assert headers["www-authenticate"].startswith("Bearer")
    status, _, body = guarded.request("POST", "/a2a", send_message("wrong token"), {"Authorization": "Bearer wrong"})
    assert status == 401, body
    status, _, body = guarded.request("POST", "/a2a/rest/message:send", send_message("rest")["params"])
    assert status == 401, body
    assert guarded.board.list_tasks() == []  # nothing ran
    # with the token, plain requests pass both gates
    status, _, body = guarded.request("POST", "/mcp", INIT, AUTH)
    assert status == 200 and body["result"]["serverInfo"], body
    status, _, body = guarded.request("POST", "/a2a", send_message("with token"), AUTH)
    assert status == 200 and "result" in body, body
    assert body["result"]["task"]["metadata"]["state"] == "queued", body


@pytest.mark.parametrize(("header", "value"), [("Host", "evil.example"), ("Origin", "http://evil.example")])
def test_both_faces_refuse_a_foreign_host_or_origin(guarded: Board, header: str, value: str) -> None:
    headers = {**AUTH, header: value}  # the token does not open the gate for a rebinding page
    status, _, body = guarded.request("POST", "/mcp", INIT, headers)
    assert status == 403 and "evil.example" in body["error"]["message"], body
    status, _, body = guarded.request("POST", "/a2a", send_message("rebound"), headers)
    assert status == 400 and "evil.example" in body["error"]["message"], body
    if header == "Host":  # the card is public, but only to a client that names this agent
        status, _, body = guarded.request("GET", "/.well-known/agent-card.json", headers=headers)
        assert status == 400 and "evil.example" in body["error"]["message"], body
    assert guarded.board.list_tasks() == []


def test_the_paths_of_one_port(guarded: Board) -> None:
    status, headers, card = guarded.request("GET", "/.well-known/agent-card.json?x=1")
    assert status == 200 and card["name"] == "board" and headers["etag"], card
    assert [i["url"] for i in card["supportedInterfaces"]] == [guarded.origin + "/a2a", guarded.origin + "/a2a/rest"]
    assert guarded.request("GET", "/.well-known/agent.json")[2]["name"] == "board"
    status, _, body = guarded.request("POST", "/a2a/tasks/send", {}, AUTH)  # the agent's pre-1.0 pointer
    assert status == 404 and "A2A v1.0" in body["error"]["message"], body
    status, _, body = guarded.request("GET", "/a2a/rest/tasks", headers=AUTH)
    assert status == 200 and body["tasks"] == [], body
    status, _, body = guarded.request("GET", "/elsewhere", headers=AUTH)  # the MCP endpoint's: not found
    assert status == 404
    status, _, body = guarded.request("POST", "/", send_message("root"), AUTH)  # JSON-RPC only at /a2a here
    assert status == 404


def test_a2a_port_serves_the_agent_apart(tmp_path: Path) -> None:
    for served in serve(tmp_path, 0, {}):
        assert served.serving.a2a is not None
        server = served.serving.a2a.server
        assert server is not None and server.server_address[1] != served.port
        status, _, card = served.request("GET", "/.well-known/agent-card.json", port=server.server_address[1])
        assert status == 200 and card["supportedInterfaces"][0]["url"] == server.base_url + "/a2a"
        assert served.request("GET", "/.well-known/agent-card.json")[0] == 404  # not on the MCP port
        status, _, body = served.request("POST", "/a2a", send_message("apart"), port=server.server_address[1])
        assert status == 200 and body["result"]["task"]["id"], body


def test_no_a2a_serves_only_mcp(tmp_path: Path) -> None:
    for served in serve(tmp_path, None, {}):
        assert served.serving.a2a is None
        assert served.request("GET", "/.well-known/agent-card.json")[0] == 404
        assert served.request("POST", "/a2a", send_message("none"))[0] == 404
        assert served.request("POST", "/mcp", INIT)[0] == 200


def test_oauth_on_one_port_each_face_takes_its_own_audience(tmp_path: Path) -> None:
    from mcp_agent_kit.auth.settings import OAuthSettings
    from tests.auth.fake_as import FakeAuthorizationServer

    issuer = FakeAuthorizationServer()
    try:
        for served in serve(tmp_path, SAME_PORT, {"oauth": OAuthSettings(issuer=issuer.issuer)}):
            mcp_url, a2a_url = served.origin + "/mcp", served.origin
            # RFC 9728: each face's metadata names its own resource (the root one is the agent's)
            for path, resource in (("/.well-known/oauth-protected-resource/mcp", mcp_url),
                                   ("/.well-known/oauth-protected-resource", a2a_url)):
                status, _, document = served.request("GET", path)
                assert status == 200 and document["resource"] == resource, (path, document)
            for_mcp = {"Authorization": f"Bearer {issuer.token(mcp_url)}"}
            for_a2a = {"Authorization": f"Bearer {issuer.token(a2a_url)}"}
            assert served.request("POST", "/mcp", INIT)[0] == 401
            assert served.request("POST", "/mcp", INIT, for_a2a)[0] == 401  # a token meant for the other face
            assert served.request("POST", "/mcp", INIT, for_mcp)[0] == 200
            assert served.request("POST", "/a2a", send_message("oauth"), for_mcp)[0] == 401
            status, _, body = served.request("POST", "/a2a", send_message("oauth"), for_a2a)
            assert status == 200 and "result" in body, body
    finally:
        issuer.close()
