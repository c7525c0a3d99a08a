"""acp.client.cli: `mcp-agent-kit acp probe|prompt|chat [OPTIONS] -- CMD [ARGS...]` (or `--url URL`) — drive
an ACP agent from a terminal.

`probe` spawns the agent, sends `initialize` and prints one JSON object; `prompt` runs one turn
(text streamed to stdout, tool calls and plans to stderr, or one JSON object with `--json`);
`chat` runs turns read from stdin. Exit codes: 0 on `end_turn` (probe: answered), 3 when the turn
was cancelled or refused, 1 on any error (one stderr line naming it), 2 on a usage mistake. The
first SIGINT sends `session/cancel`, a second one stops the agent. Permission questions follow
`--approve all|reads|none`; without it an interactive terminal is asked and a non-interactive run
denies. The agent starts in `--cwd`, but a relative path in its command (`python agent.py`) means
the file here. Without `--`, a trailing command we do not know is the agent's (as `probe CMD`);
anything else unknown is one line naming `--`. `--url ws://HOST/acp` (or wss://, http://, https://) reaches a
remote agent over ACP's network transport instead of a command, with `--header NAME:VALUE` (repeatable) and
`--token T` (a bearer token) for its auth, never printed; a refused connection, a 401/403, a 404 path or a
server that speaks neither profile is one line (naming --token/--header where credentials are wanted).
Rules: argument parsing and printing only; the work is acp.client's.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.client import AcpAgent, ClientOptions, Timeouts
from mcp_agent_kit.acp.client.errors import AcpError, NotSupported
from mcp_agent_kit.acp.client.permissions import POLICIES, Ask, DenyAll, PermissionOption, PermissionRequest, Policy
from mcp_agent_kit.acp.client.session import Session, TurnResult
from mcp_agent_kit.cli_common import FAILED, OK, USAGE, CliError, Parser, fail, prog
from mcp_agent_kit.process import anchored
from mcp_agent_kit.wire import acp as wire

CANCELLED_OR_REFUSED = 3
STOP_EXIT = {wire.END_TURN: OK, wire.CANCELLED: CANCELLED_OR_REFUSED, wire.REFUSAL: CANCELLED_OR_REFUSED}
DEFAULT_TIMEOUT = 600.0
AFTER = "-- CMD [ARGS...]"
WHERE = "(--url URL | -- CMD [ARGS...])"


def _common(parser: Parser, session: bool) -> None:
    parser.add_argument("--url", metavar="URL",
                        help="a remote agent's ACP endpoint (ws://, wss://, http://, https://HOST[:PORT]/acp) "
                             "instead of a command")
    parser.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                        help="send this header to the remote agent (--url; repeatable)")
    parser.add_argument("--token", metavar="TOKEN", help="a bearer token for the remote agent (--url)")
    parser.add_argument("--env", action="append", default=[], metavar="K=V",
                        help="set a variable for the agent (repeatable); the agent otherwise gets only a minimal "
                             "environment (HOME, PATH, USER, LANG, ...)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"bound on each wait in seconds (a turn, a start-up; default {DEFAULT_TIMEOUT:g})")
    if not session:
        return
    parser.add_argument("--cwd", default=".", metavar="DIR",
                        help="the session's working directory; the agent's file writes are confined to it")
    parser.add_argument("--approve", choices=sorted(POLICIES), metavar="all|reads|none",
                        help="answer permission questions: all = allow, reads = allow read-only tool kinds only, "
                             "none = reject (default: ask on a terminal, deny otherwise)")
    parser.add_argument("--auth", metavar="METHOD_ID", help="authenticate with this method of the agent's authMethods")
    parser.add_argument("--session-id", metavar="ID",
                        help="continue this session (session/load, or session/resume) instead of a new one")
    parser.add_argument("--terminal", action="store_true", help="let the agent run commands (terminal/*) in --cwd")
    parser.add_argument("--mode", metavar="ID",
                        help="switch the session to this mode first (its mode config option, else session/set_mode)")
    parser.add_argument("--config", action="append", default=[], metavar="ID=VALUE",
                        help="set a session config option first (session/set_config_option; repeatable)")


def parser() -> Parser:
    top = Parser(prog=prog("acp"), description="Drive an Agent Client Protocol (v1) agent: give its command after --.")
    commands = top.add_subparsers(dest="command", required=True, metavar="probe|prompt|chat")
    probe = commands.add_parser("probe", prog=prog("acp probe"), help="spawn the agent, initialize, print its answer",
                                usage=f"%(prog)s [--env K=V ...] [--timeout S] {WHERE}")
    _common(probe, session=False)
    turn = commands.add_parser("prompt", prog=prog("acp prompt"), help="run one turn and print what the agent said",
                               usage=f"%(prog)s [OPTIONS] TEXT {WHERE}")
    _common(turn, session=True)
    turn.add_argument("--json", action="store_true",
                      help="print one JSON object (sessionId, stopReason, text, toolCalls, permissions, "
                           "files_written) instead of streaming")
    turn.add_argument("text", metavar="TEXT", help="the prompt")
    chat = commands.add_parser("chat", prog=prog("acp chat"), help="an interactive multi-turn session",
                               usage=f"%(prog)s [OPTIONS] {WHERE}")
    _common(chat, session=True)
    return top


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """(our arguments, the agent's command): everything after the first `--` is the agent's."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1:]


def parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CliError(f"--env {pair!r} is not K=V", "write it as --env NAME=value", USAGE)
        env[name] = value
    return env


def one_line(text: str) -> str:
    return " | ".join(part.strip() for part in str(text).splitlines() if part.strip())


class TerminalAsk:
    """Ask each permission question on the terminal: the options by number, by kind."""

    def __init__(self, out: TextIO, read: Callable[[], str]) -> None:
        self.out, self.read, self.lock = out, read, threading.Lock()

    def __call__(self, request: PermissionRequest) -> PermissionOption | None:
        with self.lock:
            print(f"\n[permission] {request.title or request.tool_call_id} ({request.tool_kind or 'unknown kind'})",
                  file=self.out)
            for number, option in enumerate(request.options, 1):
                print(f"  {number}) {option.name} [{option.kind}]", file=self.out)
            print("choose a number (anything else cancels): ", end="", file=self.out, flush=True)
            answer = self.read().strip()
        if answer.isdigit() and 1 <= int(answer) <= len(request.options):
            return request.options[int(answer) - 1]
        return None


def choose_policy(approve: str | None) -> Policy:
    if approve:
        return POLICIES[approve]()
    if sys.stdin.isatty() and sys.stderr.isatty():
        return Ask(TerminalAsk(sys.stderr, sys.stdin.readline))
    return DenyAll()


def spawn(args: Any, command: list[str], session: bool) -> AcpAgent:
    timeout = float(args.timeout)
    if timeout <= 0:
        raise CliError(f"--timeout must be positive, got {timeout:g}", "give seconds, e.g. --timeout 120", USAGE)
    options = ClientOptions(terminal=bool(getattr(args, "terminal", False)))
    timeouts = Timeouts(initialize=min(60.0, timeout), request=timeout, turn=timeout)
    policy = choose_policy(args.approve) if session else DenyAll()
    cwd = getattr(args, "cwd", None)
    log = lambda message: print(f"[acp] {one_line(message)}", file=sys.stderr)  # noqa: E731
    if args.url:
        agent = AcpAgent([], url=args.url, headers=remote_headers(args), cwd=cwd, options=options, policy=policy,
                         timeouts=timeouts, log=log)
    else:
        agent = AcpAgent(anchored(command, cwd), env=parse_env(args.env), cwd=cwd, options=options,
                         policy=policy, timeouts=timeouts, log=log)
    agent.start()
    return agent


def remote_headers(args: Any) -> dict[str, str]:
    from mcp_agent_kit.acp.client.network import auth_headers

    if args.env:
        raise CliError("--env sets a spawned agent's environment; a remote agent (--url) has its own",
                       "leave out --env", USAGE)
    try:
        return auth_headers(args.header, args.token)
    except ValueError as exc:
        raise CliError(str(exc), "write it as --header NAME:VALUE", USAGE) from None


REMOTE_FIXES = {401: "pass --token TOKEN or --header NAME:VALUE with the server's credentials",
                403: "check --token/--header (and that this server lets this client in)",
                404: "check the URL's path (ACP servers usually serve /acp)"}


def configure(session: Session, args: Any) -> None:
    """--mode and --config, applied before the first prompt; an option the agent lacks is one line."""
    wanted = [tuple(pair.split("=", 1)) for pair in args.config]
    bad = [pair for pair, got in zip(args.config, wanted, strict=True) if len(got) != 2 or not got[0]]
    if bad:
        raise CliError(f"--config wants ID=VALUE, got {bad[0]!r}", "e.g. --config model=fast", USAGE)
    if args.mode:
        mode_option = next((o.get("id") for o in session.config_options or []
                            if isinstance(o, dict) and o.get("category") == "mode"), None)
        wanted.insert(0, (str(mode_option or "mode"), args.mode))
    try:
        for config_id, value in wanted:
            session.set_config_option(config_id, value)
    except NotSupported as exc:
        raise CliError(one_line(str(exc)), "leave out --mode/--config for this agent") from None


def open_session(agent: AcpAgent, args: Any) -> Session:
    session = _open_session(agent, args)
    configure(session, args)
    return session


def _open_session(agent: AcpAgent, args: Any) -> Session:
    info = agent.initialize()
    if args.auth:
        agent.authenticate(args.auth)
    try:
        if not args.session_id:
            return agent.new_session(args.cwd)
        if agent.capability("loadSession") is True:
            return agent.load_session(args.session_id, args.cwd)
        return agent.resume_session(args.session_id, args.cwd)
    except NotSupported as exc:
        raise CliError(f"cannot continue session {args.session_id}: {exc}", "leave out --session-id") from None
    except AcpError as exc:
        if exc.code == wire.AUTH_REQUIRED and not args.auth:
            offered = [m.get("id") for m in info.auth_methods if isinstance(m, dict)]
            raise CliError(one_line(str(exc)), f"pass --auth METHOD_ID (the agent offers {offered or 'none'})",
                           FAILED) from None
        raise


@contextmanager
def cancel_on_sigint(session: Session) -> Iterator[None]:
    """The first SIGINT cancels the turn, the second stops the agent (both from a thread, never the handler)."""
    count = [0]

    def handler(signum: int, frame: object) -> None:
        count[0] += 1
        action = session.cancel if count[0] == 1 else (lambda: session.agent.stop_process("interrupted twice"))
        print("\n[acp] " + ("cancelling the turn (Ctrl-C again stops the agent)" if count[0] == 1 else "stopping"),
              file=sys.stderr)
        threading.Thread(target=action, daemon=True).start()

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def show(session: Session, event: ev.Event, stream: bool) -> None:
    """Print one event of a streamed turn: message text to stdout, the rest to stderr."""
    if isinstance(event, ev.AgentMessageChunk):
        if stream:
            sys.stdout.write(event.text)
            sys.stdout.flush()
        return
    if not stream:
        return
    if isinstance(event, ev.ToolCall):
        fields = [value for value in (event.tool_kind, event.status) if value]
        name = event.title or session.tool_calls.get(event.tool_call_id, {}).get("title") or event.tool_call_id
        print(f"\n[tool] {name}" + (f" ({', '.join(fields)})" if fields else ""), file=sys.stderr)
    elif isinstance(event, ev.Plan):
        steps = "; ".join(f"{e.get('content')} [{e.get('status')}]" for e in event.entries if isinstance(e, dict))
        print(f"\n[plan] {steps}", file=sys.stderr)
    elif isinstance(event, ev.PermissionDecision):
        print(f"[permission] {event.tool_call_id}: {event.outcome} {event.option_kind or ''}".rstrip(),
              file=sys.stderr)
    elif isinstance(event, ev.FileWritten):
        print(f"[file] {'wrote' if event.error is None else 'refused'} {event.path}"
              + (f": {event.error}" if event.error else ""), file=sys.stderr)


def run_turn(session: Session, text: str, timeout: float, stream: bool) -> TurnResult:
    with cancel_on_sigint(session):
        result = session.run(text, timeout=timeout, on_event=lambda event: show(session, event, stream))
    if stream:
        print(file=sys.stdout, flush=True)
    if result.note:
        print(f"[acp] {result.note}", file=sys.stderr)
    return result


def turn_exit(result: TurnResult) -> int:
    code = STOP_EXIT.get(result.stop_reason)
    if code is None:
        return fail(f"the turn stopped early: stopReason {result.stop_reason!r}",
                    "raise the agent's limits or split the task")
    return code


def main_probe(args: Any, command: list[str]) -> int:
    agent = spawn(args, command, session=False)
    try:
        info = agent.initialize()
    finally:
        agent.close()
    print(json.dumps(info.to_json(), indent=2))
    return OK


def main_prompt(args: Any, command: list[str]) -> int:
    agent = spawn(args, command, session=True)
    try:
        session = open_session(agent, args)
        result = run_turn(session, args.text, float(args.timeout), stream=not args.json)
    finally:
        agent.close()
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(f"[session] {result.session_id} {result.stop_reason}", file=sys.stderr)
    return turn_exit(result)


def main_chat(args: Any, command: list[str]) -> int:
    agent = spawn(args, command, session=True)
    code = OK
    try:
        session = open_session(agent, args)
        print(f"[session] {session.id} — type a message, an empty line or Ctrl-D ends the chat", file=sys.stderr)
        while True:
            print("> ", end="", file=sys.stderr, flush=True)
            line = sys.stdin.readline()
            if not line.strip():
                break
            result = run_turn(session, line.strip(), float(args.timeout), stream=True)
            code = STOP_EXIT.get(result.stop_reason, FAILED)
            print(f"[turn] {result.stop_reason}", file=sys.stderr)
    finally:
        agent.close()
    return code


MAINS = {"probe": main_probe, "prompt": main_prompt, "chat": main_chat}


def parse(argv: list[str]) -> tuple[Any, list[str]]:
    """(our options, the agent's command). Without `--`, a trailing command we do not know (`acp
    prompt "hi" gemini --acp`) is taken as the agent's, as `probe CMD ARGS` does; anything else we
    do not know is one line saying that the command goes after `--`."""
    ours, command = split_command(argv)
    top = parser()
    if "--" in argv:
        return top.parse_args(ours), command
    args, unknown = top.parse_known_args(ours)
    if unknown and not unknown[0].startswith("-") and ours[len(ours) - len(unknown):] == unknown:
        return args, unknown
    if unknown:
        text = "TEXT " if args.command == "prompt" else ""
        raise CliError(f"unrecognized arguments: {' '.join(unknown)}",
                       f"put the agent's command after --: '{prog('acp')} {args.command} [OPTIONS] {text}{AFTER}'",
                       USAGE)
    return args, []


def main(argv: list[str]) -> int:
    args, command = parse(argv)
    if args.url and command:
        return fail("give either --url or an agent command, not both", "drop one of them", USAGE)
    if not args.url and (args.header or args.token):
        return fail("--header and --token are for a remote agent", "give its --url", USAGE)
    if not command and not args.url:
        return fail("no agent command given", f"put it after --, e.g. '{prog('acp')} {args.command} -- gemini --acp'"
                    " (or give a remote agent's --url)", USAGE)
    try:
        return MAINS[args.command](args, command)
    except AcpError as exc:
        return fail(one_line(str(exc)), REMOTE_FIXES.get(getattr(exc, "status", None) or 0), FAILED)
