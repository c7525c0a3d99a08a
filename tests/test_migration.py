"""The older "stateless MCP" kit's quick start, step by step, against this kit.

Each test is one row of docs/migrating-from-stateless-kits.md: the step either still works, or
answers with its replacement (a message that names the new command, key or route). The steps that
need a project run against one made by `python -m mcp_agent_kit new demo-agent`, as subprocesses.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit import Server, __version__
from mcp_agent_kit.packaging.skill_validate import validate_skill
from mcp_agent_kit.scaffold.checks import tool_rule_violations
from tests.net import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[1]
OLD_META = {"protocolVersion": "2026-07-28", "clientCapabilities": {}, "clientInfo": {"name": "demo", "version": "1"}}
NEW_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("migration")
    made = run([sys.executable, "-m", "mcp_agent_kit", "new", "--no-install", "demo-agent", "--dir", str(parent)],
               cwd=parent)
    assert made.returncode == 0, made.stderr
    return parent / "demo-agent"


def env(project: Path | None = None) -> dict[str, str]:
    """The kit (and the project, as `pip install -e .` would) on the path."""
    paths = [str(ROOT)] + ([str(project)] if project else [])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PYTHONDONTWRITEBYTECODE": "1"}


def run(
    args: list[str], cwd: Path, stdin: str | None = None, project: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120, env=env(project))


# ---- 1-2: install and create ----------------------------------------------------------------------
def test_1_the_version_is_above_the_unrelated_pypi_release() -> None:
    assert tuple(int(part) for part in __version__.split(".")[:3]) > (0, 1, 0)


def test_2_create_mcp_agent_makes_the_project(project: Path) -> None:
    for rel in ("server.py", "validate.py", "client_test.py", "a2a/server.py", "tests", "skills/demo-agent/SKILL.md"):
        assert (project / rel).exists(), rel


def test_2_the_old_generator_form_names_the_new_command(tmp_path: Path) -> None:
    desc = "Use when x. Do not use for y."
    old = run([sys.executable, "-m", "mcp_agent_kit", "demo_agent", "--desc", desc], tmp_path)
    assert old.returncode != 0 and not (tmp_path / "demo_agent").exists()
    assert "new demo_agent" in old.stderr


# ---- 3-5: validate, client test, stdio server ------------------------------------------------------
def test_3_validate_passes_or_names_the_install(project: Path) -> None:
    checked = run([sys.executable, "validate.py", "--json"], project, project=project)
    report = json.loads(checked.stdout)
    failing = [row for row in report["checks"] if not row["ok"]]
    # Only the installed-entry check may fail here (the project is on PYTHONPATH, not pip-installed),
    # and then it says how to install it.
    for row in failing:
        assert "pip install -e" in row["detail"], row


def test_4_client_test_calls_the_tool(project: Path) -> None:
    done = run([sys.executable, "client_test.py"], project, project=project)
    assert done.returncode == 0, done.stderr
    assert "tool(s)" in done.stdout


def _stdio(project: Path, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    lines = "".join(json.dumps(message) + "\n" for message in messages)
    done = run([sys.executable, "server.py"], project, stdin=lines, project=project)
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_5_python_server_py_serves_stdio(project: Path) -> None:
    replies = _stdio(project, {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": NEW_META}})
    assert replies[0]["result"]["supportedVersions"] == ["2026-07-28"]


# ---- 6: the wire -----------------------------------------------------------------------------------
def test_6_bare_meta_keys_get_an_error_naming_the_mcp_keys(project: Path) -> None:
    discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": OLD_META}}
    error = _stdio(project, discover)[0]["error"]
    assert error["code"] == -32601
    for key in ("protocolVersion", "clientCapabilities", "clientInfo"):
        assert f"`io.modelcontextprotocol/{key}`" in error["message"] and f"`{key}`" in error["message"]


def small_server() -> Server:
    server = Server("demo", "1.0")

    @server.tool(read_only=True)
    def hello(name: str) -> str:
        """Use when greeting someone by name. Do not use for anything else."""
        return f"hi {name}"

    return server


def test_6_bare_keys_in_process_both_eras() -> None:
    from mcp_agent_kit.core.dispatcher import Connection

    server = small_server()
    only_version = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {"protocolVersion": 1}}}
    message = server.handle(only_version)["error"]["message"]  # type: ignore[index]
    hint = "send `io.modelcontextprotocol/protocolVersion` in _meta (bare `protocolVersion` is not an MCP key)"
    assert message == f"Method not found: server/discover needs the 2026-07-28 _meta envelope: {hint}"
    bare = server.handle({"jsonrpc": "2.0", "id": 2, "method": "server/discover"})["error"]  # type: ignore[index]
    assert bare["code"] == -32601 and "io.modelcontextprotocol/protocolVersion" in bare["message"]
    modern = Connection(era="modern")
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"_meta": OLD_META, "name": "hello"}}
    error = server.handle(call, modern)["error"]  # type: ignore[index]
    assert error["code"] == -32602 and "bare `protocolVersion`" in error["message"]
    assert server.handle({"jsonrpc": "2.0", "id": 4, "method": "nope"})["error"]["message"] == "Method not found: nope"  # type: ignore[index]
    enveloped = {"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": {"_meta": NEW_META}}
    assert "result" in server.handle(enveloped)  # type: ignore[operator]


def test_6_bare_meta_keys_over_http_name_the_mcp_keys() -> None:
    from tests.http.conftest import start

    running = start(small_server().dispatcher)
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": OLD_META}}
        status, _, payload = running.post(body)
    finally:
        running.server.shutdown()
        running.server.server_close()
    error = json.loads(payload)["error"]
    assert status == 400 and error["code"] == -32600
    assert "`io.modelcontextprotocol/protocolVersion`" in error["message"]
    assert "bare `protocolVersion`" in error["message"]


# ---- 7-10: the A2A server -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def a2a(project: Path) -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "a2a/server.py", str(port)], cwd=project, env=env(project),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_listening(port, proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(20)
        assert proc.stderr is not None
        proc.stderr.close()


def request(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def test_7_8_python_a2a_server_py_port_serves_the_card(a2a: int) -> None:
    status, card = request(a2a, "GET", "/.well-known/agent.json")
    assert status == 200 and card["skills"] and card["supportedInterfaces"][0]["protocolVersion"] == "1.0"


def test_9_tasks_send_points_at_send_message(a2a: int) -> None:
    old_body = {"messages": [{"role": "user", "parts": [{"type": "text", "text": "Compute quarterly metrics"}]}]}
    status, body = request(a2a, "POST", "/a2a/tasks/send", old_body)
    assert status == 404
    message = body["error"]["message"]
    assert "SendMessage" in message and f"127.0.0.1:{a2a}/a2a," in message and "/a2a/rest/message:send" in message
    status, listed = request(a2a, "GET", "/a2a/rest/tasks")
    assert status == 200 and listed.get("tasks", []) == [], listed  # nothing ran
    new = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello world"}]}}}
    status, reply = request(a2a, "POST", "/a2a", new)
    assert status == 200 and "result" in reply, reply


def test_10_get_task_points_at_get_task(a2a: int) -> None:
    status, body = request(a2a, "GET", "/a2a/tasks/task_e8ca2985820b")
    assert status == 404
    assert "GetTask" in body["error"]["message"] and "/a2a/rest/tasks/task_e8ca2985820b" in body["error"]["message"]


def test_a2a_legacy_routes_in_process() -> None:
    from mcp_agent_kit.a2a import rest

    for method, path, replacement in [
        ("POST", "/a2a/tasks/send", "SendMessage"),
        ("POST", "/a2a/tasks/sendSubscribe", "SendStreamingMessage"),
        ("POST", "/a2a/tasks/t1/cancel", "/tasks/t1:cancel"),
        ("GET", "/a2a/tasks/t1", "GetTask"),
    ]:
        reply = rest.legacy_pointer(method, path, "http://h/a2a", "http://h/a2a/rest")
        assert reply is not None and reply.status == 404 and reply.body is not None
        assert replacement in reply.body["error"]["message"] and reply.body["error"]["code"] == 404
    assert rest.legacy_pointer("DELETE", "/a2a/tasks/send", "r", "s") is None
    assert rest.legacy_pointer("POST", "/a2a/other", "r", "s") is None


# ---- 11: the project's tests ----------------------------------------------------------------------------
def test_11_unittest_discover_runs_the_project_tests(project: Path) -> None:
    command = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-p", "test_*.py", "-v"]
    done = run(command, project, project=project)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Ran " in done.stderr and "OK" in done.stderr


# ---- 12, 15: adding a tool, and what validation says ---------------------------------------------------
def test_12_the_old_tool_definition_becomes_add_tool() -> None:
    def get_user_profile(user_id: str) -> dict[str, str]:
        """Use when retrieving user profile details by ID. Do not use for updating account settings."""
        return {"user_id": user_id, "status": "active", "tier": "enterprise"}

    server = Server("demo", "1.0")
    server.add_tool(get_user_profile, read_only=True, idempotent=True, open_world=False)
    wire = server.listing("tools")[0].wire
    assert wire["inputSchema"]["required"] == ["user_id"] and tool_rule_violations(wire) == []


def test_15_a_tool_without_hints_is_named_by_the_design_rules() -> None:
    server = Server("demo", "1.0")

    def notes_delete(title: str) -> str:
        """Use when deleting a note by title. Do not use for archiving."""
        return title

    server.add_tool(notes_delete)
    problems = tool_rule_violations(server.listing("tools")[0].wire)
    assert problems == ["annotations must declare readOnlyHint or destructiveHint"]


# ---- 13-14: hosts ----------------------------------------------------------------------------------------
def test_13_install_claude_desktop_writes_the_entry(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    done = run(
        [sys.executable, "-m", "mcp_agent_kit", "install", "claude-desktop", "--name", "demo-agent",
         "--config", str(config), "--no-check", "--", sys.executable, "-m", "demo_agent.server"],
        project, project=project,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]["demo-agent"]
    assert entry["args"][-2:] == ["-m", "demo_agent.server"] and Path(entry["command"]).is_absolute()


def test_14_a_flat_skill_file_is_told_to_become_a_directory(project: Path, tmp_path: Path) -> None:
    flat = tmp_path / "my_agent.md"
    flat.write_text((project / "skills" / "demo-agent" / "SKILL.md").read_text(encoding="utf-8"), encoding="utf-8")
    finding = validate_skill(flat).findings
    assert [f.rule for f in finding] == ["flat-skill-file"]
    assert "move my_agent.md to demo-agent/SKILL.md" in finding[0].message
    shown = run([sys.executable, "-m", "mcp_agent_kit", "skill", "validate", str(flat)], tmp_path)
    assert shown.returncode == 1 and "skills are directories: move my_agent.md to demo-agent/SKILL.md" in shown.stdout
    install = [sys.executable, "-m", "mcp_agent_kit", "skill", "install", "skills/demo-agent"]
    installed = run([*install, "--out", str(tmp_path / "skills")], project)
    assert installed.returncode == 0, installed.stderr
    assert (tmp_path / "skills" / "demo-agent" / "SKILL.md").is_file()


def test_14_skill_files_inside_a_directory_get_the_rename(tmp_path: Path) -> None:
    misnamed = tmp_path / "my-agent"
    misnamed.mkdir()
    (misnamed / "my_agent.md").write_text("---\nname: my-agent\ndescription: d\n---\nbody\n", encoding="utf-8")
    (misnamed / "README.md").write_text("readme", encoding="utf-8")
    findings = validate_skill(misnamed).findings
    assert [f.rule for f in findings] == ["skill-md-misnamed"]
    assert "rename it to my-agent/SKILL.md" in findings[0].message
    lower = tmp_path / "lower"
    lower.mkdir()
    (lower / "skill.md").write_text("---\nname: lower\ndescription: d\n---\nbody\n", encoding="utf-8")
    assert "skill-md-case" in [f.rule for f in validate_skill(lower).findings]
    nameless = tmp_path / "Odd Name.md"
    nameless.write_text("no frontmatter", encoding="utf-8")
    assert "move Odd Name.md to odd-name/SKILL.md" in validate_skill(nameless).findings[0].message
