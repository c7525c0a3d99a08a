"""The servers of bench/board_live_bench.py: the board as `mcp-agent-kit board` serves it, and the floor's hub.

`Served` is a real board.board.Board (a new git repository, its sqlite store in a temporary data directory;
not started, so no agent runs) behind board.cli.make_board_http, with the web board (board.web_app) and the
live API (board.live_http: /ws) mounted on one loopback port, and a few held tasks: `task` (the one whose
updates are timed), `idle` (the one the idle subscribers follow) and three more cards. `update(n)` is one
agent update as board.runner.TaskRunner.say makes it from an agent's message chunk: append it to the task's
transcript (board.tasks) and tell the board's "task" listeners (board.runner.tell), which send each
subscriber its notification from that call.
`FloorHub` is our WebSocket hub (httpd.ws_server) behind an engine app that only accepts (a trivial handler
that keeps the latest connection) and serves a blank page for a browser to open its socket from (Chromium
lets a page reach a loopback socket only from a loopback origin): the transport without the board.
Rules: loopback only; every wait bounded; `close()` stops what was started.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from mcp_agent_kit.httpd import Channel, Request, Server, WsConnection, accept

ROOT = Path(__file__).resolve().parent.parent
ECHO_AGENT = ROOT / "examples" / "acp_echo_agent.py"
TIMEOUT_S = 30.0
FLOOR_HTML = b"<!doctype html><html lang=en><title>floor</title><p>floor</p></html>"
FLOOR_PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(FLOOR_HTML), FLOOR_HTML))


class Served:
    """A real Board, not started, with the web board and /ws on one loopback port."""

    def __init__(self, root: Path) -> None:
        from mcp_agent_kit.board.board import Board
        from mcp_agent_kit.board.cli import make_board_http, mount_people
        from mcp_agent_kit.board.config import parse_config

        repo = root / "repo"
        repo.mkdir()
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, env=env, check=True, capture_output=True)
        agent = {"acp": {"command": sys.executable, "args": [str(ECHO_AGENT)]}}
        self.board = Board(parse_config({"agents": {"echo": agent}}), repo, data_dir=root / "data")
        self.http, self.tools = make_board_http(self.board, "127.0.0.1", 0)
        self.live = mount_people(self.board, self.http, self.board.store)
        self.thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.port = self.http.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/ws"
        self.task = self.board.create_task("the task whose updates are timed", title="live", hold=True)
        self.idle = self.board.create_task("the task the idle subscribers follow", title="idle", hold=True)
        for number in range(3):  # a few more cards on the page
            self.board.create_task(f"card {number}", title=f"card {number}", hold=True)

    def update(self, number: int) -> int:
        """One agent update to the timed task, as board.runner.TaskRunner.say makes it; its seq."""
        text = f"update {number}: the agent streams a line of its answer to the page"
        seq: int = self.board.tasks.append(self.task["id"], {"kind": "message", "type": "message", "text": text})
        self.board.runner.tell(self.task, seq)
        return seq

    def close(self) -> None:
        self.live.close()
        self.tools.close()
        self.http.shutdown()
        self.http.server_close()
        self.thread.join(10)
        self.board.close()


class _Sink:
    """The trivial handler: keeps the connection; ignores what it is sent."""

    def __init__(self, opened: Callable[[WsConnection], None]) -> None:
        self._opened = opened

    def opened(self, conn: WsConnection) -> None:
        self._opened(conn)

    def received(self, conn: WsConnection, message: str | bytes) -> None:
        pass

    def closed(self, conn: WsConnection, code: int, reason: str) -> None:
        pass


class FloorHub:
    """Our WebSocket hub (httpd.ws_server) behind an engine app that only accepts: `send` goes to the
    latest connection. The floor of the update latency: the transport without the board."""

    def __init__(self) -> None:
        self.conn: WsConnection | None = None
        self._opened = threading.Condition()
        self.server = Server(("127.0.0.1", 0), self._app)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = f"ws://127.0.0.1:{self.server.server_address[1]}/ws"
        self.page = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def _app(self, request: Request, channel: Channel) -> bool:
        if request.headers.get("upgrade") is None:  # the floor's page: a browser opens a loopback socket from
            channel.write(FLOOR_PAGE)               # a loopback origin only (local network access checks)
            return False
        return accept(self.server, request, channel, _Sink(self._set), principal=None)

    def _set(self, conn: WsConnection) -> None:
        with self._opened:
            self.conn = conn
            self._opened.notify_all()

    def wait_open(self, previous: WsConnection | None) -> WsConnection:
        with self._opened:
            if not self._opened.wait_for(lambda: self.conn is not previous, TIMEOUT_S):
                raise RuntimeError("the floor hub saw no connection")
            assert self.conn is not None
            return self.conn

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
