"""A small A2A v1.0 agent with no language model, on the official a2a-sdk server (a2a-sdk[http-server]).

It remembers one number per contextId ("What is 2+2?" -> "4", then "Multiply that by 10." ->
"40"), honours `referenceTaskIds` (a new context whose first message points at earlier tasks
starts from the number those tasks ended with), and asks questions: "database" asks one question
with choices through kagent's HITL extension (`ask_user_request`), "deploy" asks to approve a tool
(`tool_approval_request`), "name" asks a plain question. "count to N" streams artifact updates,
"wait" works until it is cancelled, "fail" fails. Run it:

    python examples/a2a_fixture_agent.py --port 9999

and point a gateway at it: {"agents": {"kagent/my-first-agent": {"a2a": "http://127.0.0.1:9999"}}}.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from typing import Any

from a2a.helpers import new_task, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, TaskState
from google.protobuf.json_format import MessageToDict

HITL = "https://kagent.dev/extensions/hitl/v1"
_SUM = re.compile(r"(-?\d+)\s*([-+*x])\s*(-?\d+)")
_TIMES = re.compile(r"multiply that by\s*(-?\d+)", re.IGNORECASE)
_COUNT = re.compile(r"count to\s*(\w+)", re.IGNORECASE)
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
QUESTIONS: dict[str, dict[str, Any]] = {
    "database": {"type": "ask_user_request", "id": "q-db", "questions": [
        {"question": "Which database should we use?", "choices": ["PostgreSQL", "MySQL"], "multiple": False}]},
    "deploy": {"type": "tool_approval_request", "tools": [
        {"id": "t-1", "call_id": "call-1", "name": "deploy", "args": {"env": "prod"}}]},
}
PROMPTS = {"database": "Which database should we use?", "deploy": "Approval is required for tool(s): deploy",
           "name": "What is your name?"}


def _text(message: Message | None) -> str:
    return "".join(part.text for part in message.parts if part.HasField("text")) if message else ""


def _metadata(message: Message | None) -> dict[str, Any]:
    return MessageToDict(message.metadata) if message is not None and message.HasField("metadata") else {}


class FixtureExecutor(AgentExecutor):
    """The agent's logic (see the module docstring)."""

    def __init__(self) -> None:
        self.memory: dict[str, float] = {}  # contextId -> the last number
        self.after: dict[str, float] = {}  # taskId -> the number its turn ended with
        self.asked: dict[str, str] = {}  # taskId -> which question it is waiting on

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            await event_queue.enqueue_event(new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED,
                                                     history=[context.message] if context.message else []))
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        said = _text(context.message)
        refs = list(context.message.reference_task_ids) if context.message else []
        if refs and context_id not in self.memory and refs[-1] in self.after:
            self.memory[context_id] = self.after[refs[-1]]  # a fork: continue from the referenced history
        pending = self.asked.pop(task_id, None)
        if pending is not None:
            reply = self._answered(pending, said, _metadata(context.message).get(HITL, {}))
            return await self._finish(updater, task_id, context_id, reply)
        for word in ("database", "deploy", "name"):
            if word in said.lower():
                self.asked[task_id] = word
                message = new_text_message(PROMPTS[word], context_id=context_id, task_id=task_id)
                if word in QUESTIONS:
                    message.metadata.update({HITL: QUESTIONS[word]})
                    message.extensions.append(HITL)
                return await updater.requires_input(message)
        if "fail" in said.lower():
            return await updater.failed(new_text_message("I cannot do that.", context_id=context_id, task_id=task_id))
        count = _COUNT.search(said)
        if count:
            word = count.group(1).lower()
            total = min(int(word), 20) if word.isdigit() else _WORDS.get(word, 3)
            for n in range(1, total + 1):
                await updater.add_artifact([new_text_part(", ".join(map(str, range(1, n + 1))))],
                                           artifact_id="count", name="count")
                await asyncio.sleep(0.05)
            self._remember(task_id, context_id)
            return await updater.complete()
        if "wait" in said.lower():
            await updater.update_status(TaskState.TASK_STATE_WORKING,
                                        new_text_message("waiting for a cancel", context_id=context_id,
                                                         task_id=task_id))
            for _ in range(600):
                await asyncio.sleep(0.05)
            return await self._finish(updater, task_id, context_id, "done waiting")
        await self._finish(updater, task_id, context_id, self._arithmetic(context_id, said))

    def _arithmetic(self, context_id: str, said: str) -> str:
        times = _TIMES.search(said)
        if times and context_id in self.memory:
            value = self.memory[context_id] * float(times.group(1))
        elif (found := _SUM.search(said)) is not None:
            a, op, b = float(found.group(1)), found.group(2), float(found.group(3))
            value = {"+": a + b, "-": a - b, "*": a * b, "x": a * b}[op]
        elif times:
            return "Multiply what? I have no number in this conversation yet."
        else:
            return f"You said: {said}"
        self.memory[context_id] = value
        return f"{value:g}"

    def _answered(self, pending: str, said: str, hitl: dict[str, Any]) -> str:
        if pending == "database":
            answers = hitl.get("answers") or [{"answer": [said]}]
            choice = ", ".join(answers[0].get("answer") or [said])
            if choice.startswith("The user"):
                return "Understood: no database was chosen."
            return f"You chose {choice} as the database to use."
        if pending == "deploy":
            approved = any(a.get("approved") for a in hitl.get("approvals") or [])
            return "Deployed to prod." if approved else "Deployment skipped: the tool was not approved."
        return "Understood: you did not say." if said.startswith("The user") else f"Nice to meet you, {said}."

    def _remember(self, task_id: str, context_id: str) -> None:
        if context_id in self.memory:
            self.after[task_id] = self.memory[context_id]  # what a fork pointing at this task starts from

    async def _finish(self, updater: TaskUpdater, task_id: str, context_id: str, reply: str) -> None:
        self._remember(task_id, context_id)
        await updater.complete(new_text_message(reply, context_id=context_id, task_id=task_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.asked.pop(context.task_id or "", None)
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def make_app(host: str, port: int) -> Any:
    """The Starlette app: the card at /.well-known/agent-card.json, JSON-RPC at /a2a."""
    from starlette.applications import Starlette

    card = AgentCard(
        name="fixture-agent", description="Remembers a number per conversation and asks questions",
        version="1.0.0", default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[AgentInterface(url=f"http://{host}:{port}/a2a", protocol_binding="JSONRPC",
                                             protocol_version="1.0")],
        skills=[AgentSkill(id="arithmetic", name="Arithmetic", description="Adds and multiplies numbers",
                           tags=["math"])],
    )
    handler = DefaultRequestHandler(agent_executor=FixtureExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/a2a")])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="a small A2A agent with no language model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999)
    args = parser.parse_args()
    uvicorn.run(make_app(args.host, args.port), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
