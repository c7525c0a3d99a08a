"""docs/board.md stays true: every sample in it is checked against the code it describes.

The config samples parse with board.config.parse_config (the found agents they name put on PATH as stub
programs) and the config reference lists every key with the module's defaults; every `mcp-agent-kit` line
parses with the real command's parser; the state table is board.states' TRANSITIONS and A2A_STATES; each
`waiting` reason is one board.queue.plan gives; the tools table is board.mcp_tools' TOOLS (names,
arguments, required ones, structuredContent); the `task` table is the task command's parser; the task
and event samples have the task object's fields; the webhook receiver sample runs and takes a delivery
from the real WebhookSender, and refuses a tampered body and an old signature.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import importlib
import json
import re
import shlex
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board import config as board_config
from mcp_agent_kit.board import queue, render, states
from mcp_agent_kit.board.cli import DEFAULT_HOST, DEFAULT_PORT, DEFAULT_URL, TOKEN_ENV
from mcp_agent_kit.board.mcp_tools import DIFF, EVENTS, MAX_WAIT_S, TASK, TASK_LIST, TOOLS
from mcp_agent_kit.board.task_cli import BOARD_ENV
from mcp_agent_kit.board.task_fields import FIELDS, PRIORITIES, QUESTION_KINDS
from mcp_agent_kit.board.webhooks import ENTRY_KEYS, Webhook, WebhookSender, sign
from mcp_agent_kit.board.workspaces import branch_name

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "board.md"
FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```\s*$", re.S | re.M)  # indented fences (in a list item) too
CODE = re.compile(r"`([^`]+)`")
SECRET = "docs-secret-0123456789"


def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def fenced(lang: str, text: str | None = None) -> list[str]:
    return [body for kind, body in FENCE.findall(doc() if text is None else text) if kind == lang]


def section(heading: str) -> str:
    """The text under `heading` (a whole line, e.g. '## States') up to the next heading of its level or higher."""
    text = doc()
    level = heading.split(" ")[0]
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    ends = [m.start() for m in re.finditer(r"^(#+) ", text[start:], re.M) if len(m.group(1)) <= len(level)]
    return text[start:start + ends[0]] if ends else text[start:]


def prose(text: str) -> str:
    """`text` without its fenced blocks (so inline `code` spans pair up)."""
    return FENCE.sub("", text)


def table(text: str) -> list[list[str]]:
    """The first markdown table in `text`: its rows (no header, no separator), cells stripped."""
    rows, seen = [], False
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if seen and not set(line) <= set("|-: "):
                rows.append(cells)
            seen = True
        elif seen:
            break
    return rows


def json_samples() -> list[Any]:
    return [json.loads(body) for body in fenced("json")]


def configs() -> list[dict[str, Any]]:
    return [s for s in json_samples() if isinstance(s, dict) and s and set(s) <= set(board_config._TOP_KEYS)]


@pytest.fixture
def found_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agents the samples name by id, as stub programs on PATH (parse_config looks them up)."""
    from mcp_agent_kit.acp.client.known import BY_ID

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for agent_id in ("qwen-code", "claude-acp"):
        stub = bin_dir / BY_ID[agent_id].program
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


