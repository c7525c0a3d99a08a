"""Session retention (`agentSessions.maxAgeDays`): unused sessions are deleted with their turns, checkpoints and
idempotency keys, at start and periodically; a running turn's session never is. The clock is injected."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.gateway.agents_config import DAY_S, parse_retention
from mcp_agent_kit.gateway.config import ConfigError
from tests.agents.conftest import TASKS_META, GatewayRun
from tests.agents.test_agents_acp import AGENT, _config
from tests.agents.test_agents_curl import poll, start_task


class Clock:
    """Epoch seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, days: float) -> None:
        self.now += days * DAY_S


def _ids(run: GatewayRun) -> set[str]:
    return {s["id"] for s in run.call("list_sessions", {})["structuredContent"]["sessions"]}


def test_unused_sessions_are_swept_and_a_running_one_is_kept(tmp_path: Path,
                                                             gateway_of: Callable[..., GatewayRun]) -> None:
    clock, store = Clock(), str(tmp_path / "kept.sqlite")
    options: dict[str, Any] = {"max_age": parse_retention({"agentSessions": {"maxAgeDays": 30}}), "clock": clock}
    run = gateway_of(_config(tmp_path, "all"), store, agent_options=options)
    old = run.call("invoke_agent", {"agent": AGENT, "message": "old", "message_id": "m-old"})["structuredContent"]
    made = run.call("create_session_checkpoint", {"session_id": old["session_id"],
                                                  "expected_head_task_id": old["task_id"], "request_id": "cp-old"})
    assert not made["isError"], made
    running = start_task(run, {"agent": AGENT, "message": "/wait"})
    busy = poll(run, running, until=("working",))
    assert run.gateway.agents is not None
    service = run.gateway.agents
    clock.advance(29)
    assert service.sweep() == [] and old["session_id"] in _ids(run)
    clock.advance(2)
    assert service.sweep() == [old["session_id"]]  # 31 days unused; the session whose turn runs stays
    assert old["session_id"] not in _ids(run) and len(_ids(run)) == 1
    gone = run.call("invoke_agent", {"session_id": old["session_id"], "message": "hi"})
    assert gone["isError"] and "unknown session" in gone["content"][0]["text"]
    assert run.call("fork_session", {"checkpoint_id": made["structuredContent"]["checkpoint"]["id"]})["isError"]
    # the idempotency keys went with it: the same message_id starts a new session, request_id a new checkpoint
    fresh = run.call("invoke_agent", {"agent": AGENT, "message": "new", "message_id": "m-old"})["structuredContent"]
    assert fresh["session_id"] != old["session_id"]
    again = run.call("create_session_checkpoint", {"session_id": fresh["session_id"],
                                                   "expected_head_task_id": fresh["task_id"], "request_id": "cp-old"})
    assert not again["isError"] and again["structuredContent"]["checkpoint"]["session_id"] == fresh["session_id"]
    run.rpc("tasks/cancel", {"taskId": running, "_meta": TASKS_META})
    assert poll(run, running, until=("cancelled",))["status"] == "cancelled"
    assert busy["status"] == "working"
    run.close()
    later = Clock()
    later.advance(31)  # a gateway started a month later sweeps at start
    restarted = gateway_of(_config(tmp_path, "all"), store, agent_options={**options, "clock": later})
    assert _ids(restarted) == set()
    assert restarted.store.turns(fresh["session_id"]) == []


def test_without_a_retention_nothing_is_swept(tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    clock = Clock()
    run = gateway_of(_config(tmp_path, "all"), agent_options={"clock": clock})
    first = run.call("invoke_agent", {"agent": AGENT, "message": "stay"})["structuredContent"]
    clock.advance(10_000)
    assert run.gateway.agents is not None and run.gateway.agents.sweep() == []
    assert _ids(run) == {first["session_id"]}


@pytest.mark.parametrize(("section", "says"), [
    ([], "must be an object"), ({"maxAge": 3}, "only \"maxAgeDays\""), ({"maxAgeDays": 0}, "maxAgeDays must be"),
    ({"maxAgeDays": "30"}, "maxAgeDays must be"), ({"maxAgeDays": True}, "maxAgeDays must be"),
])
def test_bad_retention_names_the_key(section: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_retention({"agentSessions": section})
    assert parse_retention({}) is None and parse_retention({"agentSessions": {"maxAgeDays": 1}}) == DAY_S


def test_the_documented_retention_parses() -> None:
    from tests.agents.test_agents_docs import DOC
    from tests.test_docs import blocks

    (documented,) = (json.loads(b.body) for b in blocks(DOC.read_text(encoding="utf-8"))
                     if b.lang == "json" and '"agentSessions"' in b.body)
    assert parse_retention(documented) == 30 * DAY_S
