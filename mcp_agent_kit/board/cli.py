"""board.cli: `mcp-agent-kit board [CONFIG] [--repo DIR] [--http HOST:PORT] [--store URL] [--data-dir DIR]`.

Serves one repository's board: the MCP tools (board.mcp_tools) at `/mcp`, both eras, with `serve`'s
HTTP rules (tokens or OAuth, Host/Origin allowlists, the public-bind rule: a non-loopback bind needs
--token or --oauth-issuer, or --insecure). Defaults: the current directory's repository, and
127.0.0.1:8765 (DEFAULT_PORT; the `task` command looks there too). State lives in the store (`--store
URL`; by default the Board's sqlite file in its own data directory, never inside the repository).
The A2A face (board.a2a_face: every board task an A2A task) is served beside it by a2a.http.A2AServer on
its own port (`--a2a-port`, default the MCP port + 1; 0 when the MCP port is 0): card at
/.well-known/agent-card.json, JSON-RPC at /a2a, HTTP+JSON at /a2a/rest, with the same tokens, OAuth and
Host/Origin allowlists as /mcp. (Its own port: the MCP endpoint and the A2A server are two httpd apps,
each with its own gate and limits; one port would need a router over both.) `--a2a-port -1` turns it off.
SIGTERM or Ctrl-C stops accepting, ends the long-polls, and closes the Board (running agents stopped,
tasks keep their state). Mistakes are one stderr line naming the fix: usage and config errors exit
2, a port that cannot be bound 1.
Rules: argument parsing and wiring only; the board is board.board's, the tools board.mcp_tools'.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.cli_common import (
    USAGE,
    CliError,
    Parser,
    add_insecure_option,
    add_oauth_options,
    add_origin_options,
    add_token_options,
    check_bindable,
    check_public_bind,
    fail,
    host_port,
    listen_failed,
    oauth_settings,
    prog,
    tokens_from,
)

if TYPE_CHECKING:
    from mcp_agent_kit.board.board import Board
    from mcp_agent_kit.board.config import BoardConfig
    from mcp_agent_kit.store.base import Store

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/mcp"
PATH = "/mcp"
TOKEN_ENV = "MCP_AGENT_KIT_TOKEN"  # the bearer token the board accepts (without --token) and `task` sends


def parser() -> Parser:
    cli = Parser(prog=prog("board"),
                 description="Serve a git repository's board of coding agents: tasks queued, each run by an ACP "
                             "agent in its own worktree, reviewed and merged; MCP tools at /mcp.")
    cli.add_argument("config", nargs="?", metavar="CONFIG",
                     help="the board's JSON config (agents, board, mcpServers); default: none (found agents only)")
    cli.add_argument("--repo", default=".", metavar="DIR", help="the git repository (default: the current directory)")
    cli.add_argument("--http", metavar="HOST:PORT", type=host_port, default=(DEFAULT_HOST, DEFAULT_PORT),
                     help=f"serve MCP at http://HOST:PORT{PATH} (default {DEFAULT_HOST}:{DEFAULT_PORT}; "
                          "port 0 picks a free one)")
    cli.add_argument("--store", metavar="URL",
                     help="where tasks live: sqlite:///path or postgresql://... (default: a sqlite file in the "
                          "board's data directory)")
    cli.add_argument("--data-dir", metavar="DIR",
                     help="the board's own directory: its sqlite file and worktrees (default: per repository under "
                          "$XDG_DATA_HOME/mcp-agent-kit/boards)")
    cli.add_argument("--a2a-port", type=int, default=None, metavar="PORT",
                     help="serve the A2A agent on this port of the same host (default: the MCP port + 1; "
                          "-1: no A2A agent)")
    add_token_options(cli, f"HTTP; default ${TOKEN_ENV}")
    add_origin_options(cli)
    add_insecure_option(cli)
    add_oauth_options(cli)
    return cli


def a2a_port(mcp_port: int, asked: int | None) -> int | None:
    """The A2A agent's port: as asked (-1: none), else the MCP port + 1 (0 when that is 0)."""
    if asked is not None:
        return None if asked < 0 else asked
    return 0 if mcp_port == 0 else mcp_port + 1


def faces(board: Any, host: str, port: int | None, options: dict[str, Any]) -> list[Any]:
    """The board's other faces, served beside the MCP endpoint: each a Servable (serve_forever, shutdown,
    server_close). The A2A agent (board.a2a_face over a2a.http.A2AServer) on `port` (None: none), with
    make_server's `options` (tokens, oauth, allowed_hosts, allowed_origins)."""
    if port is None:
        return []
    from mcp_agent_kit.a2a.http import A2AServer
    from mcp_agent_kit.board.a2a_face import BoardFace

    face = BoardFace(board)
    try:
        server = A2AServer(face, host, port, tokens=options.get("tokens"), oauth=options.get("oauth"),
                           allowed_hosts=options.get("allowed_hosts") or (),
                           allowed_origins=options.get("allowed_origins") or ())
    except BaseException:
        face.close()
        raise
    return [A2AFace(server, face)]


