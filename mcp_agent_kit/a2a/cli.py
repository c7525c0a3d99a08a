"""cli: `mcp-agent-kit a2a MODULE:ATTR [--http HOST:PORT] [--store URL] [--token T]... [--tokens-file F]`.

MODULE:ATTR names a Registry/Server (its tools become skills) or an a2a Agent. With `--acp`
(`a2a --acp [--cwd DIR] [--approve ask|reads|all] -- CMD [ARGS...] --port P`) the ACP agent CMD is
served instead (a2a.acp_bridge); a trailing `--port P` / `--http HOST:PORT` after CMD is ours. `--host`/`--port`
are the older spelling of `--http`, hidden from --help but still accepted. Rules: argument parsing
and wiring only; refuses a non-loopback bind without a token unless told `--insecure`
(cli_common.check_public_bind, the rule `serve` shares); user
mistakes are one stderr line (cli_common). `--store sqlite:///path` or `postgresql://...` shares the
tasks with every replica on that store (a2a.store); a bare `--store PATH` is the older spelling
of `sqlite:///PATH` (no shared secret asked for), a file of the older format migrated on open (a2a.task_file).
"""

from __future__ import annotations

import argparse
import logging

from mcp_agent_kit.a2a.engine import Agent, TaskEngine
from mcp_agent_kit.a2a.http import MAX_BODY, principal_for, serve
from mcp_agent_kit.a2a.store import SHARED_MAX_PER_OWNER, SHARED_MAX_TASKS, TaskStore
from mcp_agent_kit.cli_common import (
    USAGE,
    CliError,
    Parser,
    add_insecure_option,
    add_oauth_options,
    add_origin_options,
    add_store_options,
    add_token_options,
    alias,
    check_public_bind,
    fail,
    host_port,
    listen_failed,
    oauth_settings,
    port_number,
    prog,
    serving,
    store_from_args,
    tokens_from,
)

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8080


def build_agent(target: object) -> Agent:
    from mcp_agent_kit.core.registry import Registry

    if isinstance(target, Agent):
        return target
    if isinstance(target, Registry):
        from mcp_agent_kit.a2a.toolagent import ToolAgent

        return ToolAgent(target)
    raise TypeError(f"expected an MCP Server/Registry or an a2a Agent, got {type(target).__name__}")


def is_legacy_path(value: str | None) -> bool:
    """`--store tasks.db` (no URL scheme): the older spelling of `--store sqlite:///tasks.db`."""
    return bool(value) and "://" not in str(value) and value not in ("memory:",)


def build_store(args: argparse.Namespace) -> TaskStore:
    """The task store `--store` names: memory, or tasks on a store.Store (a bare PATH: sqlite:///PATH)."""
    if is_legacy_path(args.store):
        from mcp_agent_kit.a2a.task_file import open_task_file
        from mcp_agent_kit.cli_common import replica_id

        return open_task_file(args.store, replica_id(), args.store_lease)
    options = store_from_args(args)
    if not options.store.shared:
        return TaskStore(options.store)  # memory: one process, nothing leased or logged
    return TaskStore(options.store, options.replica, options.lease_s, max_tasks=SHARED_MAX_TASKS,
                     max_per_owner=SHARED_MAX_PER_OWNER)


def parser() -> Parser:
    parser = Parser(prog=prog("a2a"), description="Serve tools as an A2A v1.0 agent.")
    parser.add_argument("target", metavar="MODULE:ATTR",
                        help="pkg.module:attr or path/file.py:attr (an MCP Server or an a2a Agent; without :attr: the"
                             " object named server, mcp or app, or the module's one Server)")
    parser.add_argument("--http", metavar="HOST:PORT", type=host_port,
                        help=f"bind address (default {DEFAULT_HOST}:{DEFAULT_PORT}; port 0 picks a free one)")
    alias(parser, "--host", dest="host")  # older spelling, still used by generated projects
    alias(parser, "--port", dest="port", type=port_number)
    add_store_options(parser)
    add_token_options(parser, "JSON-RPC and REST")
    parser.add_argument("--public-url", metavar="URL", help="the base URL clients use, when behind a proxy")
    add_origin_options(parser)
    add_oauth_options(parser, public_url=False)
    parser.add_argument("--max-body", type=int, default=MAX_BODY, metavar="N", help="largest request body in bytes")
    add_insecure_option(parser)
    parser.add_argument("--verbose", action="store_true", help="log requests")
    return parser


def bind_address(args: argparse.Namespace) -> tuple[str, int]:
    """`--http HOST:PORT`, or the older `--host`/`--port` (each defaulting on its own)."""
    host, port = args.http or (DEFAULT_HOST, DEFAULT_PORT)
    return getattr(args, "host", host), getattr(args, "port", port)


