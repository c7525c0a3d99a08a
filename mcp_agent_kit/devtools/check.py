"""devtools.check: `mcp-agent-kit check SERVER` — the tool design rules of validate.py for any server.

A server file or module is loaded in-process and every tool checked with the rules a generated
project's validate.py applies (scaffold.checks.check_design_rules: the name, the "Use when X. Do
not use for Y." description, the readOnly/destructive annotations, a compiling object schema,
and the function's signature against its inputSchema). A URL or `-- CMD ARGS...` is asked for
its tools over MCP and checked by the same rules, less the signature (there is no function to
read). One ✓ or ✗ line per tool; exit 1 when any tool breaks a rule. Rules: a front door over
scaffold.checks (the rules live there, once); the user's import errors are one stderr line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_agent_kit.cli_common import FAILED, OK, USAGE, CliError, Parser, prog
from mcp_agent_kit.devtools.targets import SERVER_HELP, Target, add_connection_options, connect, resolve, split_command

Finding = tuple[bool, str]


def parser() -> Parser:
    name = prog("check")
    top = Parser(prog=name, usage=f"{name} [options] SERVER\n       {name} [options] -- CMD [ARGS ...]",
                 description="Check every tool of an MCP server against the design rules of validate.py "
                             "(description pattern, annotations, schema, and for a server file the "
                             "function's signature against its inputSchema).")
    top.add_argument("server", nargs="?", metavar="SERVER", help=SERVER_HELP)
    top.add_argument("--json", action="store_true", help="print the findings as JSON")
    add_connection_options(top)
    return top


def local_findings(target: Target) -> list[Finding]:
    """The design-rule findings of a kit server loaded in-process (every rule, the signature's too)."""
    from mcp_agent_kit.loader import TargetError, is_file_target, split_target
    from mcp_agent_kit.scaffold.checks import Project, check_design_rules, import_failure

    module_part = split_target(target.spec)[0]
    is_file = is_file_target(module_part)
    root = Path(module_part).parent if is_file else Path.cwd()  # where the user's code is, for file:line
    name = Path(module_part).stem if is_file else module_part.rpartition(".")[2]
    try:
        project = Project(target.spec, name, root)
    except TargetError:
        raise
    except Exception as exc:  # the user's module raised while importing: one line, never a traceback
        raise CliError(f"{target.given} failed to import: {import_failure(exc, root)}", "fix the server file") from None
    if not callable(getattr(project.server, "get_tool", None)) or not callable(getattr(project.server, "handle", None)):
        raise CliError(f"{target.given} is not an mcp_agent_kit Server (got {type(project.server).__name__})",
                       "point SERVER at a Server object (file.py:obj)", USAGE)
    try:
        return check_design_rules(project)
    except Exception as exc:  # as validate.py: a check that breaks is a failed check, never a crash
        return [(False, f"{type(exc).__name__}: {exc}")]


def remote_findings(target: Target, args: Any) -> list[Finding]:
    """The design-rule findings of a server reached over MCP (no signature rule: no function to read)."""
    from mcp_agent_kit.devtools.cli import talking
    from mcp_agent_kit.scaffold.checks import tool_rule_violations

    client = connect(target, args)
    found: list[Finding] = []

    def check() -> int:
        tools = client.list_tools()
        if not tools:
            found.append((False, "the server has no tools"))
        for tool in tools:
            problems = tool_rule_violations(tool)
            detail = "; ".join(problems) or "follows the design rules"
            found.append((not problems, f"tool {tool.get('name')!r}: {detail}"))
        return OK

    try:
        talking(target, check)
    finally:
        client.close()
    return found


def main(argv: list[str]) -> int:
    ours, command = split_command(argv)
    args = parser().parse_args(ours)
    target = resolve(args.server, command)
    findings = local_findings(target) if target.kind == "kit" else remote_findings(target, args)
    ok = all(passed for passed, _ in findings)
    if args.json:
        print(json.dumps({"ok": ok, "findings": [{"ok": passed, "detail": detail} for passed, detail in findings]},
                         indent=2, ensure_ascii=False))
    else:
        for passed, detail in findings:
            print(f"{'✓' if passed else '✗'} {detail}")
    return OK if ok else FAILED
