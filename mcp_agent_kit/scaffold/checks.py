"""checks: the compliance checks behind a generated project's validate.py.

Each check is a row in a table: a name and a function returning (ok, detail) pairs, one line
per finding. Rules: checks read the project and talk to its server (in-process for the core
checks, as subprocesses for the era probe and the project's own tests); only `--fix` writes,
and only the generated skill and plugin directories, never through a symlinked directory leading
out of the project (refused with one line before anything is written). Names are matched with
fullmatch.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_agent_kit.safefile import read_text
from mcp_agent_kit.wire import mcp

Finding = tuple[bool, str]
DESCRIPTION_FORM = re.compile(r"^Use when (?P<when>.+?)\.\s+Do not use for (?P<not>.+?)\.?$", re.DOTALL)
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
TEST_SECONDS = 300.0  # how long the project's tests may run (validate.py --tests-timeout)
META = {mcp.META_PROTOCOL_VERSION: mcp.MODERN_VERSIONS[0], mcp.META_CLIENT_CAPABILITIES: {}}
CARD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "description", "version", "supportedInterfaces", "capabilities",
                 "defaultInputModes", "defaultOutputModes", "skills"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string", "minLength": 1},
        "version": {"type": "string", "minLength": 1},
        "supportedInterfaces": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["url", "protocolBinding", "protocolVersion"],
            "properties": {"url": {"type": "string", "pattern": "^https?://"},
                           "protocolBinding": {"enum": ["JSONRPC", "HTTP+JSON", "GRPC"]},
                           "protocolVersion": {"const": "1.0"}}}},
        "capabilities": {"type": "object", "not": {"required": ["stateTransitionHistory"]}},
        "defaultInputModes": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "defaultOutputModes": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "skills": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["id", "name", "description", "tags"],
            "properties": {"id": {"type": "string", "minLength": 1}, "name": {"type": "string", "minLength": 1},
                           "description": {"type": "string", "minLength": 1},
                           "tags": {"type": "array", "minItems": 1, "items": {"type": "string"}}}}},
    },
    "not": {"anyOf": [{"required": ["kind"]}, {"required": ["url"]}, {"required": ["protocolVersion"]}]},
}


class Project:
    """What the checks look at: the server object, its package, names and project root."""

    def __init__(self, target: str, name: str, root: Path) -> None:
        from mcp_agent_kit.loader import load_target

        self.target = target
        self.module = target.partition(":")[0]
        self.name = name
        self.root = root
        self.test_seconds = TEST_SECONDS
        self.server: Any = load_target(target)

    def request(self, method: str, **params: Any) -> dict[str, Any]:
        reply = self.server.handle({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": META, **params}})
        if reply is None or "error" in reply:
            raise RuntimeError(f"{method} failed: {reply and reply.get('error')}")
        result: dict[str, Any] = reply["result"]
        return result

    def all_pages(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = None
        for _ in range(10_000):
            result = self.request(method, **({"cursor": cursor} if cursor else {}))
            items += result.get(key, [])
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        return items

    def tools(self) -> list[dict[str, Any]]:
        return self.all_pages("tools/list", "tools")


def check_discover(project: Project) -> list[Finding]:
    result = project.request("server/discover")
    versions = result.get("supportedVersions", [])
    ok = mcp.MODERN_VERSIONS[0] in versions and "tools" in result.get("capabilities", {})
    return [(ok, f"server/discover answers {versions} with capabilities {sorted(result.get('capabilities', {}))}")]


LISTS = (("tools/list", "tools", "name"), ("prompts/list", "prompts", "name"),
         ("resources/list", "resources", "uri"), ("resources/templates/list", "resourceTemplates", "uriTemplate"))


def check_deterministic(project: Project) -> list[Finding]:
    findings: list[Finding] = []
    offered = project.request("server/discover")["capabilities"]
    for method, key, field in LISTS:
        if key.replace("resourceTemplates", "resources") not in offered:
            continue
        first, second = project.all_pages(method, key), project.all_pages(method, key)
        keys = [item.get(field) for item in first]
        ok = first == second and keys == sorted(keys, key=str) and len(set(map(str, keys))) == len(keys)
        findings.append((ok, f"{method}: {len(first)} item(s), {'stable and sorted' if ok else 'NOT deterministic'}"))
    return findings


def tool_rule_violations(tool: dict[str, Any]) -> list[str]:
    """The design rules a tool breaks (empty when it follows them all)."""
    from mcp_agent_kit.core.schema import SchemaError, compile_schema

    problems = []
    if not TOOL_NAME.fullmatch(str(tool.get("name", ""))):
        problems.append("name must match ^[A-Za-z0-9_.-]{1,128}$")
    description = str(tool.get("description") or "")
    if not DESCRIPTION_FORM.fullmatch(description.strip()):
        problems.append('description must read "Use when X. Do not use for Y."')
    elif not 20 <= len(description) <= 1024:
        problems.append("description must be 20-1024 characters")
    hints = tool.get("annotations") or {}
    if "readOnlyHint" not in hints and "destructiveHint" not in hints:
        problems.append("annotations must declare readOnlyHint or destructiveHint")
    elif hints.get("readOnlyHint") is not True and hints.get("destructiveHint") is not True:
        problems.append("one of read_only or destructive must be true (a tool that neither only reads nor"
                        " destroys: read_only=False, destructive=False says nothing)")
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        problems.append('inputSchema must be an object schema (type "object")')
    else:
        try:
            compile_schema(schema)
        except SchemaError as exc:
            problems.append(f"inputSchema does not compile: {exc}")
    return problems


def signature_violations(tool: dict[str, Any], fn: Callable[..., Any], skip: frozenset[str]) -> list[str]:
    """Where the function cannot take what its inputSchema allows (or needs what it never sends)."""
    import inspect

    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        return []
    try:
        parameters = [p for p in inspect.signature(fn).parameters.values() if p.name not in skip]
    except (TypeError, ValueError):
        return []
    kinds = inspect.Parameter
    name = getattr(inspect.unwrap(fn), "__name__", "the function")
    takes_any = any(p.kind is kinds.VAR_KEYWORD for p in parameters)
    names = {p.name for p in parameters if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)}
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    required = set(schema.get("required") or [])
    problems = []
    unknown = sorted(set(properties) - names) if not takes_any else []
    if unknown:
        problems.append(f"inputSchema allows {', '.join(unknown)} but {name}() has no such parameter")
    needed = sorted(p.name for p in parameters if p.default is kinds.empty
                    and p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY) and p.name not in required)
    if needed:
        problems.append(f"{name}() needs {', '.join(needed)} but inputSchema does not require it")
    if any(p.kind is kinds.POSITIONAL_ONLY for p in parameters):
        problems.append(f"{name}() has positional-only parameters; arguments arrive by name")
    return problems


def check_design_rules(project: Project) -> list[Finding]:
    tools = project.tools()
    if not tools:
        return [(False, "the server has no tools")]
    findings: list[Finding] = []
    for tool in tools:
        problems = tool_rule_violations(tool)
        registered = project.server.get_tool(tool.get("name"))
        if registered is not None and not registered.handler.raw:  # a raw tool has no signature to check
            handler = registered.handler
            skip = frozenset({handler.context_arg}) if handler.context_arg else frozenset()
            problems += signature_violations(tool, handler.fn, skip)
        detail = "; ".join(problems) if problems else "follows the design rules"
        findings.append((not problems, f"tool {tool.get('name')!r}: {detail}"))
    return findings


def check_a2a_card(project: Project) -> list[Finding]:
    from mcp_agent_kit.a2a.card import build_card
    from mcp_agent_kit.a2a.cli import build_agent
    from mcp_agent_kit.core.schema import compile_schema

    card = build_card(build_agent(project.server), [("http://127.0.0.1:8080/", "JSONRPC")])
    problems = [v.message for v in compile_schema(CARD_SCHEMA).validate(card)]
    skills = {skill["id"] for skill in card.get("skills", [])}
    missing = sorted({tool["name"] for tool in project.tools()} - skills)
    if missing:
        problems.append(f"tools without a skill: {', '.join(missing)}")
    return [(not problems, "; ".join(problems) if problems else f"A2A v1.0 card with {len(skills)} skill(s)")]


def check_skill(project: Project) -> list[Finding]:
    from mcp_agent_kit.packaging.skill_validate import validate_skill

    skill_dir = project.root / "skills" / project.name
    if not (skill_dir / "SKILL.md").is_file():
        return [(False, f"{skill_dir.relative_to(project.root)}/SKILL.md is missing (run validate.py --fix)")]
    report = validate_skill(skill_dir, strict=True)
    findings: list[Finding] = [(False, str(f)) for f in report.findings if f.severity == "error"]
    text = read_text(skill_dir / "SKILL.md", root=project.root)
    stale = [tool["name"] for tool in project.tools() if f"`{tool['name']}`" not in text and tool["name"] not in text]
    if stale:
        findings.append((False, f"SKILL.md does not mention tool(s) {', '.join(stale)} (run validate.py --fix)"))
    return findings or [(True, f"skills/{project.name}/SKILL.md is valid (strict)")]


def check_served_skill(project: Project) -> list[Finding]:
    """The server's skills/list entry for skills/<name>/ matches the files: same set, sizes,
    digests and frontmatter (Skills over MCP, SEP-2640)."""
    from mcp_agent_kit.wire import skills

    skill_dir = project.root / "skills" / project.name
    uri = skills.skill_md_uri(project.name)
    try:
        entries = project.all_pages("skills/list", "skills")
    except RuntimeError as exc:
        return [(False, f"the server does not serve its skills over MCP: {exc}")]
    entry = next((e for e in entries if e.get("uri") == uri), None)
    if entry is None:
        return [(False, f"skills/list has no entry {uri} (serve skills/ with Server(skills=[...]))")]
    problems = skills.check_entry(entry)
    on_disk = {
        f"{skills.skill_root(uri)}/{path.relative_to(skill_dir).as_posix()}": path.read_bytes()
        for path in sorted(skill_dir.rglob("*")) if path.is_file() and ".git" not in path.parts
    }
    served = {str(r.get("uri")): r for r in skills.resource_list(entry) or []}
    for file_uri in sorted(on_disk.keys() ^ served.keys()):
        problems.append(f"{file_uri} is {'served but not on disk' if file_uri in served else 'not served'}")
    for file_uri in sorted(on_disk.keys() & served.keys()):
        data, row = on_disk[file_uri], served[file_uri]
        if (row.get("size"), row.get("digest")) != (len(data), skills.digest(data)):
            problems.append(f"{file_uri}: the served size or digest is not the file's")
    text = on_disk.get(uri, b"").decode("utf-8", "replace")
    try:
        problems += [f"frontmatter {d}" for d in skills.frontmatter_differences(text, entry.get("frontmatter") or {})]
    except skills.SkillError as exc:
        problems.append(str(exc))
    if problems:
        return [(False, problem) for problem in problems]
    return [(True, f"{uri} is served over MCP with {len(served)} file(s), sizes and digests matching the files")]


def check_plugin(project: Project) -> list[Finding]:
    from mcp_agent_kit.packaging.plugin_validate import validate_plugin

    plugin = project.root / "plugin"
    if not (plugin / "plugin.json").is_file():
        return [(False, "plugin/plugin.json is missing (run validate.py --fix)")]
    report = validate_plugin(plugin)
    skills = sorted(p.parent.name for p in (plugin / "skills").glob("*/SKILL.md"))
    if report.valid and project.name not in skills:
        return [(False, f"plugin/ does not carry the skill skills/{project.name}/ (run validate.py --fix)")]
    if report.valid:
        return [(True, f"plugin/ is a valid Agent Plugins 1.0.0 package with skill(s) {', '.join(skills)}")]
    return [(False, str(f)) for f in report.findings if f.severity == "error"] or [(False, "plugin/ is invalid")]


def _spawn(project: Project) -> list[str]:
    return [sys.executable, "-m", project.module]


def check_probe(project: Project) -> list[Finding]:
    from mcp_agent_kit.client import Client

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project.root), os.environ.get("PYTHONPATH", "")])}
    findings: list[Finding] = []
    with Client.stdio(_spawn(project)[0], _spawn(project)[1:], env=env, cwd=str(project.root), timeout=10) as client:
        verdict = client.verdict
        tools = client.list_tools()
        ok = verdict is not None and verdict.era == "modern"
        era, version = (verdict.era, verdict.version) if verdict else (None, None)
        findings.append((ok, f"modern era: {era} {version}, {len(tools)} tool(s)"))
    findings.append(_legacy_handshake(project, env))
    return findings


def check_claude_entry(project: Project) -> list[Finding]:
    """Start the server as the Claude Desktop / Claude Code entry will: this interpreter, `-m MODULE`,
    from outside the project and without PYTHONPATH, so only an installed project can start."""
    import tempfile

    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    command = " ".join(_spawn(project))
    fix = f"run `{sys.executable} -m pip install -e {project.root}`"
    with tempfile.TemporaryDirectory() as elsewhere:
        where = subprocess.run([sys.executable, "-c", f"import {project.module} as m; print(m.__file__)"],
                               capture_output=True, text=True, timeout=60, env=env, cwd=elsewhere, check=False)
        if where.returncode != 0:
            error = (where.stderr.strip().splitlines() or ["it exits at once"])[-1]
            return [(False, f"`{command}` cannot start: {error}; {fix}")]
        found = Path(where.stdout.strip()).resolve()
        if not found.is_relative_to(project.root.resolve()):
            return [(False, f"`{command}` runs {found}, not this project's code (an old non-editable install?); {fix}")]
        ok, detail = _legacy_handshake(project, env, elsewhere)
    return [(ok, f"`{command}` starts from any directory; {detail}" if ok else f"`{command}`: {detail}; {fix}")]


def check_tests(project: Project) -> list[Finding]:
    """The project's tests pass under `python -m unittest discover -s tests` (each failure named)."""
    from mcp_agent_kit.scaffold.project_tests import check_tests as run_tests

    return run_tests(project.root, project.test_seconds)