def acp_parser() -> Parser:
    cli = Parser(prog=prog("a2a"), description="Serve an ACP agent as an A2A v1.0 agent.",
                 usage=f"{prog('a2a')} --acp [--cwd DIR] [--approve ask|reads|all] -- CMD [ARGS...] --port P")
    cli.add_argument("--acp", action="store_true", required=True, help="serve the ACP agent CMD (after --)")
    cli.add_argument("--cwd", metavar="DIR", help="the sessions' working directory (default: the current one)")
    cli.add_argument("--approve", choices=("ask", "reads", "all"), default="ask",
                     help="permission requests: ask the A2A client (default), allow reads and ask the rest, allow all")
    cli.add_argument("--http", metavar="HOST:PORT", type=host_port, help=f"bind address (default {DEFAULT_HOST}:"
                                                                         f"{DEFAULT_PORT}; port 0 picks a free one)")
    cli.add_argument("--port", type=port_number, help="bind port on 127.0.0.1")
    add_token_options(cli, "JSON-RPC and REST")
    add_insecure_option(cli)
    cli.add_argument("--verbose", action="store_true", help="log requests")
    return cli


def _split_acp(argv: list[str]) -> tuple[list[str], list[str]]:
    """(our options, the agent's command): CMD follows `--`; a trailing `--port P`/`--http H:P` is ours."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    ours, command = argv[:at], argv[at + 1:]
    while len(command) >= 3 and command[-2] in ("--port", "--http"):
        ours, command = [*ours, *command[-2:]], command[:-2]
    return ours, command


def acp_main(argv: list[str]) -> int:
    import os

    from mcp_agent_kit.a2a.acp_bridge import AcpBridge
    from mcp_agent_kit.acp.client.client import AcpAgent
    from mcp_agent_kit.acp.client.errors import AcpError
    from mcp_agent_kit.process import anchored
    from mcp_agent_kit.turns.engine import TurnEngine

    ours, command = _split_acp(argv)
    cli = acp_parser()
    args = cli.parse_args(ours)
    if not command:
        cli.error("give the ACP agent's command after --, e.g. a2a --acp -- claude-agent-acp --port 8080")
    if args.http and args.port is not None:
        cli.error("give either --http HOST:PORT or --port, not both")
    host, port = args.http or (DEFAULT_HOST, args.port if args.port is not None else DEFAULT_PORT)
    tokens = tokens_from(args, principal=principal_for)
    check_public_bind(host, authenticated=bool(tokens), insecure=args.insecure, what="the agent", oauth=False)
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        return fail(f"--cwd {args.cwd} is not a directory", "give an existing directory", USAGE)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s")
    try:
        command = anchored(command, cwd)  # `python agent.py` names the file here, not in --cwd
        turns = TurnEngine(args.approve)  # the agent's permission policy, and the driver of its turns
        acp = AcpAgent.spawn(command[0], command[1:], cwd=cwd, policy=turns)
        acp.initialize()
    except AcpError as exc:
        return fail(f"cannot start the ACP agent {command[0]!r}: {exc}", "check the command after --")
    try:
        engine = TaskEngine(AcpBridge(acp, turns, cwd), TaskStore())
        return serve(engine, host, port, tokens=tokens)
    except (OSError, OverflowError) as exc:
        return listen_failed(host, port, exc)
    finally:
        acp.close()


def main(argv: list[str]) -> int:
    if "--acp" in (argv[:argv.index("--")] if "--" in argv else argv):
        return acp_main(argv)
    cli = parser()
    args = cli.parse_args(argv)
    if args.http and (hasattr(args, "host") or hasattr(args, "port")):
        cli.error("give either --http HOST:PORT or the older --host/--port, not both")
    host, port = bind_address(args)
    tokens = tokens_from(args, principal=principal_for)
    oauth = oauth_settings(args)
    check_public_bind(host, authenticated=bool(tokens) or oauth is not None, insecure=args.insecure, what="the agent")
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s")
    from mcp_agent_kit.loader import TargetError, load_target

    try:
        agent = build_agent(load_target(args.target))
    except (TargetError, TypeError) as exc:
        return fail(str(exc), code=USAGE)
    try:
        engine = TaskEngine(agent, build_store(args))
    except CliError as exc:
        return fail(exc.problem, exc.fix, exc.code)
    except Exception as exc:  # e.g. sqlite3.DatabaseError for a path that is not a database
        return fail(f"cannot open the task store {args.store}: {exc}",
                    "give --store sqlite:///FILE, postgresql://... or a sqlite3 file (or none)", USAGE)
    return serving(lambda: serve(engine, host, port, tokens=tokens, public_url=args.public_url,
                                 max_body=args.max_body, allowed_hosts=args.allow_host,
                                 allowed_origins=args.allow_origin, oauth=oauth), host, port, oauth)
