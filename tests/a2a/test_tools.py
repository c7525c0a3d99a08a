"""ToolAgent through the engine (no HTTP): routing, validation, results, errors, elicitation, progress."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mcp_agent_kit.a2a.engine import TaskEngine
from mcp_agent_kit.a2a.protocol import A2AError
from mcp_agent_kit.a2a.toolagent import ToolAgent, coerce_integers

from . import agents
from .conftest import user_message


@pytest.fixture
def engine() -> TaskEngine:
    return TaskEngine(ToolAgent(agents.server))


def send(engine: TaskEngine, *parts: dict[str, Any], owner: str = "", **extra: Any) -> dict[str, Any]:
    result = engine.send(owner, {"message": user_message(*parts, **extra)})
    assert isinstance(result, dict)
    return result


def skill(name: str, **arguments: Any) -> dict[str, Any]:
    return {"data": {"skill": name, "arguments": arguments}}


def test_integral_floats_become_integers(engine: TaskEngine) -> None:
    task = send(engine, skill("add", a=2.0, b=40.0))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"data": {"sum": 42}, "mediaType": "application/json"}]


def test_coerce_nested() -> None:
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}}
    assert coerce_integers(schema, {"xs": [1.0, 2.5], "other": 3.0}) == {"xs": [1, 2.5], "other": 3.0}


def test_non_integral_float_is_a_field_violation(engine: TaskEngine) -> None:
    with pytest.raises(A2AError) as info:
        send(engine, skill("add", a=2.5, b=1))
    assert info.value.code == -32602
    assert info.value.violations[0][0] == "arguments.a"


def test_unknown_skill_and_ambiguous_message(engine: TaskEngine) -> None:
    with pytest.raises(A2AError, match="names no skill"):
        send(engine, skill("nope"))
    with pytest.raises(A2AError, match="name a skill"):
        send(engine, {"text": "add 2 and 3"})


def test_metadata_skill_id_with_json_text(engine: TaskEngine) -> None:
    task = send(engine, {"text": '{"a": 1, "b": 2}'}, metadata={"skillId": "add"})["task"]
    assert task["artifacts"][0]["parts"][0]["data"] == {"sum": 3}


def test_tool_error_fails_the_task_with_its_text(engine: TaskEngine) -> None:
    task = send(engine, skill("broken", reason="on purpose"))["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["parts"] == [{"text": "broken: on purpose"}]
    assert task["status"]["message"]["role"] == "ROLE_AGENT"


def test_media_results_become_raw_and_url_parts(engine: TaskEngine) -> None:
    task = send(engine, skill("picture"))["task"]
    parts = task["artifacts"][0]["parts"]
    assert parts[0] == {"raw": base64.b64encode(b"\x89PNG").decode(), "mediaType": "image/png"}
    assert parts[1] == {"url": "https://example.com/p.png", "filename": "p.png", "mediaType": "image/png"}


def test_missing_argument_asks_then_continues_with_text(engine: TaskEngine) -> None:
    task = send(engine, skill("add", a=1))["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "b" in task["status"]["message"]["parts"][0]["text"]
    done = send(engine, {"text": "41"}, taskId=task["id"])["task"]
    assert done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"][0]["data"] == {"sum": 42}
    # every message is in history, in order: ask, question, answer, (no status message on completion)
    roles = [m["role"] for m in done["history"]]
    assert roles == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]
    assert all(m["taskId"] == task["id"] and m["contextId"] == task["contextId"] for m in done["history"])


def test_elicitation_becomes_input_required(engine: TaskEngine) -> None:
    task = send(engine, skill("greet"))["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    parts = task["status"]["message"]["parts"]
    assert parts[0] == {"text": "What is your name?"}
    assert parts[1]["data"]["requestedSchema"]["properties"] == {"name": {"type": "string"}}
    done = send(engine, {"data": {"name": "Ada"}}, taskId=task["id"])["task"]
    # `-> str` infers an outputSchema, so the text comes with its structured {"result": ...} too
    assert {"text": "hello Ada"} in done["artifacts"][0]["parts"]
    declined = send(engine, skill("greet"))["task"]
    done = send(engine, {"text": "decline"}, taskId=declined["id"])["task"]
    assert {"text": "no name given"} in done["artifacts"][0]["parts"]


def test_return_immediately_then_progress_and_completion(engine: TaskEngine) -> None:
    agents.GATE.clear()
    params = {"message": user_message(skill("wait", steps=2)), "configuration": {"returnImmediately": True}}
    first = engine.send("", params)
    assert isinstance(first, dict)
    task_id = first["task"]["id"]
    assert first["task"]["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    agents.GATE.set()
    engine.wait_idle(task_id)
    done = engine.get("", {"id": task_id})
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    progress = [m["parts"][0]["text"] for m in done["history"] if m["role"] == "ROLE_AGENT"]
    assert progress == ["progress 1/2: step", "progress 2/2: step"]


def test_skills_on_the_card() -> None:
    skills = {s["id"]: s for s in ToolAgent(agents.server).skills()}
    assert set(skills) == {"add", "broken", "picture", "greet", "wait"}
    assert skills["add"]["tags"] == ["mcp-tool"]
    assert skills["add"]["examples"] == ['{"skill":"add","arguments":{"a":1,"b":1}}']
    assert "a (integer, required)" in skills["add"]["description"]


def test_a_wrapped_primitive_result_travels_as_its_text() -> None:
    from mcp_agent_kit import Server

    server = Server("wrapped", "1.0")

    @server.tool(read_only=True)
    def double(n: int) -> int:
        """Use when a number must be doubled. Do not use for text."""
        return n * 2

    assert server.get_tool("double").wire["outputSchema"]["required"] == ["result"]  # type: ignore[union-attr]
    agent = ToolAgent(server)
    task = send(TaskEngine(agent), skill("double", n=21))["task"]
    assert task["artifacts"][0]["parts"] == [{"text": "42"}]
    assert "outputSchema" not in agent.extensions()[0]["params"]["tools"]["double"]
