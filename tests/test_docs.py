"""The user docs stay true: their JSON parses, their Python compiles, and their transcripts replay.

Every fenced ```json block in docs/wire-format.md, docs/errors.md and docs/skills-over-mcp.md must
parse. Every ```python block in the MCP docs must compile, and the quick start's server and the writing-servers snippets
must also run (they register against the real Server API). Every tool a docs/*.md sample registers
follows the kit's design rules (`tool_rule_violations`), unless its block says
`# not-a-design-example`. Transcripts between
`<!-- replay: SCRIPT -->` and `<!-- end replay -->` are sent, line by line, to SCRIPT run as a
real stdio subprocess: blocks captioned `→` go to the server, blocks captioned `←` must come back
(compared as JSON, with the random `requestState` masked and the real one echoed on retries).
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
JSON_DOCS = ("wire-format.md", "errors.md", "skills-over-mcp.md", "oauth.md")
PYTHON_DOCS = ("quickstart.md", "writing-servers.md", "wire-format.md", "errors.md", "performance.md",
               "skills-over-mcp.md", "oauth.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
REPLAY = re.compile(r"<!-- replay: (\S+) -->(.*?)<!-- end replay -->", re.S)
MASK = "<requestState>"


class Block:
    def __init__(self, lang: str, body: str, caption: str) -> None:
        self.lang = lang
        self.body = body.strip("\n")
        self.caption = caption


def blocks(text: str) -> list[Block]:
    """Fenced blocks with the nearest non-blank line above each (its caption)."""
    found = []
    for match in FENCE.finditer(text):
        above = [line for line in text[: match.start()].splitlines() if line.strip()]
        found.append(Block(match.group(1), match.group(2), above[-1].strip() if above else ""))
    return found


def read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", JSON_DOCS)
def test_every_json_block_parses(name: str) -> None:
    json_blocks = [block for block in blocks(read(name)) if block.lang == "json"]
    assert json_blocks, f"{name} has no json blocks"
    for block in json_blocks:
        try:
            json.loads(block.body)
        except ValueError as exc:
            pytest.fail(f"{name}: a json block does not parse ({exc}):\n{block.body[:300]}")


@pytest.mark.parametrize("name", PYTHON_DOCS)
def test_every_python_block_compiles(name: str) -> None:
    for number, block in enumerate(blocks(read(name))):
        if block.lang == "python":
            compile(block.body, f"{name}[{number}]", "exec")


def test_quickstart_server_runs_and_matches_the_example() -> None:
    server_blocks = [b for b in blocks(read("quickstart.md")) if b.lang == "python" and "= Server(" in b.body]
    assert server_blocks, "the quick start has no server example"
    namespace: dict[str, Any] = {"__name__": "docs_quickstart"}
    exec(compile(server_blocks[0].body, "quickstart.md", "exec"), namespace)
    server = namespace["server"]
    example = (ROOT / "examples" / "metrics_server.py").read_text(encoding="utf-8")
    assert server_blocks[0].body.strip() in example, "the quick start must show examples/metrics_server.py verbatim"
    assert [tool.name for tool in server.listing("tools")] == ["calculate_metrics"]


def test_writing_servers_snippets_run_in_order() -> None:
    """The guide's snippets build on each other; run them in one namespace against the real API."""
    namespace: dict[str, Any] = {"__name__": "docs_guide"}
    for number, block in enumerate(blocks(read("writing-servers.md"))):
        if block.lang == "python" and "# not run" not in block.body:
            exec(compile(block.body, f"writing-servers.md[{number}]", "exec"), namespace)
    assert namespace["server"].listing("tools"), "the guide registered no tools"


# ---- design rules ---------------------------------------------------------------------------------
NOT_A_DESIGN_EXAMPLE = "# not-a-design-example"
REGISTERS = re.compile(r"@server\.tool|\.add_tool\(|\bServer\(|def register_all\(")
# Modules a sample imports from the project it pretends to live in (docs/tutorial.md's weather_agent).
PROJECT_STUBS = {"weather_agent.tools.example": "text_stats"}


def _stub_tool(text: str) -> dict[str, int]:
    """Use when you need the number of words in a text. Do not use for counting tokens."""
    return {"words": len(text.split())}


def _signature_problems(tool: Any) -> list[str]:
    """The function-vs-inputSchema rule of scaffold.checks, where that rule exists."""
    from mcp_agent_kit.scaffold import checks

    rule = getattr(checks, "signature_violations", None)
    if rule is None:
        return []
    handler = tool.handler
    if handler.raw:  # add_raw_tool: fn(ctx, arguments) has no signature to hold against the schema
        return []
    skip = frozenset({handler.context_arg}) if handler.context_arg else frozenset()
    problems: list[str] = rule(tool.wire, handler.fn, skip)
    return problems


