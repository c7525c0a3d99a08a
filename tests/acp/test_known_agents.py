"""acp.client.known and `mcp-agent-kit agents`: the known ACP agents, found on a PATH of fake programs.

Each test builds its own PATH in tmp_path out of small scripts standing in for the agents: one prints
its version, one says it in a longer line, one crashes, one prints nothing, one is not executable, one
hangs (ignoring SIGTERM, with a grandchild holding its stdout: the probe must stop the whole group,
bounded by a tiny injected timeout). No sleeps in the tests and no timing asserts: parallel probing is
shown by two fakes that each wait for the other to have started. The real Qwen Code that the ACP
tests install (ACP_QWEN_DIR) is found with its real version when it is there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mcp_agent_kit.acp.client import known as k
from mcp_agent_kit.gateway.agents_config import parse_agents, split_key

ROOT = Path(__file__).resolve().parents[2]
TINY = 0.3  # seconds the hanging fake gets before it is stopped
FIELDS = ["id", "name", "found", "path", "version", "version_error", "command", "install", "homepage"]

HANG = f"""#!{sys.executable}
import signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])  # a grandchild holding stdout
signal.pause()
"""

# Two fakes that each announce themselves and wait (bounded) for the other: both say "2.0.0" only
# when their version commands run at the same time.
TOGETHER = f"""#!{sys.executable}
import os, sys, time
folder, me = os.path.split(os.path.abspath(sys.argv[0]))
other = {{"qwen": "gemini", "gemini": "qwen"}}[me]
open(os.path.join(folder, me + ".started"), "w").close()
deadline = time.monotonic() + 20
while not os.path.exists(os.path.join(folder, other + ".started")) and time.monotonic() < deadline:
    time.sleep(0.01)
