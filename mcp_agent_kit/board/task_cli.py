"""board.task_cli: `mcp-agent-kit task ...` — a board's tasks from the shell, through the board's MCP endpoint.

`task new PROMPT [--agent A] [--priority P] [--after ID ...] [--title T] [--base REF] [--hold]`, `list
[--state S] [--agent A]`, `show ID`, `watch ID`, `answer ID ANSWER`, `prompt ID TEXT`, `release ID`,
`cancel ID`, `diff ID [--stat]`, `accept ID [--merge]`, `discard ID`; each takes `--json` (the tool's
structuredContent), `--board URL` (default $MCP_AGENT_KIT_BOARD, else board.cli's default address) and
`--token` (default $MCP_AGENT_KIT_TOKEN). The board is reached with the kit's own MCP client and its
tools (board.mcp_tools) are called by name. `watch` prints the live transcript by long-polling
`task_events` (`wait`), and on a terminal asks the task's questions and answers them; it ends when
the task stops moving (review, done, discarded, failed, cancelled). Exit codes: 0 done, 1 the board
refused (its message on stderr as one line) or could not be reached, 2 a usage mistake.
Rules: argument handling and output only; the words are board.render's.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from mcp_agent_kit.board import render
from mcp_agent_kit.board.cli import DEFAULT_URL, TOKEN_ENV
from mcp_agent_kit.board.states import NEEDS_INPUT, STATES
from mcp_agent_kit.board.task_fields import PRIORITIES
from mcp_agent_kit.cli_common import FAILED, OK, PROG, USAGE, CliError, Parser, prog

BOARD_ENV = "MCP_AGENT_KIT_BOARD"
WAIT_S = 20.0  # each task_events long-poll of `watch`
SETTLED = frozenset(set(STATES) - {"held", "queued", "running", "needs_input"})
Command = Callable[[Any, Any], int]


def _common(sub: Any) -> None:
    sub.add_argument("--board", metavar="URL",
                     help=f"the board's MCP endpoint (default ${BOARD_ENV}, else {DEFAULT_URL})")
    sub.add_argument("--token", metavar="TOKEN", help=f"a bearer token for the board (default ${TOKEN_ENV})")
    sub.add_argument("--timeout", type=float, default=60.0, metavar="S",
                     help="seconds to wait for each answer of the board (default 60)")
    sub.add_argument("--json", action="store_true", help="print the board's answer as JSON")


def _task_id(sub: Any) -> None:
    sub.add_argument("id", metavar="ID", help="the task's id (see 'task list')")


def parser() -> Parser:
    top = Parser(prog=prog("task"), description="Create, follow, answer and review the tasks of a board "
                                                "('mcp-agent-kit board' serves one).")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    new = commands.add_parser("new", prog=prog("task new"), help="create a task (queued, or held with --hold)")
    new.add_argument("prompt", metavar="PROMPT", help="what the agent should do")
    new.add_argument("--agent", metavar="A", help="the agent id (default: the board's default agent)")
    new.add_argument("--priority", choices=PRIORITIES, help="urgent, high, normal (default) or low")
    new.add_argument("--after", action="append", default=[], metavar="ID",
                     help="start only after this task is done (repeatable)")
    new.add_argument("--title", metavar="T", help="a short title (default: the prompt's first line)")
    new.add_argument("--base", metavar="REF", help="the git revision to branch from (default: the current HEAD)")
    new.add_argument("--hold", action="store_true", help="keep it held until 'task release ID'")
    listing = commands.add_parser("list", prog=prog("task list"), help="the tasks in a table")
    listing.add_argument("--state", choices=STATES, help="only tasks in this state")
    listing.add_argument("--agent", metavar="A", help="only tasks of this agent")
    words = {"show": "a task's fields", "watch": "the live transcript; questions answered on a terminal",
             "release": "queue a held task", "cancel": "stop a task (its worktree is kept)",
             "discard": "remove a task's worktree and branch", "diff": "print a task's patch against its base",
             "accept": "commit a task's changes on its branch (--merge: into the base too)",
             "answer": "answer a task's question", "prompt": "send a follow-up prompt"}
    subs = {"new": new, "list": listing}
    for name, what in words.items():
        subs[name] = commands.add_parser(name, prog=prog(f"task {name}"), help=what)
        _task_id(subs[name])
    subs["answer"].add_argument("answer", metavar="ANSWER",
                                help="an option id, or a JSON object matching the question's schema")
    subs["prompt"].add_argument("text", metavar="TEXT", help="what the agent should do next")
    subs["accept"].add_argument("--merge", action="store_true", help="also merge the branch into the base branch")
    subs["diff"].add_argument("--stat", action="store_true", help="the changed files with line counts, no patch")
    for sub in subs.values():
        _common(sub)
    return top


# ---- talking to the board ----------------------------------------------------------------------------
class Refused(Exception):
    """The board answered with an isError result: its message."""


class BoardClient:
    """The board's MCP endpoint through the kit's client: `call(tool, arguments)` -> structuredContent."""

    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        from mcp_agent_kit.client.client import Client, Unavailable

        if not url.startswith(("http://", "https://")):
            raise CliError(f"--board {url!r} is not an http(s) URL", f"give e.g. {DEFAULT_URL}", USAGE)
        if timeout <= 0:
            raise CliError(f"--timeout must be positive, got {timeout:g}", "give a number of seconds", USAGE)
        self.url = url
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = Client.http(url, headers, timeout=timeout, request_timeout=max(timeout, WAIT_S + 30.0))
        try:
            self.client.connect()
        except Unavailable as exc:
            self.client.close()
            if exc.verdict.auth:
                raise CliError(f"the board at {url} wants a token", f"give --token or set ${TOKEN_ENV}") from None
            raise CliError(f"cannot reach the board at {url}: {exc.verdict.reason or 'no answer'}",
                           f"start it with '{PROG} board', or give --board URL (or ${BOARD_ENV})") from None

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        from mcp_agent_kit.client.channel import PeerError
        from mcp_agent_kit.client.inputs import ClientError
        from mcp_agent_kit.wire.jsonrpc import RpcError

        try:
            result = self.client.call_tool(tool, arguments)
        except RpcError as exc:
            raise CliError(f"the board at {self.url} answered {tool} with error {exc.code}: {exc.message}",
                           "check that it is a board ('mcp-agent-kit board')") from None
        except (PeerError, ClientError) as exc:
            raise CliError(f"talking to the board at {self.url} failed: {exc}",
                           "check that the board keeps running") from None
        if result.get("isError"):
            said = " ".join(str(block.get("text", "")) for block in result.get("content") or ()
                            if isinstance(block, dict))
            raise Refused(" ".join(said.split()) or f"the board refused {tool}")
        body = result.get("structuredContent")
        if not isinstance(body, dict):
            raise CliError(f"the board at {self.url} gave {tool} no structured result",
                           "check that it is a board ('mcp-agent-kit board')")
        return body

    def close(self) -> None:
        self.client.close()


def _print_json(body: Any) -> None:
    print(json.dumps(body, indent=2, ensure_ascii=False))


def _show_task(args: Any, task: Mapping[str, Any]) -> int:
    if args.json:
        _print_json(task)
    else:
        print(render.summary(task))
    return OK


# ---- the commands -------------------------------------------------------------------------------------
def _new(board: BoardClient, args: Any) -> int:
    arguments: dict[str, Any] = {"prompt": args.prompt}
    given = {"title": args.title, "agent": args.agent, "priority": args.priority, "base": args.base,
             "blockedBy": args.after or None, "hold": args.hold or None}
    arguments.update({key: value for key, value in given.items() if value is not None})
    return _show_task(args, board.call("create_task", arguments))


def _list(board: BoardClient, args: Any) -> int:
    filters = {key: value for key, value in (("state", args.state), ("agent", args.agent)) if value}
    body = board.call("list_tasks", filters)
    if args.json:
        _print_json(body)
    else:
        print(render.table(body["tasks"]) if body["tasks"] else "no tasks")
    return OK


def _show(board: BoardClient, args: Any) -> int:
    task = board.call("get_task", {"task_id": args.id})
    if args.json:
        _print_json(task)
    else:
        print(render.details(task))
    return OK


def _answer_value(text: str) -> str | dict[str, Any]:
    if not text.lstrip().startswith("{"):
        return text
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"ANSWER looks like JSON but is not: {exc}", "give an option id, or a JSON object", USAGE) \
            from None
    if not isinstance(value, dict):
        raise CliError("ANSWER must be an option id or a JSON object", "give an option id, or a JSON object", USAGE)
    return value


def _answer(board: BoardClient, args: Any) -> int:
    answer = _answer_value(args.answer)
    return _show_task(args, board.call("answer_task", {"task_id": args.id, "answer": answer}))


def _diff(board: BoardClient, args: Any) -> int:
    body = board.call("task_diff", {"task_id": args.id})
    if args.json:
        _print_json(body)
    elif args.stat:
        print(render.diff_summary(body))
    else:
        sys.stdout.write(str(body.get("patch") or ""))
    return OK


def _acting(tool: str, **extra: Callable[[Any], Any]) -> Command:
    def command(board: BoardClient, args: Any) -> int:
        arguments = {"task_id": args.id, **{name: get(args) for name, get in extra.items()}}
        return _show_task(args, board.call(tool, arguments))
    return command


COMMANDS: dict[str, Command] = {
    "new": _new, "list": _list, "show": _show, "answer": _answer, "diff": _diff,
    "prompt": _acting("prompt_task", message=lambda args: args.text),
    "release": _acting("release_task"), "cancel": _acting("cancel_task"), "discard": _acting("discard_task"),
    "accept": _acting("accept_task", merge=lambda args: bool(args.merge)),
}


# ---- watch ------------------------------------------------------------------------------------------------
def _ask(board: BoardClient, task_id: str, question: Mapping[str, Any]) -> bool:
    """Ask a question on the terminal until the board takes an answer; False when the person left (EOF)."""
    options = [option for option in question.get("options") or () if isinstance(option, Mapping)]
    print(f"\n? {render.question_text(question)}", flush=True)
    while True:
        try:
            line = input("answer (an option id or its number): " if options else "answer (JSON): ").strip()
        except EOFError:
            print(f"\n(not answered; answer later with '{PROG} task answer {task_id} ANSWER')", flush=True)
            return False
        if line.isdigit() and options and 1 <= int(line) <= len(options):
            line = str(options[int(line) - 1].get("id"))
        try:
            answer = _answer_value(line)
            board.call("answer_task", {"task_id": task_id, "answer": answer})
            return True
        except (Refused, CliError) as exc:
            print(f"  not taken: {exc.problem if isinstance(exc, CliError) else exc}", flush=True)


def _watch(board: BoardClient, args: Any) -> int:
    interactive = sys.stdin.isatty() and not args.json
    task = board.call("get_task", {"task_id": args.id})
    if not args.json:
        print(render.summary(task), flush=True)
    after, asked, asking, asked_at, open_line = 0, None, interactive, 0, False
    while True:
        page = board.call("task_events", {"task_id": args.id, "after": after, "wait": WAIT_S})
        open_line = _print_events(page["events"], args.json, open_line)
        after = page["next"]
        asked_at = max([asked_at, *(int(e.get("seq", 0)) for e in page["events"] if render.kind(e) == "question")])
        task = board.call("get_task", {"task_id": args.id})
        question = task.get("question")
        key = json.dumps([asked_at, question], sort_keys=True)  # the same question asked again is asked again
        if task["state"] == NEEDS_INPUT and isinstance(question, Mapping) and key != asked:
            asked, open_line = key, _end_line(open_line)
            if asking:
                asking = _ask(board, args.id, question)
            elif not args.json:
                print(f"\n(waiting for an answer: '{PROG} task answer {args.id} ANSWER')", flush=True)
        if task["state"] in SETTLED:
            rest = board.call("task_events", {"task_id": args.id, "after": after})  # what came with the move
            _end_line(_print_events(rest["events"], args.json, open_line))
            if not args.json:
                print(f"\n{render.summary(task)}", flush=True)
            return OK


def _print_events(events: list[dict[str, Any]], as_json: bool, open_line: bool = False) -> bool:
    """Print a page of events (as JSON lines, or as text following on from the last page: `open_line` says that
    ended inside a message's line); whether a line is open now."""
    for event in events:
        if as_json:
            print(json.dumps(event, ensure_ascii=False), flush=True)
        else:
            text, open_line = render.piece(event, open_line)
            sys.stdout.write(text)
    sys.stdout.flush()
    return open_line


def _end_line(open_line: bool) -> bool:
    """End the line a message delta left open (before a line of the watch's own); False."""
    if open_line:
        print(flush=True)
    return False


COMMANDS["watch"] = _watch


def main(argv: list[str]) -> int:
    from mcp_agent_kit.cli_common import fail

    args = parser().parse_args(argv)
    url = args.board or os.environ.get(BOARD_ENV) or DEFAULT_URL
    token = args.token or os.environ.get(TOKEN_ENV) or None
    board = BoardClient(url, token, args.timeout)
    try:
        return COMMANDS[args.command](board, args)
    except Refused as exc:
        return fail(str(exc), None, FAILED)
    finally:
        board.close()
