"""A pause is a state, not an end (issue #25): a turn paused on the echo agent's permission question keeps its
`max_concurrent` slot while the agent holds its prompt open, its answer goes straight to the waiting agent (never
behind a queued turn), and every word the agent said before asking reaches the MCP client before the question.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_agent_kit.gateway.acp_backend import AcpBackend
from tests import net
from tests.agents.conftest import TASKS_META, GatewayRun
from tests.agents.test_agents_acp import AGENT, _config
from tests.agents.test_agents_curl import poll, start_task
from tests.agents.test_agents_sdk import Client, types
from tests.agents.test_agents_sdk import _answer as _sdk_answer

TURNS = 50


def _answer(run: GatewayRun, task: str, key: str) -> None:
    reply = run.rpc("tasks/update", {"taskId": task, "_meta": TASKS_META,
                                      "inputResponses": {key: {"action": "accept",
                                                               "content": {"response": "allow-once"}}}})
    assert "result" in reply, reply


def test_a_paused_turn_keeps_its_slot_and_its_answer_passes_the_queue(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    config = _config(tmp_path, "ask")
    config["agents"]["dev/echo"]["acp"]["max_concurrent"] = 1
    run = gateway_of(config)
    assert run.gateway.agents is not None
    backend = run.gateway.agents.backends["dev/echo"]
    assert isinstance(backend, AcpBackend)
    any_status = ("working", "input_required", "completed", "failed", "cancelled")
    statuses_when_b_started: list[str] = []
    start_turn = backend.start_turn

    def recording(session: str, message: str, *args: Any) -> None:
        if message == "turns?":  # turn B reaches the agent: how is A now?
            statuses_when_b_started.append(poll(run, first, until=any_status)["status"])
        start_turn(session, message, *args)

    backend.start_turn = recording  # type: ignore[method-assign]
    first = start_task(run, {"agent": AGENT, "message": "ship it"})
    paused = poll(run, first, until=("input_required",))
    second = start_task(run, {"agent": AGENT, "message": "turns?"})  # another session: it must wait for A
    queued = poll(run, second, until=any_status)
    assert (queued["status"], queued["statusMessage"]) == ("working", "queued (position 1)"), queued
    assert run.call("list_agents", {})["structuredContent"]["agents"][0]["running"] == 1
    _answer(run, first, next(iter(paused["inputRequests"])))
    done = poll(run, first, until=("completed", "failed", "cancelled"))
    assert done["result"]["structuredContent"]["text"] == "Echo: ship it\nFile: written.", done
    later = poll(run, second, until=("completed", "failed", "cancelled"))
    assert later["status"] == "completed", later
    assert statuses_when_b_started == ["completed"]  # B reached the agent only once A was over
    assert (tmp_path / "repo" / "echo.txt").read_text() == "ship it\n"


async def _said_before_asked(url: str, turns: int) -> list[list[str]]:
    """`turns` blocking invoke_agent calls in one session, each answered by elicitation: per turn, what the
    client had heard (progress, then "ASKED" when the question came)."""
    heard: list[str] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        heard.append("ASKED")
        return types.ElicitResult(action="accept", content={"response": "allow-once"})

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    rounds: list[list[str]] = []
    session: str | None = None
    async with Client(url, elicitation_callback=on_elicit) as client:
        for n in range(turns):
            heard.clear()
            where: dict[str, Any] = {"agent": AGENT} if session is None else {"session_id": session}
            result = await client.call_tool("invoke_agent", {**where, "message": f"alpha beta gamma {n}"},
                                            progress_callback=on_progress)
            assert result.structured_content is not None and not result.is_error, result
            session = result.structured_content["session_id"]
            rounds.append(list(heard))
    return rounds


def test_the_words_said_before_a_question_reach_the_mcp_client_before_it(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "ask"))
    rounds = asyncio.run(_said_before_asked(run.url, TURNS))
    for n, heard in enumerate(rounds):
        assert heard.count("ASKED") == 1, (n, heard)
        before = "".join(h for h in heard[:heard.index("ASKED")] if not h.startswith(("Plan:", "Tool:")))
        assert before == f"Echo: alpha beta gamma {n}", (n, heard)


def test_an_a2a_turn_paused_on_a_question_keeps_its_slot_too(
        agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of({"agents": {"kagent/my-first-agent": {"a2a": agent_url, "max_concurrent": 1}}})
    agent = {"namespace": "kagent", "name": "my-first-agent"}
    first = start_task(run, {"agent": agent, "message": "Which database?"})
    paused = poll(run, first, until=("input_required",))
    second = start_task(run, {"agent": agent, "message": "What is 2+2?"})
    queued = poll(run, second, until=("working", "completed"))
    assert queued["statusMessage"] == "queued (position 1)", queued
    (key, request), = paused["inputRequests"].items()
    reply = run.rpc("tasks/update", {"taskId": first, "_meta": TASKS_META,
                                      "inputResponses": {key: _sdk_answer(request, "accept")}})
    assert "result" in reply, reply
    done = poll(run, first, until=("completed", "failed"))
    assert done["result"]["structuredContent"]["text"] == "You chose PostgreSQL as the database to use."
    assert poll(run, second, until=("completed", "failed"))["result"]["structuredContent"]["text"] == "4"


def test_a_task_mode_turn_tells_the_words_said_before_its_question_first_over_many_turns(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    """Task-augmented invoke_agent, TURNS times in one session: whenever a turn's task view changes (what
    `notifications/tasks` pushes and tasks/get shows), a paused one already holds every word the agent said
    before asking; the turn's event log has them before its input_required; the answer resumes the same turn."""
    run = gateway_of(_config(tmp_path, "ask"))
    assert run.gateway.agents is not None
    changes: list[tuple[str, str, str]] = []  # (turn id, status, the reply so far) at each change
    remove = run.gateway.agents.add_listener("turn_changed",
                                             lambda live: changes.append((live.id, live.status, live.view.tail)))
    try:
        session: str | None = None
        for n in range(TURNS):
            where: dict[str, Any] = {"agent": AGENT} if session is None else {"session_id": session}
            asked_before = sum(status == "input_required" for _, status, _ in changes)
            task = start_task(run, {**where, "message": f"alpha beta gamma {n}"})
            paused = poll(run, task, until=("input_required", "completed", "failed"))
            assert paused["status"] == "input_required", (n, paused)
            # the row is written before the change is announced: wait for this turn's announcement
            net.until(lambda before=asked_before: sum(s == "input_required" for _, s, _ in changes) > before,
                      "the paused turn's change to be announced")
            turn = next(t for t, status, _ in reversed(changes) if status == "input_required")
            first_pause = next(tail for t, status, tail in changes if t == turn and status == "input_required")
            said = f"Echo: alpha beta gamma {n}"
            assert said in first_pause, (n, first_pause)
            logged = "".join(e["text"] for _, e in run.store.turn_events(turn, 0, 1000) if "text" in e)
            assert logged.startswith(said), (n, logged)
            _answer(run, task, next(iter(paused["inputRequests"])))
            done = poll(run, task, until=("completed", "failed", "cancelled"))
            assert done["result"]["structuredContent"]["text"] == f"{said}\nFile: written.", (n, done)
            session = done["result"]["structuredContent"]["session_id"]
    finally:
        remove()
