"""board.cli: `mcp-agent-kit board [CONFIG] [--repo DIR] [--http HOST:PORT] [--store URL] [--data-dir DIR]
[--replica NAME] [--store-lease SECONDS]`.

Serves one repository's board: the MCP tools (board.mcp_tools) at `/mcp`, both eras, with `serve`'s
HTTP rules (tokens or OAuth, Host/Origin allowlists, the public-bind rule: a non-loopback bind needs
--token or --oauth-issuer, or --insecure). Defaults: the current directory's repository, and
127.0.0.1:8765 (DEFAULT_PORT; the `task` command looks there too). State lives in the store (`--store
URL`; by default the Board's sqlite file in its own data directory, never inside the repository). With
`--store postgresql://...` several board processes are replicas of one board (board.replicas; docs/board.md
"Replicas"): on one machine they share the data directory; `--replica NAME` names one (default host:pid:random),
`--store-lease SECONDS` is how soon the others take over a dead one's scheduling and tasks (default 30).
The A2A face (board.a2a_face: every board task an A2A task) shares the MCP endpoint's socket by default
(a2a.http.A2AEndpoint mounted on it): card at http://HOST:PORT/.well-known/agent-card.json, JSON-RPC at
/a2a, HTTP+JSON at /a2a/rest, each face with its own gate (the same tokens, OAuth issuer and Host/Origin
allowlists as /mcp; an OAuth token's audience is the face's URL: HOST:PORT/mcp or HOST:PORT, whose RFC 9728
metadata are /.well-known/oauth-protected-resource/mcp and /.well-known/oauth-protected-resource). `--a2a-port
PORT` serves it on its own port instead (a2a.http.A2AServer; 0 picks one), `--no-a2a` not at all. The web
board (board.web_app: the page at /, sign-in at /login with the same tokens, or through the OAuth issuer's
own login page, as --oauth-client-id when given, else as a client it registers) and the live API (board.live_http:
the WebSocket envelope at /ws, SSE at /events) share the socket too, behind the same gate (the same tokens,
OAuth issuer and Host/Origin allowlists); the page's session cookie signs in to /ws as well.
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
    lease_seconds,
    listen_failed,
    oauth_settings,
    port_number,
    prog,
    replica_id,
    serving,
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
    cli.add_argument("--replica", metavar="NAME",
                     help="this process's name among the board's replicas (default: host:pid:random with --store, "
                          "else one derived from the data directory)")
    cli.add_argument("--store-lease", metavar="SECONDS", type=lease_seconds, default=None,
                     help="the lease of a replica's runs and of the scheduler: how soon another replica takes "
                          "over when one dies (default 30)")
    a2a = cli.add_mutually_exclusive_group()
    a2a.add_argument("--a2a-port", type=port_number, metavar="PORT",
                     help="serve the A2A agent on this port of the same host (0 picks a free one); default: on "
                          "the --http port, card at /.well-known/agent-card.json, JSON-RPC at /a2a")
    a2a.add_argument("--no-a2a", action="store_true", help="serve no A2A agent, only MCP")
    add_token_options(cli, f"HTTP; default ${TOKEN_ENV}")
    add_origin_options(cli)
    add_insecure_option(cli)
    add_oauth_options(cli)
    return cli


SAME_PORT = "same"  # serve()'s `a2a`: the A2A agent on the MCP endpoint's socket (else a port, or None: none)


def a2a_face(board: Any, http: Any, host: str, where: int | str | None, options: dict[str, Any],
             face: Any = None) -> A2AFace | None:
    """The board's A2A agent (`face`, default board.a2a_face.BoardFace(board), over a2a.http): mounted on
    the MCP server `http` (`where` is SAME_PORT), on its own A2AServer on port `where` of `host`, or none
    (None). `options` are make_server's (tokens, oauth, allowed_hosts, allowed_origins): each face has its
    own gate with the same settings. The face is closed when this fails."""
    if where is None:
        return None
    from mcp_agent_kit.a2a.http import A2AEndpoint, A2AServer, base_url_for

    if face is None:
        from mcp_agent_kit.board.a2a_face import BoardFace

        face = BoardFace(board)
    gate: dict[str, Any] = {"tokens": options.get("tokens"), "oauth": options.get("oauth"),
                            "allowed_hosts": options.get("allowed_hosts") or (),
                            "allowed_origins": options.get("allowed_origins") or ()}
    try:
        if where == SAME_PORT:
            endpoint = A2AEndpoint(face, base_url_for(host, http.server_address[1]), bind_host=host, **gate)
            endpoint.mount(http)
            return A2AFace(face, endpoint.base_url)
        server = A2AServer(face, host, int(where), **gate)
    except BaseException:
        face.close()
        raise
    return A2AFace(face, server.base_url, server)


class A2AFace:
    """The board's A2A agent: its BoardFace and its base URL, and its own server when it has one (else
    it is mounted on the MCP endpoint's). Closing ends its streams first."""

    def __init__(self, face: Any, base_url: str, server: Any = None) -> None:
        self.face, self.server = face, server
        face.url = base_url
        self.url = base_url + "/a2a"

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        if self.server is not None:
            self.server.serve_forever(poll_interval=poll_interval)

    def shutdown(self) -> None:
        if self.server is not None:
            self.server.shutdown()

    def server_close(self) -> None:
        self.face.close()
        if self.server is not None:
            self.server.server_close()


