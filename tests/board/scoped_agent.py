"""A scripted ACP agent (no model) for the board's task-tools tests: each turn connects, as an MCP client (the kit's
stdio client), to the `board` server the session was handed in session/new and uses its tools.

Prompt "ask" (the default): ask_user with SCHEMA, then report_progress, then create_subtask (blocked by this task),
then the reply `answered: <the answer as JSON>; subtask <id>`. Prompt "choose": ask_user with options red and green,
then the reply `chose: <id>`. Any tool's error result ends the turn with `tool error: <its text>`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

from mcp_agent_kit.acp.agent import Agent, Turn
from mcp_agent_kit.client import Client

SCHEMA = {"type": "object", "required": ["color"], "additionalProperties": False,
          "properties": {"color": {"enum": ["red", "green"]}, "note": {"type": "string"}}}
PROGRESS = "asked the person; creating the follow-up"
SUBTASK = "paint the shed in the chosen color"

agent = Agent("scoped-test-agent", "1.0.0")


class ToolFailed(Exception):
    pass


def board_client(turn: Turn) -> Client:
    server = next(s for s in turn.session.mcp_servers if s.get("name") == "board")
    env = {pair["name"]: pair["value"] for pair in server.get("env", [])}
    return Client.stdio(server["command"], server["args"], env=env, request_timeout=300.0)


def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = client.call_tool(tool, arguments, timeout=300.0)
    if result.get("isError"):
        raise ToolFailed(" ".join(item.get("text", "") for item in result.get("content", [])))
    structured: dict[str, Any] = result["structuredContent"]
    return structured


def ask(client: Client, turn: Turn) -> None:
    answer = call(client, "ask_user", {"message": "Which color?", "schema": SCHEMA})["answer"]
    call(client, "report_progress", {"message": PROGRESS})
    subtask = call(client, "create_subtask", {"prompt": SUBTASK, "blocked_by_this": True})
    turn.say(f"answered: {json.dumps(answer, sort_keys=True)}; subtask {subtask['id']}")


def choose(client: Client, turn: Turn) -> None:
    answer = call(client, "ask_user", {"message": "Red or green?", "options": ["red", "green"]})["answer"]
    turn.say(f"chose: {answer}")


SCRIPTS = {"ask": ask, "choose": choose}


@agent.prompt
def on_prompt(turn: Turn) -> None:
    script = SCRIPTS.get(turn.text.strip(), ask)
    with board_client(turn) as client:
        try:
            script(client, turn)
        except ToolFailed as exc:
            turn.say(f"tool error: {exc}")


if __name__ == "__main__":
    agent.run()
