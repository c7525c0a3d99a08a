"""gateway.a2a_backend: an A2A v1.0 agent as an AgentBackend — a session is a contextId, a turn is a task.

The card is fetched at start and again by refresh() (the gateway refreshes it in the background);
a card that cannot be had makes the agent `ready: false` with the reason, and nothing else. A turn
is one SendStreamingMessage (with the kagent HITL extension activated) read on its own thread:
status messages and replaced artifacts become status lines, an appended artifact piece is streamed
as that piece only, INPUT_REQUIRED becomes a Question, and the end
state with its text (the final status message's text plus the turn's artifact text, as kagent
composes it) ends the turn. A stream that ends before the task does is followed with GetTask
until it ends or the turn's timeout passes. Rules: speaks A2A through a2a.client only;
knows no MCP, no store.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

from mcp_agent_kit.a2a.client import A2AClient, fetch_card, jsonrpc_endpoint
from mcp_agent_kit.a2a.protocol import A2AError
from mcp_agent_kit.gateway import agent_backend as ab
from mcp_agent_kit.gateway.agent_questions import HITL, answer
from mcp_agent_kit.gateway.agents_config import AgentSpec

log = logging.getLogger("mcp_agent_kit.gateway")
PAUSED = frozenset({ab.INPUT_REQUIRED, ab.AUTH_REQUIRED})
FINAL = frozenset({ab.COMPLETED, ab.FAILED, ab.CANCELED, ab.REJECTED}) | PAUSED
POLL_S = 0.5


def parts_text(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "".join(str(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


class _Reader:
    """One SendStreamingMessage's events folded into the task's state, reported to the sink."""

    def __init__(self, sink: ab.TurnSink) -> None:
        self.sink = sink
        self.task_id = ""
        self.context_id = ""
        self.state = ab.WORKING
        self.status_message: dict[str, Any] = {}
        self.artifacts: dict[str, str] = {}

    def _start(self, task_id: Any, context_id: Any) -> None:
        if not self.task_id and isinstance(task_id, str) and task_id:
            self.task_id, self.context_id = task_id, str(context_id or "")
            self.sink.started(self.task_id, self.context_id)

    def _status(self, status: Any) -> None:
        if not isinstance(status, dict):
            return
        self.state = str(status.get("state") or self.state)
        message = status.get("message")
        self.status_message = message if isinstance(message, dict) else {}
        said = parts_text(self.status_message.get("parts"))
        if said and self.state not in FINAL:
            self.sink.progress(said)

    def _artifact(self, artifact: Any, append: bool) -> None:
        if not isinstance(artifact, dict):
            return
        key = str(artifact.get("artifactId", len(self.artifacts)))
        text = parts_text(artifact.get("parts"))
        self.artifacts[key] = self.artifacts.get(key, "") + text if append else text
        if text and append:  # a piece of a streamed artifact: only the new text travels
            self.sink.streamed(text)
        elif text:
            self.sink.progress(text)

    def task(self, task: dict[str, Any]) -> None:
        self._start(task.get("id"), task.get("contextId"))
        for artifact in task.get("artifacts") or []:
            self._artifact(artifact, False)
        self._status(task.get("status"))

    def event(self, result: dict[str, Any]) -> None:
        if isinstance(result.get("task"), dict):
            self.task(result["task"])
        elif isinstance(result.get("statusUpdate"), dict):
            update = result["statusUpdate"]
            self._start(update.get("taskId"), update.get("contextId"))
            self._status(update.get("status"))
        elif isinstance(result.get("artifactUpdate"), dict):
            update = result["artifactUpdate"]
            self._start(update.get("taskId"), update.get("contextId"))
            self._artifact(update.get("artifact"), bool(update.get("append")))
        elif isinstance(result.get("message"), dict):  # a reply without a task: the turn is that message
            message = result["message"]
            self._start(message.get("taskId") or message.get("messageId"), message.get("contextId"))
            self.status_message, self.state = message, ab.COMPLETED

    def text(self) -> str:
        said = parts_text(self.status_message.get("parts"))
        made = "".join(self.artifacts.values())
        return "\n".join(t for t in (said, made) if t)

    def end(self) -> ab.TurnEnd:
        question = None
        if self.state in PAUSED:
            metadata = self.status_message.get("metadata")
            hitl = metadata.get(HITL) if isinstance(metadata, dict) else None
            question = ab.Question(
                key=str(self.status_message.get("messageId") or self.task_id),
                message=parts_text(self.status_message.get("parts")) or "Agent requires input.",
                payload={"hitl": hitl} if isinstance(hitl, dict) else {},
            )
            return ab.TurnEnd(ab.INPUT_REQUIRED, question.message, question)
        return ab.TurnEnd(self.state, self.text())


class A2ABackend:
    """One A2A agent (see the module docstring)."""

    def __init__(self, spec: AgentSpec, probe_timeout: float = 5.0) -> None:
        self.spec = spec
        self.probe_timeout = probe_timeout
        self.card: dict[str, Any] = {}
        self.error: str | None = "not reached yet"
        self.client: A2AClient | None = None
        self._lock = threading.Lock()

    def refresh(self) -> None:
        try:
            card = fetch_card(self.spec.url, self.probe_timeout)
            client = A2AClient(jsonrpc_endpoint(card), self.spec.timeout, {"A2A-Extensions": HITL})
        except A2AError as exc:
            with self._lock:
                self.error = f"agent {self.spec.ref} is unreachable: {exc}"
            return
        with self._lock:
            self.card, self.client, self.error = card, client, None

    def info(self) -> ab.AgentInfo:
        with self._lock:
            card, error = self.card, self.error
        skills = [{key: skill[key] for key in ("id", "name", "description", "tags") if key in skill}
                  for skill in card.get("skills") or [] if isinstance(skill, dict)]
        description = self.spec.description or str(card.get("description") or "")
        return ab.AgentInfo(description, skills, error is None, error or "")

    def new_session(self) -> str:
        return str(uuid.uuid4())

    def _client(self) -> A2AClient:
        client = self.client
        if client is None or self.error is not None:
            self.refresh()  # down at the last look: try again now
            client = self.client
        if client is None or self.error is not None:
            raise A2AError.call_failed(self.error or f"agent {self.spec.ref} is unreachable")
        return client

    def start_turn(self, session: str, message: str, message_id: str, references: list[str],
                   sink: ab.TurnSink) -> None:
        body: dict[str, Any] = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": message}],
                                "contextId": session}
        if references:
            body["referenceTaskIds"] = list(references)
        self._run({"message": body}, sink)

    def answer(self, session: str, turn_id: str, question: ab.Question, action: str, content: dict[str, Any],
               sink: ab.TurnSink) -> None:
        text, metadata = answer(question, {"action": action, "content": content})
        body: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}],
                                "contextId": session, "taskId": turn_id}
        if metadata is not None:
            body["metadata"], body["extensions"] = metadata, [HITL]
        self._run({"message": body}, sink, turn_id)

    def _run(self, params: dict[str, Any], sink: ab.TurnSink, turn_id: str = "") -> None:
        reader = _Reader(sink)
        reader.task_id = turn_id  # a resumed task is already started
        threading.Thread(target=self._read, args=(params, reader), name=f"a2a-turn-{self.spec.ref}",
                         daemon=True).start()

    def _read(self, params: dict[str, Any], reader: _Reader) -> None:
        deadline = time.monotonic() + self.spec.timeout
        try:
            client = self._client()
            client.stream(params, reader.event, lambda: time.monotonic() > deadline)
            while reader.state not in FINAL and reader.task_id and time.monotonic() < deadline:
                time.sleep(POLL_S)  # the stream ended early: follow the task itself
                reader.task(client.get_task(reader.task_id))
            if reader.state not in FINAL:
                reader.sink.ended(ab.TurnEnd(ab.FAILED, f"agent {self.spec.ref} did not finish the turn within "
                                                         f"{self.spec.timeout:g}s (its timeout)"))
                return
        except A2AError as exc:
            log.info("agent %s: %s", self.spec.ref, exc)
            said = f"agent {self.spec.ref} failed: {exc}"
            if exc.unreachable:  # list_agents says so now, not at the next refresh
                said = f"agent {self.spec.ref} is unreachable: {exc}"
                with self._lock:
                    self.error = said
            reader.sink.ended(ab.TurnEnd(ab.FAILED, said))
            return
        except Exception as exc:  # an agent that sends something we cannot fold: the turn fails, we go on
            log.warning("agent %s sent something unreadable: %r", self.spec.ref, exc)
            reader.sink.ended(ab.TurnEnd(ab.FAILED, f"agent {self.spec.ref} sent an unreadable event: {exc}"))
            return
        reader.sink.ended(reader.end())

    def cancel(self, session: str, turn_id: str) -> None:
        self._client().cancel_task(turn_id)

    def fork(self, session: str, through_turn: str) -> str | None:
        return None  # A2A forks by a new contextId whose first message carries referenceTaskIds

    def close(self) -> None:
        return None