def make_board_http(board: Any, host: str, port: int, **options: Any) -> tuple[Any, Any]:
    """The board's MCP endpoint, bound (port 0 picks one) but not serving: (the HTTP server, its TaskTools).
    `options` are transports.http.make_server's (tokens, allowed_hosts, allowed_origins, oauth, ...)."""
    from mcp_agent_kit.board.mcp_tools import board_server
    from mcp_agent_kit.transports.http import make_server

    server, tools = board_server(board)
    return make_server(server.dispatcher, host, port, path=PATH, **options), tools


def mount_people(board: Any, http: Any, store: Any, oauth: Any = None) -> Any:
    """The faces people use, on the board's MCP server `http`: the web board (/, /login, /logout, /static/...,
    /api/session; its session keys in `store`) and the live API (/ws, /events), whose WebSocket the page's
    session cookie signs in to. `oauth`: the server's OAuth settings (the page signs in with the issuer as
    --oauth-client-id, if given). Returns the live app (board.live_http.LiveHttp), to close first."""
    from mcp_agent_kit.board.live_http import mount_live
    from mcp_agent_kit.board.web_app import mount_web

    web = mount_web(http, store, client_id=getattr(oauth, "client_id", None),
                    client_secret=getattr(oauth, "client_secret", None))
    return mount_live(board, http, cookie=web.signed)


class Serving:
    """The MCP endpoint and the A2A face as one Servable for httpd.lifecycle: closing ends the long-polls
    and the A2A streams first, so no request worker keeps the drain waiting."""

    def __init__(self, http: Any, tools: Any, a2a: A2AFace | None, live: Any = None) -> None:
        self.http, self.tools, self.a2a, self.live = http, tools, a2a, live

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        if self.a2a is not None and self.a2a.server is not None:
            threading.Thread(target=self.a2a.serve_forever, name="board-a2a", daemon=True).start()
        self.http.serve_forever(poll_interval=poll_interval)

    def shutdown(self) -> None:
        if self.a2a is not None:
            self.a2a.shutdown()
        self.http.shutdown()

    def server_close(self) -> None:
        self.tools.close()
        if self.live is not None:
            self.live.close()  # its SSE streams end before the server drains its stream threads
        if self.a2a is not None:
            self.a2a.server_close()
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


def _open_board(config: BoardConfig, repo: Path, store: Store | None, data_dir: str | None,
                replica: str | None = None, lease_s: float | None = None) -> Board:
    from mcp_agent_kit.board.board import Board
    from mcp_agent_kit.board.errors import BoardError

    if replica is None and store is not None:
        replica = replica_id()
    try:
        return Board(config, repo, store=store, data_dir=data_dir, replica=replica, lease_s=lease_s)
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
    a2a: int | str | None = None if args.no_a2a else SAME_PORT if args.a2a_port is None else args.a2a_port
    for flag, number in (("--http", port), ("--a2a-port", a2a)):
        if isinstance(number, int):
            try:
                check_bindable(host, number)  # a port in use fails before the board recovers anything
            except (OSError, OverflowError) as exc:
                return _listen_failed(flag, host, number, exc)
    options = {"tokens": tokens, "oauth": oauth, "allowed_hosts": args.allow_host,
               "allowed_origins": args.allow_origin}
    with interruptible():
        board = _open_board(config, repo, _store(args.store), args.data_dir, args.replica, args.store_lease)

        def run() -> int:
            board.start()
            return serve(board, host, port, options, a2a)

        try:
            return serving(run, host, port, oauth)
        finally:
            board.close()


def _listen_failed(flag: str, host: str, port: int, exc: BaseException) -> int:
    if flag == "--http":
        return listen_failed(host, port, exc)
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return fail(f"cannot listen on {host}:{port} (--a2a-port): {reason}",
                "pick another --a2a-port (0 picks a free one), or leave it out to share --http's port")


def serve(board: Any, host: str, port: int, options: dict[str, Any], a2a: int | str | None = SAME_PORT) -> int:
    """Serve the board's faces until SIGTERM or Ctrl-C (httpd.lifecycle); 0. `a2a`: where the A2A agent
    is served (a2a_face). The first stderr line names the MCP URL (with the port bound, when 0 was asked),
    the next the A2A agent's, the last the live API's."""
    import sys

    from mcp_agent_kit.httpd.lifecycle import run_until_stopped

    def build() -> Serving:
        http, tools = make_board_http(board, host, port, **options)
        try:
            live = mount_people(board, http, board.store, options.get("oauth"))
            face = a2a_face(board, http, host, a2a, options)
        except BaseException:
            tools.close()
            http.server_close()
            raise
        return Serving(http, tools, face, live)

    def ready(serving: Serving) -> None:
        print(f"board: serving MCP at {serving.http.url}", file=sys.stderr, flush=True)
        if serving.a2a is not None:
            print(f"board: serving A2A at {serving.a2a.url}", file=sys.stderr, flush=True)
        base = serving.http.url.rsplit("/", 1)[0]
        print(f"board: live API at {base}/ws (WebSocket) and {base}/events (SSE)", file=sys.stderr, flush=True)

    return run_until_stopped(build, ready)