def tool_docs() -> list[str]:
    return sorted(
        path.name
        for path in DOCS.glob("*.md")
        if any(b.lang == "python" and REGISTERS.search(b.body) and NOT_A_DESIGN_EXAMPLE not in b.body
               for b in blocks(path.read_text(encoding="utf-8")))
    )


@pytest.mark.parametrize("name", tool_docs())
def test_every_tool_in_the_docs_follows_the_design_rules(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run a doc's tool samples in order (one namespace, with a `server` for fragments) and check each tool."""
    import types

    from mcp_agent_kit import Context, Server
    from mcp_agent_kit.core.registry import Registry
    from mcp_agent_kit.scaffold.checks import tool_rule_violations

    for module_name, function in PROJECT_STUBS.items():
        parts = module_name.split(".")
        for depth in range(1, len(parts) + 1):
            monkeypatch.setitem(sys.modules, ".".join(parts[:depth]), types.ModuleType(".".join(parts[:depth])))
        monkeypatch.setattr(sys.modules[module_name], function, _stub_tool, raising=False)
    fragment_server = Server("docs-sample", "0.0.0")
    namespace: dict[str, Any] = {
        "__name__": f"docs_{Path(name).stem}",
        "server": fragment_server,
        "Server": Server,
        "Context": Context,
    }
    seen: dict[str, Any] = {}
    remove_tool = Registry.remove_tool

    def remembering_remove(self: Registry, tool_name: str) -> None:  # a sample may add a tool and drop it again
        tool = self.get_tool(tool_name)
        if tool is not None:
            seen[tool.name] = tool
        remove_tool(self, tool_name)

    monkeypatch.setattr(Registry, "remove_tool", remembering_remove)
    in_order = name == "writing-servers.md"  # its snippets build on each other
    for number, block in enumerate(blocks(read(name))):
        if block.lang != "python" or "# not run" in block.body or NOT_A_DESIGN_EXAMPLE in block.body:
            continue
        if not (in_order or REGISTERS.search(block.body)):
            continue
        exec(compile(block.body, f"{name}[{number}]", "exec"), namespace)
        register_all = namespace.pop("register_all", None)
        if callable(register_all):
            register_all(fragment_server)
        for value in list(namespace.values()):
            if isinstance(value, Server):
                seen.update({tool.name: tool for tool in value.listing("tools")})
    assert seen, f"{name}: its samples registered no tool"
    broken = {
        tool: tool_rule_violations(definition.wire) + _signature_problems(definition)
        for tool, definition in seen.items()
    }
    failing = {tool: problems for tool, problems in broken.items() if problems}
    assert not failing, f"{name}: tools that break the design rules: {failing}"


# ---- transcripts ------------------------------------------------------------------------------
def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: MASK if key == "requestState" else _mask(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask(item) for item in value]
    return value


class Peer:
    """A server script on real pipes, with a reader thread so reads can time out."""

    def __init__(self, script: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / script)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> Any:
        try:
            return json.loads(self.lines.get(timeout=20))
        except queue.Empty:
            pytest.fail("the server sent nothing where the docs show a reply")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def transcripts() -> list[tuple[str, str, str]]:
    found = []
    for name in JSON_DOCS:
        for number, match in enumerate(REPLAY.finditer(read(name))):
            found.append((f"{name}#{number}", match.group(1), match.group(2)))
    return found


@pytest.mark.parametrize(("where", "script", "body"), transcripts(), ids=[t[0] for t in transcripts()])
def test_transcript_replays_against_the_real_server(where: str, script: str, body: str) -> None:
    steps = [b for b in blocks(body) if b.caption.startswith(("→", "←"))]
    assert steps, f"{where}: no captioned blocks"
    peer = Peer(script)
    state: str | None = None
    try:
        for block in steps:
            if block.caption.startswith("→"):
                line = block.body
                if state is not None and '"requestState"' in line:
                    message = json.loads(line)
                    message["params"]["requestState"] = state
                    line = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
                peer.send(line)
                continue
            got = peer.receive()
            result = got.get("result")
            if isinstance(result, dict) and isinstance(result.get("requestState"), str):
                state = result["requestState"]
            assert _mask(got) == _mask(json.loads(block.body)), f"{where}: the server now answers differently"
    finally:
        peer.close()
