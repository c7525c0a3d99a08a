"""The board as one product, end to end: the REAL Board (board.board) on a temporary git repository with the
echo agent (examples/acp_echo_agent.py), served in this process through `mcp-agent-kit board`'s own
make_board_http, driven by the official `mcp` SDK client and by the `task` CLI as a subprocess; every
workspace claim checked with git itself; and the configured webhooks receiving the board's signed
semantic events. Nothing sleeps: the tests wait on Board.wait_task, the board's listeners and bounded
polls of a subprocess's output."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.states import ACTIVE
from mcp_agent_kit.board.webhooks import http_post, verify_signature
from tests.board.boards import WAIT_S, running_board, settled, task_when
from tests.board.conftest import run_git
from tests.board.surfaces import served
from tests.board.test_mcp_tools import call, drive
from tests.board.test_task_cli import Watching, as_json, ok

SECRET = "whsec-board-e2e-4b1f"


class Peak:
    """The most tasks ever active (running or needs_input) at once, seen by a "task" listener."""

    def __init__(self, board: Board) -> None:
        self.board, self.most, self.lock = board, 0, threading.Lock()
        self.remove = board.add_listener("task", self._heard)

    def _heard(self, change: dict[str, Any]) -> None:
        active = sum(task["state"] in ACTIVE for task in self.board.list_tasks())
        with self.lock:
            self.most = max(self.most, active)


def test_mcp_sdk_and_task_cli_drive_a_real_board(tmp_path: Path, repo: Path) -> None:
    with running_board(tmp_path, repo, start=False, approve="ask", max_concurrent=2) as board, \
            served(board) as url:
        ids: dict[str, str] = {}

        async def create(client: Any) -> None:  # created before the scheduler runs: the queue decides alone
            for priority in ("low", "normal", "urgent", "high"):
                made = await call(client, "create_task", {"prompt": f"Write {priority}", "priority": priority})
                assert (made["state"], made["priority"], made["agent"]) == ("queued", priority, "echo")
                ids[priority] = made["id"]
            listed = await call(client, "list_tasks", {"state": "queued"})
            assert [task["id"] for task in listed["tasks"]] == [ids[p] for p in ("low", "normal", "urgent", "high")]

        drive(url, "auto", create)
        peak = Peak(board)
        board.start()
        urgent = settled(board, ids["urgent"], "needs_input")
        settled(board, ids["high"], "needs_input")
        for priority in ("normal", "low"):
            waiting = task_when(board, ids[priority], lambda t: str(t.get("waiting") or "").startswith("capacity"))
            assert waiting["state"] == "queued", waiting
        assert urgent["question"]["options"][0]["id"] == "allow-once"

        async def review_and_merge(client: Any) -> None:  # the urgent task, through the MCP tools
            answered = await call(client, "answer_task", {"task_id": ids["urgent"], "answer": "allow-once"})
            assert answered["state"] == "running" and answered.get("question") is None
            await asyncio.to_thread(settled, board, ids["urgent"], "review")
            events = (await call(client, "task_events", {"task_id": ids["urgent"]}))["events"]
            kinds = [event["kind"] for event in events]
            for kind in ("turn_start", "plan", "message", "tool_call", "question", "answer", "turn_end"):
                assert kind in kinds, kinds
            assert kinds.index("question") < kinds.index("answer") < kinds.index("turn_end")
            assert any(item.get("type") == "diff" for event in events if event["kind"] == "tool_call"
                       for item in event.get("content") or ())
            diff = await call(client, "task_diff", {"task_id": ids["urgent"]})
            assert [(f["path"], f["status"], f["added"]) for f in diff["files"]] == [("echo.txt", "added", 1)]
            assert "+Write urgent" in diff["patch"]
            workspace = Path(urgent["workspace"] or board.get_task(ids["urgent"])["workspace"])
            assert (workspace / "echo.txt").read_text() == "Write urgent\n"
            assert not (repo / "echo.txt").exists()  # only in its own worktree until accepted
            assert not (Path(board.get_task(ids["high"])["workspace"]) / "echo.txt").exists()
            done = await call(client, "accept_task", {"task_id": ids["urgent"], "merge": True})
            assert done["state"] == "done"

        drive(url, "auto", review_and_merge)
        assert run_git(repo, "show", "main:echo.txt") == "Write urgent"
        assert f"(task {ids['urgent']})" in run_git(repo, "log", "-1", "--format=%s", "main")

        # the high task, through the `task` CLI
        assert as_json(url, "answer", ids["high"], "allow-once")["state"] == "running"
        settled(board, ids["high"], "review")
        assert "state: review" in ok(url, "show", ids["high"]).splitlines()
        rows = ok(url, "list").splitlines()[1:]
        assert {row.split()[0]: row.split()[1] for row in rows}[ids["urgent"]] == "done" and len(rows) == 4
        patch = ok(url, "diff", ids["high"])
        assert "echo.txt" in patch and "+Write high" in patch

        # the low task, followed by `task watch` (not a terminal: it says how to answer, then ends at review)
        settled(board, ids["low"], "running", "needs_input")
        watching = Watching(url, ids["low"])
        watching.saw(f"waiting for an answer: 'mcp-agent-kit task answer {ids['low']} ANSWER'")
        assert board.answer_task(ids["low"], "reject-once")["state"] == "running"
        code, out, err = watching.finish()
        assert (code, err) == (0, "")
        for line in ("== turn started: Write low", "Echo: Write low", "[tool] Write echo.txt (edit, pending)",
                     "  +Write low", "? The agent asks permission for: Write echo.txt",
                     "  [reject-once] Reject (reject_once)", "-- running -> needs_input (ask)",
                     "> answered: reject-once", "File: refused.", "== turn ended: end_turn",
                     "-- running -> review (finish)"):
            assert line in out.splitlines(), f"{line!r} not in:\n{out}"
        assert out.rstrip().splitlines()[-1].startswith(f"task {ids['low']} \"Write low\" is review")

        # discard: the worktree and the branch are gone, as git sees it
        low = board.get_task(ids["low"])
        assert low["branch"] in run_git(repo, "branch", "--list", low["branch"])
        assert as_json(url, "discard", ids["low"])["state"] == "discarded"
        assert run_git(repo, "branch", "--list", low["branch"]) == ""
        assert low["workspace"] not in run_git(repo, "worktree", "list", "--porcelain")
        assert not Path(low["workspace"]).exists()
        peak.remove()
        assert peak.most == 2  # never more than max_concurrent at once, and the limit was reached


class Receiver:
    """A webhook endpoint that checks X-Board-Signature: 204 and the event kept, or 401 for a bad signature."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.taken: list[tuple[dict[str, str], bytes]] = []
        self.refused = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                signed = verify_signature(self.headers.get("X-Board-Signature", ""), body, SECRET.encode(),
                                          now=time.time())
                with receiver.cond:
                    if signed:
                        receiver.taken.append((dict(self.headers.items()), body))
                    else:
                        receiver.refused += 1
                    receiver.cond.notify_all()
                self.send_response(204 if signed else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/board-hook"

    def wait_for(self, count: int) -> list[tuple[dict[str, str], bytes]]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.taken) >= count, WAIT_S), self.taken
            return list(self.taken)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    thread = threading.Thread(target=made.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield made
    made.server.shutdown()
    made.server.server_close()


def test_webhooks_get_the_boards_signed_events_in_order(tmp_path: Path, repo: Path, receiver: Receiver,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOARD_E2E_SECRET", SECRET)
    hooks = [{"url": receiver.url, "secretEnv": "BOARD_E2E_SECRET"}]
    with running_board(tmp_path, repo, approve="ask", webhooks=hooks) as board:
        assert board.config.webhooks[0].secret == SECRET.encode()  # read from secretEnv when the config was
        task = board.create_task("Write hooked")
        settled(board, task["id"], "needs_input")
        board.answer_task(task["id"], "allow-once")
        settled(board, task["id"], "review")
        delivered = receiver.wait_for(2)
    assert [headers["X-Board-Event"] for headers, _ in delivered] == ["task.needs_input", "task.review"]
    bodies = [json.loads(body) for _, body in delivered]
    assert [(body["type"], body["task"]["id"], body["task"]["state"]) for body in bodies] == [
        ("task.needs_input", task["id"], "needs_input"), ("task.review", task["id"], "review")]
    assert bodies[0]["task"]["question"]["kind"] == "permission" and bodies[1]["task"]["result"]
    assert [headers["X-Board-Delivery"] for headers, _ in delivered] == [body["id"] for body in bodies]
    assert receiver.refused == 0

    headers, body = delivered[1]
    tampered = body.replace(b'"review"', b'"done"', 1)
    assert tampered != body
    assert not verify_signature(headers["X-Board-Signature"], tampered, SECRET.encode(), now=time.time())
    replay = {"Content-Type": "application/json", "X-Board-Signature": headers["X-Board-Signature"]}
    assert http_post(receiver.url, tampered, replay, WAIT_S) == 401
    assert receiver.refused == 1 and len(receiver.taken) == 2


def test_the_a2a_sdk_drives_a_real_board_on_the_mcp_port(tmp_path: Path, repo: Path) -> None:
    """The official a2a-sdk client on the board's one port: a message creates a task, the permission question
    comes back as INPUT_REQUIRED, a message with the taskId answers it (an option's id), and the turn's end
    is INPUT_REQUIRED again (review) with the agent's reply; the file is only in the task's worktree."""
    import httpx
    from a2a.client import A2ACardResolver, ClientConfig, create_client
    from a2a.types import GetTaskRequest
    from google.protobuf.json_format import MessageToDict

    from mcp_agent_kit.board.cli import SAME_PORT, Serving, a2a_face, make_board_http
    from tests.board.test_a2a_face import message, send, state_name

    with running_board(tmp_path, repo, approve="ask") as board:
        http, tools = make_board_http(board, "127.0.0.1", 0)
        serving = Serving(http, tools, a2a_face(board, http, "127.0.0.1", SAME_PORT, {}))
        thread = threading.Thread(target=serving.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            assert serving.a2a is not None
            base = serving.a2a.face.url

            async def drive_a2a() -> tuple[Any, Any, Any]:
                async with httpx.AsyncClient() as hc:
                    card = await A2ACardResolver(hc, base).get_agent_card()
                client = await create_client(card, client_config=ClientConfig(streaming=False))
                created = await send(client, message("Write through A2A", metadata={"priority": "high"}),
                                     immediate=False)
                answered = await send(client, message("allow-once", task_id=created.id), immediate=False)
                got = await client.get_task(GetTaskRequest(id=created.id))
                return created, answered, got

            created, answered, got = asyncio.run(drive_a2a())
        finally:
            serving.shutdown()
            serving.server_close()
            thread.join(10)
        assert http.url.rsplit("/", 1)[0] == base.rstrip("/")  # one origin: MCP at /mcp, A2A beside it
        assert state_name(created) == "TASK_STATE_INPUT_REQUIRED"
        assert "Write echo.txt" in json.dumps(MessageToDict(created.status.message))
        task = board.get_task(created.id)
        assert task["priority"] == "high" and task["state"] == "review", task
        assert state_name(answered) == "TASK_STATE_INPUT_REQUIRED" and state_name(got) == "TASK_STATE_INPUT_REQUIRED"
        assert "Echo: Write through A2A" in json.dumps(MessageToDict(got))
        assert (Path(task["workspace"]) / "echo.txt").read_text() == "Write through A2A\n"
        assert not (repo / "echo.txt").exists()
