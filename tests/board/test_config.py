"""board.config: the CONFIG document read into a BoardConfig; every mistake is one line naming the key and the fix."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.config import ConfigError, WorkspaceSettings, load_config, parse_config

ACP = {"acp": {"command": sys.executable, "args": ["agent.py"]}}


def test_a_full_config_is_read_with_its_defaults_filled_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOARD_SECRET", "s3cret")
    monkeypatch.setenv("OTHER_SECRET", "0ther")
    config = parse_config({
        "agents": {"echo": {**ACP, "max_concurrent": 2}, "team/other": {"acp": {"command": "other", "approve": "all",
                                                                                "max_concurrent": 1}}},
        "board": {"max_concurrent": 3, "agent": "echo", "author": "Ada <ada@example.com>",
                  "workspace": {"base": "main", "copy": [".env"], "setup": "make", "setupTimeout": 5},
                  "webhooks": [{"url": "https://hooks.example/board", "secretEnv": "BOARD_SECRET",
                                "events": ["task.review"]},
                               {"url": "http://localhost:9/x", "secretEnv": "OTHER_SECRET"}]},
        "mcpServers": {"files": {"command": "files-server", "args": ["--root", "."]}}})
    assert set(config.agents) == {"echo", "team/other"} and config.default_agent == "echo"
    assert config.agents["team/other"].approve == "all" and config.agents["echo"].command == sys.executable
    assert dict(config.agent_limits) == {"echo": 2, "team/other": 1}
    assert config.agents["echo"].timeout == 3600.0
    assert config.max_concurrent == 3 and config.author == "Ada <ada@example.com>"
    assert config.workspace == WorkspaceSettings("main", (".env",), "make", 5.0, "worktree")
    first, second = config.webhooks  # board.webhooks.Webhook: the secret read from secretEnv at load
    assert (first.url, first.secret, first.events) == ("https://hooks.example/board", b"s3cret",
                                                       frozenset({"task.review"}))
    assert (second.secret, second.events) == (b"0ther", frozenset())  # no events named: every event
    assert second.wants("task.done") and not first.wants("task.done")
    assert config.mcp_servers == ({"name": "files", "command": "files-server", "args": ["--root", "."], "env": []},)


def test_one_agent_is_the_default_and_an_agent_without_its_own_limit_has_none() -> None:
    config = parse_config({"agents": {"echo": {**ACP, "timeout": 30}}, "mcpServers": [{"name": "s", "command": "srv"}]})
    assert config.agents["echo"].timeout == 30.0
    assert config.default_agent == "echo" and dict(config.agent_limits) == {}
    assert config.max_concurrent == 4 and config.workspace.mode == "worktree" and config.webhooks == ()
    assert config.mcp_servers == ({"name": "s", "command": "srv", "args": [], "env": []},)


def test_a_found_agent_is_named_by_its_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program = tmp_path / "qwen"
    program.write_text("#!/bin/sh\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    config = parse_config({"board": {"agent": "qwen-code"}})
    assert config.default_agent == "qwen-code" and config.agents["qwen-code"].command == str(program)
    assert parse_config({"agents": {"qwen-code": {}}}).agents["qwen-code"].args[0] == "--acp"


def test_load_config_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "board.json"
    path.write_text(json.dumps({"agents": {"echo": ACP}}))
    assert load_config(path).default_agent == "echo"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="is not JSON"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read the board config"):
        load_config(tmp_path / "missing.json")


MISTAKES: list[tuple[Any, str]] = [
    ([], "the board config must be an object"),
    ({"agent": {}}, "unknown keys ['agent']"),
    ({"agents": {"far": {"a2a": "https://agent.example"}}}, "A2A agents are not supported by the board yet"),
    ({"agents": {"nope": {}}}, "agent 'nope': "),
    ({"agents": {"echo": {"acp": {}}}}, 'acp needs a "command" string'),
    ({"agents": {"echo": ACP}, "board": {"agent": "ghost-agent"}}, "agent 'ghost-agent'"),
    ({"agents": {"echo": ACP}, "board": {"max_concurrent": 0}}, '"board": max_concurrent must be a whole number'),
    ({"agents": {"echo": ACP}, "board": {"limit": 1}}, '"board": unknown keys'),
    ({"agents": {"echo": ACP}, "board": {"author": "nobody"}}, "is not 'Name <email>'"),
    ({"agents": {"echo": ACP}, "board": {"workspace": {"mode": "copy"}}}, "workspace mode must be one of"),
    ({"agents": {"echo": ACP}, "board": {"workspace": {"copy": ["../secrets"]}}}, "must be relative"),
    ({"agents": {"echo": ACP}, "board": {"workspace": {"copy": ".env"}}}, "copy must be a list of globs"),
    ({"agents": {"echo": ACP}, "board": {"workspace": {"setupTimeout": 0}}}, "setupTimeout must be seconds"),
    ({"agents": {"echo": ACP}, "board": {"workspace": {"base": "-x"}}}, "is not a git revision"),
    ({"agents": {"echo": ACP}, "board": {"webhooks": {}}}, "webhooks must be a list"),
    ({"agents": {"echo": ACP}, "board": {"webhooks": [{"url": "ftp://x", "secretEnv": "HOOK_SECRET"}]}},
     "webhooks[0]: webhook url: must be an http:// or https:// URL"),
    ({"agents": {"echo": ACP}, "board": {"webhooks": [{"url": "http://x", "secretEnv": "HOOK_SECRET",
                                                       "events": ["task.eaten"]}]}},
     "webhook events: unknown task.eaten"),
    ({"agents": {"echo": ACP}, "board": {"webhooks": [{"url": "http://x"}]}}, "webhooks[0].secretEnv is required"),
    ({"agents": {"echo": ACP}, "board": {"webhooks": [{"url": "http://x", "secretEnv": "NO_SUCH_SECRET"}]}},
     '"board": webhooks[0].secretEnv: environment variable NO_SUCH_SECRET is not set: export NO_SUCH_SECRET'),
    ({"agents": {"echo": ACP}, "mcpServers": "x"}, '"mcpServers" must be a list'),
    ({"agents": {"echo": ACP}, "mcpServers": [{"name": "s"}]}, 'give "command" (stdio)'),
]


@pytest.mark.parametrize(("document", "problem"), MISTAKES, ids=[p for _, p in MISTAKES])
def test_a_mistake_is_one_line_naming_it(document: Any, problem: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no known agent is found here
    monkeypatch.setenv("HOOK_SECRET", "s3cret")
    monkeypatch.delenv("NO_SUCH_SECRET", raising=False)
    with pytest.raises(ConfigError) as raised:
        parse_config(document)
    message = str(raised.value)
    assert problem in message and "\n" not in message


def test_without_agents_the_board_has_the_known_agents_found_on_path(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert load_config(None).agents == {} and load_config(None).default_agent is None
    for program in ("gemini", "goose"):
        (tmp_path / program).write_text("#!/bin/sh\n")
        (tmp_path / program).chmod(0o755)
    config = load_config(None)
    assert sorted(config.agents) == ["gemini", "goose"] and config.default_agent is None