def _legacy_handshake(project: Project, env: dict[str, str], cwd: str | Path | None = None) -> Finding:
    """A handshake-era client: initialize, initialized, tools/list, over a fresh process."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": mcp.LATEST_LEGACY, "capabilities": {},
            "clientInfo": {"name": "validate", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    try:
        done = subprocess.run(_spawn(project), input=stdin, capture_output=True, text=True, timeout=30,
                              env=env, cwd=cwd or project.root, check=False)
    except subprocess.TimeoutExpired:
        return (False, "legacy era: no answer within 30 s")
    replies = {}
    for raw in done.stdout.splitlines():
        try:
            message = json.loads(raw)
        except ValueError:
            return (False, f"legacy era: stdout carried a non-JSON line: {raw[:80]!r}")
        replies[message.get("id")] = message
    if 1 not in replies and done.returncode:
        error = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return (False, f"legacy era: the server exited with {done.returncode}: {error}")
    version = replies.get(1, {}).get("result", {}).get("protocolVersion")
    tools = replies.get(2, {}).get("result", {}).get("tools")
    ok = version in mcp.LEGACY_VERSIONS and isinstance(tools, list)
    return (ok, f"legacy era: initialize -> {version}, {len(tools or [])} tool(s)")


CHECKS: list[tuple[str, Callable[[Project], list[Finding]]]] = [
    ("discover", check_discover),
    ("deterministic lists", check_deterministic),
    ("tool design rules", check_design_rules),
    ("A2A card", check_a2a_card),
    ("SKILL.md", check_skill),
    ("skill served over MCP", check_served_skill),
    ("plugin package", check_plugin),
    ("dual-era probe", check_probe),
    ("Claude Desktop entry", check_claude_entry),
    ("project tests", check_tests),
]


def fix(project: Project, description: str) -> tuple[list[str], list[str]]:
    """Regenerate skills/<name>/ and plugin/ from the server's current tools: (written, kept).

    Only files whose text changes are written (and listed).

    Like `create-mcp-agent --force`, only files we generated and you left unchanged are
    replaced; a file you edited is kept (delete it to have it regenerated).
    """
    from mcp_agent_kit.scaffold.names import derive
    from mcp_agent_kit.scaffold.render import ExistsError, packaging_files, refuse_outside, write_project

    names = derive(project.name)
    files = packaging_files(project.tools(), names, description)
    try:
        done = write_project(files, project.root, force=True)
    except ExistsError:  # no manifest: only files that do not exist yet are safe to write
        refuse_outside(project.root, list(files))  # or a symlinked directory: one line, nothing written
        kept = [rel for rel in files if os.path.lexists(project.root / rel)]
        missing = {rel: text for rel, text in files.items() if rel not in kept}
        for rel, text in missing.items():
            path = project.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return sorted(missing), sorted(kept)
    return sorted(done.added + done.updated), sorted(done.kept)


def run_checks(project: Project) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, check in CHECKS:
        try:
            findings = check(project)
        except Exception as exc:  # a broken check is a failed check, never a crash
            findings = [(False, f"{type(exc).__name__}: {exc}")]
        rows += [{"check": name, "ok": ok, "detail": detail} for ok, detail in findings]
    return rows


def main(argv: list[str], *, target: str, name: str, root: Path | None = None) -> int:
    parser = argparse.ArgumentParser(prog="validate.py", description="Check this agent project for compliance.")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--fix", action="store_true", help="regenerate the skill and plugin from the tools first")
    parser.add_argument("--tests-timeout", type=_seconds, default=TEST_SECONDS, metavar="SECONDS",
                        help=f"how long the project's tests may run (default {TEST_SECONDS:g})")
    args = parser.parse_args(argv)
    root = (root or Path.cwd()).resolve()
    sys.path.insert(0, str(root))
    try:
        project = Project(target, name, root)
    except Exception as exc:  # the user's code does not import: a failed check, never a traceback
        return _report(args.json, [{"check": "server imports", "ok": False, "detail": import_failure(exc, root)}])
    project.test_seconds = args.tests_timeout
    if args.fix:
        description = str(project.server.instructions or project.server.description or name)
        try:
            written, kept = fix(project, description)
        except FileExistsError as exc:  # render.ExistsError: a symlinked directory leaves the project
            print(f"validate.py --fix: {exc}", file=sys.stderr)
            return 1
        for rel in written:
            print(f"wrote {rel}", file=sys.stderr)
        for rel in kept:
            print(f"kept {rel} (you changed it; delete it to regenerate it)", file=sys.stderr)
    return _report(args.json, run_checks(project))


def _seconds(text: str) -> float:
    """argparse type: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _report(as_json: bool, rows: list[dict[str, Any]]) -> int:
    if as_json:
        print(json.dumps({"ok": all(row["ok"] for row in rows), "checks": rows}, indent=2))
    else:
        for row in rows:
            print(f"{'✓' if row['ok'] else '✗'} {row['check']}: {row['detail']}")
    return 0 if all(row["ok"] for row in rows) else 1


def import_failure(exc: BaseException, root: Path) -> str:
    """`file:line: Error: message` for an exception raised while importing the project's server."""
    import traceback

    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for error in chain:
        if isinstance(error, SyntaxError) and error.filename:
            return f"{_shown(error.filename, root)}:{error.lineno}: SyntaxError: {error.msg}"
    innermost = chain[-1]
    frames = [frame for error in chain for frame in traceback.extract_tb(error.__traceback__)
              if _shown(frame.filename, root) != frame.filename]
    where = f"{_shown(frames[-1].filename, root)}:{frames[-1].lineno}: " if frames else ""
    return f"{where}{type(innermost).__name__}: {innermost}"


def _shown(filename: str, root: Path) -> str:
    """filename relative to the project root when it lies inside it, else as given."""
    try:
        return str(Path(filename).resolve().relative_to(root))
    except (ValueError, OSError):
        return filename
