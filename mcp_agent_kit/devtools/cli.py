"""devtools.cli: `mcp-agent-kit call` (one tool call from the shell) and `mcp-agent-kit list` (what a server offers).

`call SERVER TOOL [NAME=VALUE ...]` or `call TOOL [NAME=VALUE ...] -- CMD ARGS...` prints the
structured result as JSON (else the text content) and exits 0; an `isError` result prints its
text on stderr and exits 1. The server's elicitation is asked on the terminal when stdin is one,
declined otherwise. `list SERVER` / `list -- CMD ARGS...` prints the tools (name, description,
parameters), resources, resource templates and prompts for a person; `--json` the raw lists.
Rules: argument handling and output only; the talking is client/'s, the target and connection
devtools.targets', the arguments devtools.arguments'. A protocol error is one stderr line, exit 1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.cli_common import FAILED, OK, PROG, USAGE, CliError, Parser, prog
from mcp_agent_kit.devtools.targets import SERVER_HELP, Target, add_connection_options, connect, resolve, split_command


def call_parser() -> Parser:
    name = prog("call")
    parser = Parser(
        prog=name,
        usage=f"{name} [options] SERVER TOOL [NAME=VALUE ...]\n"
              f"       {name} [options] TOOL [NAME=VALUE ...] -- CMD [ARGS ...]",
        description="Call one tool of an MCP server and print the result: the structured result as JSON, else "
                    "the text. A VALUE that parses as JSON is that JSON, anything else a string. Exit 0, or 1 "
                    "when the tool reports an error (its text on stderr).",
    )
    parser.add_argument("words", nargs="*", metavar="SERVER TOOL [NAME=VALUE ...]",
                        help=f"SERVER: {SERVER_HELP}; TOOL: the tool's name; NAME=VALUE: one argument each")
    parser.add_argument("--args", metavar="JSON", help="all the arguments as one JSON object (NAME=VALUE words "
                                                       "are laid over it)")
    add_connection_options(parser)
    return parser


def list_parser() -> Parser:
    name = prog("list")
    parser = Parser(prog=name, usage=f"{name} [options] SERVER\n       {name} [options] -- CMD [ARGS ...]",
                    description="List what an MCP server offers: tools (name, description, parameters), "
                                "resources, resource templates and prompts.")
    parser.add_argument("server", nargs="?", metavar="SERVER", help=SERVER_HELP)
    parser.add_argument("--json", action="store_true",
                        help="print the raw lists as one JSON object (tools, resources, resourceTemplates, prompts)")
    add_connection_options(parser)
    return parser


def _list_hint(target: Target) -> str:
    where = f"-- {target.spec}" if target.kind == "command" else target.given
    return f"'{PROG} list {where}'"


def talking(target: Target, action: Callable[[], int]) -> int:
    """Run `action`; a protocol failure on the way is one CliError line (exit 1)."""
    from mcp_agent_kit.client.channel import PeerError
    from mcp_agent_kit.client.inputs import ClientError
    from mcp_agent_kit.wire.jsonrpc import RpcError

    try:
        return action()
    except RpcError as exc:
        data = f" {json.dumps(exc.data)[:300]}" if exc.data is not None else ""
        raise CliError(f"{target.given} answered with error {exc.code}: {exc.message}{data}",
                       f"check the arguments against {_list_hint(target)}") from None
    except (PeerError, ClientError) as exc:
        raise CliError(f"talking to {target.given} failed: {exc}", "check that the server keeps running") from None


# ---- call -------------------------------------------------------------------------------------------------
def _media(block: dict[str, Any]) -> str:
    return f"[{block.get('type')} {block.get('mimeType', '')}, {len(str(block.get('data', '')))} base64 characters]"


def _resource(block: dict[str, Any]) -> str:
    found = block.get("resource")
    resource: dict[str, Any] = found if isinstance(found, dict) else {}
    return str(resource["text"]) if "text" in resource else f"[resource {resource.get('uri', '')}]"


def _other(block: dict[str, Any]) -> str:
    return json.dumps(block, ensure_ascii=False)


BLOCKS: dict[str, Callable[[dict[str, Any]], str]] = {
    "text": lambda block: str(block.get("text", "")),
    "image": _media,
    "audio": _media,
    "resource": _resource,
    "resource_link": lambda block: f"[resource link {block.get('uri', '')}]",
}


def content_text(content: Any) -> str:
    """The text of a result's content blocks; other blocks as one bracketed line each."""
    blocks = [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    return "\n".join(BLOCKS.get(str(block.get("type")), _other)(block) for block in blocks)


def print_result(result: dict[str, Any]) -> int:
    """Print a CallToolResult: isError -> its text on stderr (exit 1); else structured JSON, else text."""
    text = content_text(result.get("content"))
    if result.get("isError"):
        print(text or "the tool reported an error without a message", file=sys.stderr)
        return FAILED
    if result.get("structuredContent") is not None:
        print(json.dumps(result["structuredContent"], indent=2, ensure_ascii=False))
    elif text:
        print(text)
    return OK


def main_call(argv: list[str]) -> int:
    from mcp_agent_kit.devtools.arguments import arguments, parse_args_json, split_pairs
    from mcp_agent_kit.devtools.terminal import elicitation_answerer

    ours, command = split_command(argv)
    args = call_parser().parse_intermixed_args(ours)
    words = list(args.words)
    target = resolve(None if command is not None else (words.pop(0) if words else None), command)
    if not words:
        raise CliError("no tool named", f"give the tool's name after the server; {_list_hint(target)} lists them",
                       USAGE)
    name, pairs, base = words[0], split_pairs(words[1:]), parse_args_json(args.args)
    client = connect(target, args, elicitation_answerer())

    def call() -> int:
        import difflib

        tools = {tool["name"]: tool for tool in client.list_tools()}
        if name not in tools:
            close = difflib.get_close_matches(name, tools, n=1)
            fix = f"did you mean {close[0]!r}?" if close else f"{_list_hint(target)} lists its tools"
            raise CliError(f"{target.given} has no tool {name!r}", fix, USAGE)
        return print_result(client.call_tool(name, arguments(pairs, base, tools[name].get("inputSchema"))))

    try:
        return talking(target, call)
    finally:
        client.close()


# ---- list -------------------------------------------------------------------------------------------------
def _heading(client: Any) -> str:
    verdict = client.verdict
    info = verdict.server_info or {}
    name = " ".join(str(part) for part in (info.get("name"), info.get("version")) if part) or "(unnamed server)"
    return f"{name} — MCP {verdict.version} ({verdict.era} era)"


def main_list(argv: list[str]) -> int:
    from mcp_agent_kit.devtools.listing import gather, render

    ours, command = split_command(argv)
    args = list_parser().parse_args(ours)
    target = resolve(args.server, command)
    client = connect(target, args)

    def show() -> int:
        found = gather(client)
        print(json.dumps(found, indent=2, ensure_ascii=False) if args.json else f"{_heading(client)}\n{render(found)}")
        return OK

    try:
        return talking(target, show)
    finally:
        client.close()