print("2.0.0" if os.path.exists(os.path.join(folder, other + ".started")) else "1.0.0")
"""


def fake(folder: Path, name: str, text: str, mode: int = 0o755) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(mode)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    """A PATH of fakes that answer (or fail) at once."""
    folder = tmp_path / "bin"
    fake(folder, "qwen", "#!/bin/sh\necho 9.8.7\n")
    fake(folder, "gemini", "#!/bin/sh\necho 'gemini-cli v0.61.0 (build 1a2b)'\necho second line\n")
    fake(folder, "opencode", "#!/bin/sh\necho starting >&2\necho 'Error: cannot find module ./x' >&2\nexit 3\n")
    fake(folder, "codex-acp", "#!/bin/sh\nexit 0\n")
    fake(folder, "copilot", "#!/bin/sh\necho 1.0.0\n", mode=0o644)  # not executable: not an agent on PATH
    return folder


def by_id(rows: list[k.FoundAgent]) -> dict[str, k.FoundAgent]:
    return {row.agent.id: row for row in rows}


def processes_with(marker: str) -> list[int]:
    """pids of live processes whose environment carries the marker (zombies have none)."""
    needle = f"KNOWN_TEST_MARKER={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if needle in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                    found.append(int(name))
            except OSError:
                continue
    return found


# ---- the table -------------------------------------------------------------------------------------
def test_the_table_holds_the_agents_the_issue_names_each_a_valid_config_key() -> None:
    ids = [agent.id for agent in k.KNOWN]
    assert len(ids) == len(set(ids))
    assert {"claude-acp", "codex-acp", "gemini", "qwen-code", "opencode", "goose"} <= set(ids)
    for agent in k.KNOWN:
        assert re.fullmatch(r"[a-z][a-z0-9-]*", agent.id), agent.id  # the ACP registry's id pattern
        assert split_key(agent.id) == ("default", agent.id)
        assert agent.program and "/" not in agent.program and agent.install and agent.homepage.startswith("https://")
    assert k.known("claude-acp").program == "claude-agent-acp" and k.known("gemini").args == ("--acp",)
    assert k.known("opencode").args == k.known("goose").args == ("acp",)
    with pytest.raises(k.UnknownAgent, match="known: claude-acp, codex-acp"):
        k.known("claude")


@pytest.mark.parametrize(("output", "version"), [
    ("0.24.4\n", "0.24.4"), ("v1.2.3", "1.2.3"), ("codex-acp 2.6.0", "2.6.0"), ("goose 1.25.0-rc.1\nx", "1.25.0-rc.1"),
    ("\n\n  1.18.33  \n", "1.18.33"), ("tool 3.1+build.7 (abc)", "3.1+build.7"), ("dev build", "dev build"),
    ("", None), ("  \n", None),
])
def test_version_of_takes_the_first_version_number_of_the_first_line(output: str, version: str | None) -> None:
    assert k.version_of(output) == version


# ---- finding ---------------------------------------------------------------------------------------
def test_found_agents_reports_each_known_agent_in_order(good: Path) -> None:
    rows = k.found_agents(path=str(good))
    assert [row.agent.id for row in rows] == [agent.id for agent in k.KNOWN]
    row = by_id(rows)
    assert (row["qwen-code"].found, row["qwen-code"].version, row["qwen-code"].version_error) == (True, "9.8.7", None)
    assert row["qwen-code"].path == str(good / "qwen")
    assert row["qwen-code"].command == [str(good / "qwen"), "--acp", "--approval-mode", "default"]
    assert row["gemini"].version == "0.61.0"
    crashed = row["opencode"]
    assert crashed.found and crashed.version is None and crashed.version_error is not None
    assert "exited with code 3" in crashed.version_error and "cannot find module ./x" in crashed.version_error
    assert row["codex-acp"].version is None and "printed nothing" in str(row["codex-acp"].version_error)
    for missing in ("claude-acp", "goose", "github-copilot-cli"):  # copilot is there but not executable
        assert (row[missing].found, row[missing].path, row[missing].version) == (False, None, None)
        assert row[missing].command == [k.known(missing).program, *k.known(missing).args]


def test_a_hanging_version_command_is_stopped_with_its_whole_group(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    fake(folder, "goose", HANG)
    marker = uuid.uuid4().hex
    [row] = k.found_agents(path=str(folder), env={"KNOWN_TEST_MARKER": marker}, timeout=TINY,
                           agents=[k.known("goose")])
    assert row.found and row.version is None
    assert row.version_error == f"`{folder / 'goose'} --version` did not answer within {TINY:g} s (stopped)"
    assert processes_with(marker) == []  # the fake and its grandchild are gone when the listing returns


def test_version_commands_run_at_the_same_time(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    fake(folder, "qwen", TOGETHER)
    fake(folder, "gemini", TOGETHER)
    rows = by_id(k.found_agents(path=str(folder), timeout=30, agents=[k.known("qwen-code"), k.known("gemini")]))
    assert (rows["qwen-code"].version, rows["gemini"].version) == ("2.0.0", "2.0.0")


def test_the_probe_gets_a_minimal_environment_plus_what_is_given(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "bin"
    fake(folder, "qwen", f'#!/bin/sh\nif [ -z "$SECRET_TOKEN" ] && [ "$GIVEN" = given ] && [ "$PATH" = "{folder}" ]; '
                         'then echo 1.0.0; else echo 0.0.1; fi\n')
    monkeypatch.setenv("SECRET_TOKEN", "not for agents")
    [row] = k.found_agents(path=str(folder), env={"GIVEN": "given"}, agents=[k.known("qwen-code")])
    assert row.version == "1.0.0"  # ours not passed on, the given one passed, PATH = the path searched


def test_a_version_command_killed_by_a_signal_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    fake(folder, "gemini", "#!/bin/sh\necho dying >&2\nkill -KILL $$\n")
    [row] = k.found_agents(path=str(folder), agents=[k.known("gemini")])
    assert row.version is None and row.version_error == f"`{folder / 'gemini'} --version` was killed by signal 9: dying"


def test_a_program_that_cannot_start_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    fake(folder, "qwen", "#!/no/such/interpreter\n")
    [row] = k.found_agents(path=str(folder), agents=[k.known("qwen-code")])
    assert row.found and row.version is None and "could not start" in str(row.version_error)


def test_nothing_on_path_is_an_empty_finding_not_an_error(tmp_path: Path) -> None:
    rows = k.found_agents(path=str(tmp_path))
    assert len(rows) == len(k.KNOWN) and not any(row.found for row in rows)
    assert k.found_agents(path=str(tmp_path), agents=[]) == []


# ---- config entries --------------------------------------------------------------------------------
def test_agent_entry_is_a_gateway_acp_entry_for_a_found_agent(good: Path) -> None:
    entry = k.agent_entry("qwen-code", path=str(good))
    assert entry == {"acp": {"command": str(good / "qwen"), "args": ["--acp", "--approval-mode", "default"],
                             "env": {}}, "description": "Qwen Code"}
    spec = parse_agents({"agents": {"qwen-code": entry}})["default/qwen-code"]
    assert (spec.kind, spec.command, spec.args, spec.description) == ("acp", str(good / "qwen"),
                                                                       ("--acp", "--approval-mode", "default"),
                                                                       "Qwen Code")
    assert k.agent_entry("codex-acp", path=str(good))["acp"]["args"] == []
    with pytest.raises(k.AgentNotFound, match=r"'goose' .*not on PATH; install it with: curl "):
        k.agent_entry("goose", path=str(good))
    with pytest.raises(k.UnknownAgent, match="no known ACP agent 'qwen'"):
        k.agent_entry("qwen", path=str(good))


def test_with_found_adds_entries_only_for_names_the_config_lacks(good: Path) -> None:
    mine = {"acp": {"command": "/opt/my-qwen", "args": ["--acp"]}}
    agents = k.with_found({"qwen-code": mine, "team/gemini": {"a2a": "http://127.0.0.1:1/"}},
                          ["qwen-code", "gemini", "codex-acp"], path=str(good))
    assert agents["qwen-code"] is mine and "gemini" in agents  # team/gemini is another agent: default/gemini added
    specs = parse_agents({"agents": agents})
    assert sorted(specs) == ["default/codex-acp", "default/gemini", "default/qwen-code", "team/gemini"]
    assert specs["default/gemini"].command == str(good / "gemini")
    assert k.with_found({"default/goose": mine}, ["goose"], path=str(good)) == {"default/goose": mine}
    with pytest.raises(k.AgentNotFound):
        k.with_found({}, ["goose"], path=str(good))


# ---- the command line ------------------------------------------------------------------------------
def kit(*argv: str, path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(path), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", "agents", *argv], capture_output=True, text=True,
                          timeout=60, env=env, stdin=subprocess.DEVNULL)


def test_cli_json_lists_every_agent_with_the_documented_fields(good: Path) -> None:
    done = kit("--json", path=good)
    assert (done.returncode, done.stderr) == (0, "")
    rows = json.loads(done.stdout)
    assert [row["id"] for row in rows] == [agent.id for agent in k.KNOWN]
    assert all(list(row) == FIELDS for row in rows)
    qwen = next(row for row in rows if row["id"] == "qwen-code")
    assert qwen == {"id": "qwen-code", "name": "Qwen Code", "found": True, "path": str(good / "qwen"),
                    "version": "9.8.7", "version_error": None,
                    "command": [str(good / "qwen"), "--acp", "--approval-mode", "default"],
                    "install": "npm install -g @qwen-code/qwen-code", "homepage": "https://github.com/QwenLM/qwen-code"}
    goose = next(row for row in rows if row["id"] == "goose")
    assert (goose["found"], goose["path"], goose["command"]) == (False, None, ["goose", "acp"])


def test_cli_table_shows_found_versions_commands_and_install_hints(good: Path) -> None:
    done = kit("qwen-code", "goose", "opencode", path=good)
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["ID", "ON", "PATH", "VERSION", "COMMAND"]
    assert lines[1].split() == ["qwen-code", "yes", "9.8.7", str(good / "qwen"), "--acp", "--approval-mode", "default"]
    assert lines[2].split() == ["goose", "no", "-", "goose", "acp"]
    assert lines[3].strip() == f"install: {k.known('goose').install}"
    assert lines[4].split()[:4] == ["opencode", "yes", "-", str(good / "opencode")]
    assert lines[5].strip().startswith("no version: ") and "exited with code 3" in lines[5]
    assert lines[6] == "2 of 3 found; a board config can name a found agent by its id."


def test_cli_exits_0_when_nothing_is_found(tmp_path: Path) -> None:
    done = kit(path=tmp_path)
    assert done.returncode == 0 and done.stdout.splitlines()[-1].startswith(f"0 of {len(k.KNOWN)} found")
    assert kit("--json", path=tmp_path).returncode == 0


def test_cli_timeout_bounds_a_hanging_agent(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    fake(folder, "goose", HANG)
    done = kit("goose", "--json", "--timeout", str(TINY), path=folder)
    assert done.returncode == 0
    [row] = json.loads(done.stdout)
    assert row["found"] and row["version"] is None and "did not answer" in row["version_error"]


@pytest.mark.parametrize(("argv", "text"), [
    (["claude"], "no known ACP agent 'claude'; known ids: claude-acp,"),
    (["--timeout", "0"], "timeout must be a number of seconds above 0"),
    (["--timeout", "soon"], "timeout must be a number of seconds above 0"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_cli_mistakes_are_one_line_exit_2(tmp_path: Path, argv: list[str], text: str) -> None:
    done = kit(*argv, path=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("mcp-agent-kit") and text in done.stderr


# ---- the real Qwen Code ----------------------------------------------------------------------------
def test_the_installed_qwen_code_is_found_with_its_real_version() -> None:
    from .real_qwen import VERSION

    folder = Path(os.environ.get("ACP_QWEN_DIR") or ROOT / ".venv-acp-qwen") / "node_modules" / ".bin"
    if not (folder / "qwen").is_file():
        pytest.skip("Qwen Code is not installed here (tests/acp/test_real_qwen.py installs it; .ci/run sets "
                    "ACP_QWEN_DIR)")
    path = os.pathsep.join([str(folder), os.environ.get("PATH", "")])  # its launcher is `#!/usr/bin/env node`
    [row] = k.found_agents(path=path, agents=[k.known("qwen-code")], timeout=30)
    assert (row.found, row.path, row.version, row.version_error) == (True, str(folder / "qwen"), VERSION, None)
    assert k.agent_entry("qwen-code", path=path)["acp"]["command"] == str(folder / "qwen")


# ---- docs/agents.md --------------------------------------------------------------------------------
DOC = ROOT / "docs" / "agents.md"


def doc_rows(first: str) -> list[list[str]]:
    """The cells of the doc's table whose header starts with `first` (`\\|` inside a cell kept as `|`)."""
    rows: list[list[str]] = []
    inside = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"| {first} |"):
            inside = True
        elif inside and line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip().replace("\0", "|") for cell in line.replace("\\|", "\0").strip("|").split("|")])
        elif inside and not line.startswith("|"):
            break
    return rows


def test_the_doc_table_is_the_known_table() -> None:
    rows = doc_rows("id")
    assert [row[0] for row in rows] == [f"`{agent.id}`" for agent in k.KNOWN]
    for row, agent in zip(rows, k.KNOWN, strict=True):
        assert row[1] == agent.name
        assert row[2] == f"`{' '.join([agent.program, *agent.args])}`"
        assert row[3] == f"`{agent.install}`"


def test_the_doc_json_samples_have_the_real_shapes() -> None:
    blocks = [json.loads(body) for body in re.findall(r"^```json\n(.*?)^```$", DOC.read_text(encoding="utf-8"),
                                                       re.S | re.M)]
    listing, entry = blocks
    assert all(list(row) == FIELDS for row in listing)
    goose = k.FoundAgent(k.known("goose")).as_json()
    assert listing[1] == goose
    assert [row[0].strip("`") for row in doc_rows("field")] == FIELDS
    spec = parse_agents({"agents": {"qwen-code": entry}})["default/qwen-code"]
    assert (spec.command, list(spec.args)) == (listing[0]["path"], list(k.known("qwen-code").args))