class A2AFace:
    """The A2A server and its face as one Servable: closing the server closes the face (streams end)."""

    def __init__(self, server: Any, face: Any) -> None:
        self.server, self.face = server, face
        face.url = server.base_url
        self.url = server.base_url + "/a2a"

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self.server.serve_forever(poll_interval=poll_interval)

    def shutdown(self) -> None:
        self.server.shutdown()

    def server_close(self) -> None:
        self.face.close()
        self.server.server_close()


def make_board_http(board: Any, host: str, port: int, **options: Any) -> tuple[Any, Any]:
    """The board's MCP endpoint, bound (port 0 picks one) but not serving: (the HTTP server, its TaskTools).
    `options` are transports.http.make_server's (tokens, allowed_hosts, allowed_origins, oauth, ...)."""
    from mcp_agent_kit.board.mcp_tools import board_server
    from mcp_agent_kit.transports.http import make_server

    server, tools = board_server(board)
    return make_server(server.dispatcher, host, port, path=PATH, **options), tools


class Serving:
    """The MCP endpoint and the other faces as one Servable for httpd.lifecycle: closing ends the
    long-polls first, so no request worker keeps the drain waiting."""

    def __init__(self, http: Any, tools: Any, others: list[Any]) -> None:
        self.http, self.tools, self.others = http, tools, others

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        threads = [threading.Thread(target=face.serve_forever, name="board-face", daemon=True)
                   for face in self.others]
        for thread in threads:
            thread.start()
        self.http.serve_forever(poll_interval=poll_interval)

    def shutdown(self) -> None:
        for face in self.others:
            face.shutdown()
        self.http.shutdown()

    def server_close(self) -> None:
        self.tools.close()
        for face in self.others:
            face.server_close()
        self.http.server_close()


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM before serving starts (the board recovering, workspaces re-attaching) ends like Ctrl-C, so the
    caller's `finally` closes the board; while serving, httpd.lifecycle's own handler takes over."""
    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, stop) if main else None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _config(path: str | None) -> BoardConfig:
    if path is not None and not os.path.isfile(path):
        raise CliError(f"no such config file: {path}", "give the board's JSON config file, or none", USAGE)
    from mcp_agent_kit.board.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:  # one line naming the key and the fix
        text = " ".join(str(exc).split())
        raise CliError(text if path is None or path in text else f"{path}: {text}", None, USAGE) from None


def _repo(value: str) -> Path:
    repo = Path(value).expanduser()
    if not repo.is_dir():
        raise CliError(f"no such directory: --repo {value}", "give the git repository's directory", USAGE)
    return repo.resolve()


def _store(url: str | None) -> Store | None:
    if url is None:
        return None
    from mcp_agent_kit.store import StoreError, open_store

    try:
        return open_store(url)
    except StoreError as exc:
        raise CliError(f"cannot open --store: {exc}", "see docs/store.md for the URL forms", USAGE) from None


def _open_board(config: BoardConfig, repo: Path, store: Store | None, data_dir: str | None) -> Board:
    from mcp_agent_kit.board.board import Board
    from mcp_agent_kit.board.errors import BoardError

    try:
        return Board(config, repo, store=store, data_dir=data_dir)
    except (BoardError, ValueError, OSError) as exc:
        if store is not None:
            store.close()
        raise CliError(f"cannot open the board of {repo}: {exc}", "check --repo and --data-dir", USAGE) from None


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    repo = _repo(args.repo)
    host, port = args.http
    tokens = tokens_from(args, TOKEN_ENV)
    oauth = oauth_settings(args)
    check_public_bind(host, authenticated=bool(tokens) or oauth is not None, insecure=args.insecure,
                      what="the board")
    config = _config(args.config)
    try:
        check_bindable(host, port)  # a port in use fails before the board recovers anything
    except (OSError, OverflowError) as exc:
        return listen_failed(host, port, exc)
    options = {"tokens": tokens, "oauth": oauth, "allowed_hosts": args.allow_host,
               "allowed_origins": args.allow_origin}
    with interruptible():
        board = _open_board(config, repo, _store(args.store), args.data_dir)
        try:
            board.start()
            return serve(board, host, port, options, a2a_port(port, args.a2a_port))
        except ValueError as exc:
            if oauth is None:
                raise
            return fail(f"OAuth: {exc}", "check --oauth-issuer (and --oauth-jwks-url)")
        except (OSError, OverflowError) as exc:
            return listen_failed(host, port, exc)
        finally:
            board.close()


def serve(board: Any, host: str, port: int, options: dict[str, Any], a2a: int | None = None) -> int:
    """Serve the board's faces until SIGTERM or Ctrl-C (httpd.lifecycle); 0. The first stderr line names
    the MCP URL (with the port bound, when 0 was asked), the next the A2A agent's."""
    import sys

    from mcp_agent_kit.httpd.lifecycle import run_until_stopped

    def build() -> Serving:
        http, tools = make_board_http(board, host, port, **options)
        try:
            others = faces(board, host, a2a, options)
        except BaseException:
            tools.close()
            http.server_close()
            raise
        return Serving(http, tools, others)

    def ready(serving: Serving) -> None:
        print(f"board: serving MCP at {serving.http.url}", file=sys.stderr, flush=True)
        for face in serving.others:
            print(f"board: serving A2A at {face.url}", file=sys.stderr, flush=True)

    return run_until_stopped(build, ready)