# ---- the config ----------------------------------------------------------------------------------------
def test_every_config_sample_parses(found_agents: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOARD_WEBHOOK_SECRET", "s3cret")
    minimal, full, hosts = configs()
    parsed = board_config.parse_config(minimal)
    assert parsed.default_agent == "qwen-code" and parsed.max_concurrent == 2
    parsed = board_config.parse_config(full)
    assert set(parsed.agents) == {"qwen-code", "echo"} and parsed.default_agent == "qwen-code"
    assert dict(parsed.agent_limits) == {"echo": 1} and parsed.max_concurrent == 3
    assert parsed.workspace == board_config.WorkspaceSettings("main", (".env", "config/*.local.json"), "npm ci",
                                                              300.0, "worktree")
    assert parsed.webhooks == (Webhook("https://hooks.example.com/board", b"s3cret",
                                       frozenset({"task.needs_input", "task.review", "task.failed"})),)
    assert [server["name"] for server in parsed.mcp_servers] == ["docs"]
    assert parsed.author == "Board <board@example.com>"
    monkeypatch.setenv("AGENT_HOST_TOKEN", "t0ken")
    parsed = board_config.parse_config(hosts)
    assert set(parsed.hosts) == {"gpu-1", "local"} and parsed.default_agent == "echo"
    assert parsed.hosts["gpu-1"].token == "t0ken" and parsed.hosts["gpu-1"].labels == {"gpu"}
    assert parsed.hosts["local"].mounted and parsed.hosts["local"].poll == 2.0
    assert parsed.repo_url == "https://git.example.com/team/app.git"
    rows = {CODE.findall(row[0])[0]: row for row in table(section("## Hosts"))}
    from mcp_agent_kit.board.hosts import _KEYS

    assert list(rows) == [f"hosts.<id>.{key}" for key in _KEYS]


def test_the_config_reference_lists_every_key_with_its_default() -> None:
    rows = {CODE.findall(row[0])[0]: row for row in table(section("## The config"))}
    expected = {"agents", "mcpServers", "hosts",
                "agents.<id>.max_concurrent", "agents.<id>.timeout",  # and what `board` holds
                *(f"board.{key}" for key in board_config._BOARD_KEYS if key != "workspace"),
                *(f"board.workspace.{key}" for key in board_config._WORKSPACE_KEYS),
                *(f"board.webhooks[].{key}" for key in ENTRY_KEYS)}
    assert set(rows) == expected
    defaults = {"board.max_concurrent": f"{board_config.DEFAULT_MAX_CONCURRENT}",
                "board.workspace.setupTimeout": f"{board_config.DEFAULT_SETUP_TIMEOUT:g}",
                "agents.<id>.timeout": f"{board_config.DEFAULT_TURN_TIMEOUT:g}",
                "board.workspace.mode": f"`{board_config.WorkspaceSettings().mode}`"}
    assert {key: rows[key][2] for key in defaults} == defaults
    from mcp_agent_kit.gateway.agents_config import _ACP_KEYS, APPROVE

    agents = rows["agents"][1]
    assert set(re.findall(r'"(\w+)"', agents.split('"acp": {', 1)[1].split("}", 1)[0])) == _ACP_KEYS
    assert all(f"`{mode}`" in agents for mode in APPROVE)
    assert all(f"`{mode}`" in rows["board.workspace.mode"][1] for mode in board_config._MODES)


def test_a_config_naming_an_agent_that_is_missing_is_one_error(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no qwen here: the quick start's config says how to install it
    with pytest.raises(board_config.ConfigError, match="npm install -g @qwen-code/qwen-code"):
        board_config.parse_config(configs()[0])


# ---- the states ----------------------------------------------------------------------------------------
def test_the_state_table_is_the_transition_table() -> None:
    moves: dict[str, dict[str, str]] = {}
    a2a: dict[str, str] = {}
    for state, actions, task_state in table(section("## States")):
        name = CODE.findall(state)[0]
        moves[name] = dict(re.findall(r"`(\w+)` → `(\w+)`", actions))
        a2a[name] = CODE.findall(task_state)[0]
    assert list(moves) == list(states.TRANSITIONS)
    assert moves == {state: dict(actions) for state, actions in states.TRANSITIONS.items()}
    assert a2a == dict(states.A2A_STATES)
    text = section("## States")
    person = re.search(r"A person takes the actions (.*?)\. The board\s+takes (.*?)\.", text, re.S)
    assert person is not None
    assert tuple(CODE.findall(person.group(1))) == states.PERSON_ACTIONS
    assert tuple(CODE.findall(person.group(2))) == states.BOARD_ACTIONS


def _task(task_id: str, state: str, **fields: Any) -> dict[str, Any]:
    return {"id": task_id, "state": state, "agent": "a", "priority": "normal", "blockedBy": [], "workspace": None,
            **fields}


# each reason: the tasks and limits that make the last task wait for it
WAITS: dict[str, tuple[list[dict[str, Any]], queue.BoardLimits]] = {
    "held": ([_task("t", "held")], queue.BoardLimits(4, {"a": queue.AgentSlots()})),
    "blocked": ([_task("b", "queued"), _task("t", "queued", blockedBy=["b"])],
                queue.BoardLimits(4, {"a": queue.AgentSlots()})),
    "agent not ready": ([_task("t", "queued", agent="gone")], queue.BoardLimits(4, {"a": queue.AgentSlots()})),
    "in-place": ([_task("r", "running", workspace="/repo"), _task("t", "queued")],
                 queue.BoardLimits(4, {"a": queue.AgentSlots()}, in_place=True)),
    "capacity": ([_task("r", "running"), _task("t", "queued")], queue.BoardLimits(1, {"a": queue.AgentSlots()})),
}


def test_each_waiting_reason_is_one_the_queue_gives() -> None:
    text = section("### Why a task waits")
    reasons = [CODE.findall(row[0])[0] for row in table(text)]
    assert reasons == list(WAITS)
    for reason, (tasks, limits) in WAITS.items():
        waiting = queue.plan(tasks, limits).waiting["t"]
        assert waiting is not None and waiting.startswith(reason), (reason, waiting)
    order = re.search(r"Queued tasks start by priority \((.*?)\)", text)
    assert order is not None and tuple(CODE.findall(order.group(1))) == PRIORITIES


# ---- the command lines ---------------------------------------------------------------------------------
def command_lines() -> Iterator[list[str]]:
    for body in fenced("bash"):
        for line in body.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "mcp-agent-kit":
                yield words[1:]


def _parser(command: str) -> Any:
    from mcp_agent_kit.__main__ import COMMANDS

    module, _, make, _ = COMMANDS[command]
    return getattr(importlib.import_module(module), make)()


def test_every_command_line_parses_with_the_real_parser() -> None:
    seen = []
    for words in command_lines():
        try:
            _parser(words[0]).parse_args(words[1:])
        except SystemExit as exc:
            pytest.fail(f"mcp-agent-kit {shlex.join(words)} does not parse (exit {exc.code})")
        seen.append(" ".join(words[:2]))
    assert {"agents", "board board.json", "task new", "task watch", "task diff", "task accept", "task list",
            "task answer", "task discard"} <= set(seen)


def test_the_urls_are_the_default_port() -> None:
    text = doc()
    assert f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/mcp" == DEFAULT_URL
    other = "http://127.0.0.1:9000/mcp"  # the one example of --board with another port
    assert set(re.findall(r"http://127\.0\.0\.1:\d+/mcp", text)) == {DEFAULT_URL, other}
    assert f"board: serving MCP at {DEFAULT_URL}" in text
    claude = [line for body in fenced("bash") for line in body.splitlines() if line.startswith("claude mcp add")]
    assert claude == [f"claude mcp add --transport http board {DEFAULT_URL}"]
    assert f"`--http HOST:PORT` (default\n`{DEFAULT_HOST}:{DEFAULT_PORT}`" in text


def test_the_task_table_is_the_task_command() -> None:
    text = section("## The `task` command")
    top = _parser("task")
    subs = top._subparsers._group_actions[0].choices
    common = {"--board", "--token", "--timeout", "--json"}
    documented = {}
    for row in table(text):
        usage = CODE.findall(row[0])[0].split()
        assert usage[0] == "task"
        documented[usage[1]] = set(re.findall(r"--[\w-]+", " ".join(usage)))
    assert set(documented) == set(subs)
    for name, flags in documented.items():
        own = {flag for action in subs[name]._actions for flag in action.option_strings if flag.startswith("--")}
        assert flags == own - common - {"--help"}, name
        assert common <= own
    intro = text.split("|", 1)[0]
    assert set(re.findall(r"`(--\w+)", intro)) == common
    assert f"`${BOARD_ENV}`" in intro and f"`${TOKEN_ENV}`" in intro and DEFAULT_URL in intro


def test_the_board_command_flags_exist() -> None:
    text = section("## The `task` command")
    said = text[text.index("`mcp-agent-kit board [CONFIG]` takes"):]
    said = said[:said.index("```")]
    own = {flag for action in _parser("board")._actions for flag in action.option_strings}
    assert set(re.findall(r"`(--[\w-]+)", said)) <= own


# ---- the tools ------------------------------------------------------------------------------------------
OUTPUTS = ((TASK, "the task"), (TASK_LIST, '`{"tasks": [...]}`'),
           (DIFF, '`{"files": [{"path", "status", "added", "removed"}], "patch"}`'),
           (EVENTS, '`{"events": [...], "next"}`'))


def test_the_tools_table_is_the_board_tools() -> None:
    rows = table(section("## MCP tools"))
    assert [CODE.findall(row[0])[0] for row in rows] == list(TOOLS)
    for name, arguments, output in rows:
        tool = TOOLS[CODE.findall(name)[0]]
        given = re.findall(r"(\*\*)?`(\w+)`", arguments)
        assert [arg for _, arg in given] == list(tool.properties), name
        assert [arg for bold, arg in given if bold] == tool.required, name
        assert output == next(said for schema, said in OUTPUTS if schema is tool.output), name
    assert f"at most {MAX_WAIT_S:g} seconds" in section("## MCP tools")
    priorities = re.search(r"`priority` is (.*?)\.", section("## MCP tools"))
    assert priorities is not None and tuple(CODE.findall(priorities.group(1))) == PRIORITIES


def _check_task(task: dict[str, Any]) -> None:
    assert list(task) == list(FIELDS)
    assert task["state"] in states.STATES and task["priority"] in PRIORITIES
    assert task["branch"] == branch_name(task["id"], task["title"])
    assert task["workspace"].endswith(f"/worktrees/{task['id']}")
    if task["question"] is not None:
        assert task["question"]["kind"] in QUESTION_KINDS
        assert all(set(option) == {"id", "name", "kind"} for option in task["question"]["options"])
    for key in ("createdAt", "startedAt", "endedAt"):
        assert task[key] is None or re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", task[key])


def test_the_task_and_event_samples_have_the_task_objects_fields() -> None:
    samples = [s for s in json_samples() if s not in configs()]
    events = [s for s in samples if set(s) == {"id", "type", "time", "task"}]
    tasks = [s for s in samples if "state" in s]
    assert len(events) == 1 and len(tasks) == 1 and len(samples) == 2
    assert events[0]["type"] in states.SEMANTIC_EVENTS.values()
    for task in (events[0]["task"], tasks[0]):
        _check_task(task)
    assert tasks[0]["state"] == states.NEEDS_INPUT and tasks[0]["question"] is not None


def test_the_quick_start_task_line_is_what_task_new_prints() -> None:
    new = next(words for words in command_lines() if words[:2] == ["task", "new"])
    args = _parser("task").parse_args(new[1:])
    said = next(body.strip() for body in fenced("text") if body.startswith("task "))
    task_id = said.split()[1]
    task = {"id": task_id, "title": args.prompt, "state": "queued", "agent": configs()[0]["board"]["agent"],
            "priority": args.priority, "waiting": None, "error": None, "question": None}
    assert said == render.summary(task)


# ---- notifications --------------------------------------------------------------------------------------
def test_the_events_table_is_the_semantic_events() -> None:
    rows = table(section("## Notifications"))
    assert [CODE.findall(row[0])[0] for row in rows] == list(dict.fromkeys(states.SEMANTIC_EVENTS.values()))


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The doc's receiver sample, run as written (not as __main__), serving on a free port: its URL."""
    monkeypatch.setenv("BOARD_WEBHOOK_SECRET", SECRET)
    (source,) = [body for body in fenced("python") if "verify_signature" in body]
    namespace: dict[str, Any] = {"__name__": "docs_board_receiver"}
    exec(compile(source, "docs/board.md", "exec"), namespace)
    server = ThreadingHTTPServer(("127.0.0.1", 0), namespace["Receiver"])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/board"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _post(url: str, body: bytes, signature: str) -> int:
    conn = http.client.HTTPConnection(url.split("/")[2], timeout=10)
    try:
        conn.request("POST", "/board", body=body, headers={"Content-Type": "application/json",
                                                           "X-Board-Signature": signature})
        return conn.getresponse().status
    finally:
        conn.close()


def test_the_receiver_sample_takes_a_signed_delivery_and_refuses_forgeries(
        receiver: str, capsys: pytest.CaptureFixture[str]) -> None:
    event = next(s for s in json_samples() if set(s) == {"id", "type", "time", "task"})
    seen: list[dict[str, str]] = []

    def post(url: str, body: bytes, headers: Any, timeout: float) -> int:
        from mcp_agent_kit.board.webhooks import http_post

        seen.append(dict(headers))
        return http_post(url, body, headers, timeout)

    sender = WebhookSender([Webhook(receiver, SECRET.encode())], post=post, attempts=1)
    try:
        assert sender.deliver(event) == 1
        assert sender.wait_idle(30) and sender.pending() == 0
    finally:
        sender.close()
    assert capsys.readouterr().out.splitlines() == [f"{event['type']} {event['task']['id']} {event['task']['state']}"]
    named = re.findall(r"`(X-Board-\w+|Content-Type)[`:]", prose(section("## Notifications")))
    assert set(named) <= set(seen[0]) and {"X-Board-Event", "X-Board-Delivery", "Content-Type"} <= set(named)
    assert seen[0]["X-Board-Event"] == event["type"] and seen[0]["X-Board-Delivery"] == event["id"]

    body = json.dumps(event).encode()
    now = int(time.time())
    assert _post(receiver, body, sign(body, SECRET.encode(), now)) == 204
    assert _post(receiver, body.replace(b"review", b"done!!"), sign(body, SECRET.encode(), now)) == 401
    assert _post(receiver, body, sign(body, SECRET.encode(), now - 3600)) == 401
    assert _post(receiver, body, sign(body, b"another secret", now)) == 401


def test_the_signature_without_the_kit_is_the_kits() -> None:
    text = section("## Notifications")
    header = next(body.strip() for body in fenced("text", text) if "X-Board-Signature" in body)
    assert header == 'X-Board-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the secret>'
    recipe = next(code for code in CODE.findall(prose(text)) if code.startswith("hmac.new("))
    body, secret, t = b'{"id": "x"}', SECRET.encode(), 1767225600
    mac = eval(recipe, {"hmac": hmac, "hashlib": hashlib, "body": body, "secret": secret, "t": t})
    assert sign(body, secret, t) == f"t={t},v1={mac}"


# ---- security and the README ----------------------------------------------------------------------------
def test_the_security_rules_hold() -> None:
    from mcp_agent_kit.board.git import SETTINGS
    from mcp_agent_kit.cli_common import CliError, check_public_bind

    with pytest.raises(CliError, match="without authentication"):
        check_public_bind("0.0.0.0", authenticated=False, insecure=False, what="the board")
    check_public_bind("0.0.0.0", authenticated=True, insecure=False, what="the board")
    check_public_bind("127.0.0.1", authenticated=False, insecure=False, what="the board")
    assert "core.hooksPath=/dev/null" in SETTINGS and "`core.hooksPath=/dev/null`" in section("## Security")
    assert f"`${TOKEN_ENV}`" in section("## Security")


def test_the_readme_links_the_board_doc() -> None:
    assert "(docs/board.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_agent_side_tools_table_is_the_task_servers() -> None:
    from mcp_agent_kit.board.task_server import SERVER_NAME
    from mcp_agent_kit.board.task_server import TOOLS as AGENT_TOOLS

    text = section("## The board's tools inside each agent session")
    assert f"named `{SERVER_NAME}`" in text
    rows = {cells[0].strip("`"): cells[1] for cells in table(text)}
    assert list(rows) == list(AGENT_TOOLS)
    for name, arguments in rows.items():
        assert re.findall(r"`(\w+)`", arguments) == list(AGENT_TOOLS[name]["inputSchema"]["properties"]), name


def test_the_a2a_section_names_what_a_message_may_carry() -> None:
    from mcp_agent_kit.board.a2a_face import CREATE_FIELDS

    text = section("## A2A")
    carried = next(line for line in text.splitlines() if "`metadata` may carry" in line)
    following = text[text.index(carried):].split("\n- ", 1)[0]
    assert re.findall(r"`(\w+)`", following.split("may carry", 1)[1]) == list(CREATE_FIELDS)
