"""gateway.agent_tools: the agent tools (kagent's names, arguments and result fields) and their tasks.

list_agents, list_sessions, invoke_agent, create_session_checkpoint, list_session_checkpoints and
fork_session are registered on the gateway's server; AgentTasks is the TaskSource (core.tasks)
that runs invoke_agent as a task when the request's own `_meta` declares the tasks extension and
serves tasks/get, tasks/update and tasks/cancel for its sealed ids. Service errors are isError
tool results, never JSON-RPC errors; only the tasks/* protocol answers -32602 (bad id, unusable
answer) and -32021 (a blocking call whose agent asks a question). Every list and lookup is scoped
to the caller's principal. Rules: the state lives in gateway.agent_service; this module maps MCP to it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from mcp_agent_kit.core.call import Call
from mcp_agent_kit.core.content import ToolResult, text
from mcp_agent_kit.core.context import Context
from mcp_agent_kit.core.tasks import REQUIRED, TaskNotify
from mcp_agent_kit.gateway.agent_backend import SessionRefused
from mcp_agent_kit.gateway.agent_questions import AnswerError, answer, elicitation
from mcp_agent_kit.gateway.agent_service import AgentService, ServiceError
from mcp_agent_kit.gateway.agent_store import StoreFull
from mcp_agent_kit.gateway.agent_turns import open_id
from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.jsonrpc import RpcError

_PAGE = {"page_size": {"type": "integer", "description": "Entries per page (default 50, at most 100)"},
         "page_token": {"type": "string", "description": "next_page_token from the previous page"}}
_REQUEST_ID = {"type": "string", "description": "Idempotency key: a retry with the same value returns the same result"}
SCHEMAS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "list_agents": ("List the agents the gateway serves, with readiness and running/queued turn counts.",
                    {"namespace": {"type": "string", "description": "Only agents in this namespace"}, **_PAGE}, []),
    "list_sessions": ("List your agent sessions.", dict(_PAGE), []),
    "invoke_agent": ("Send an agent a message: name the agent to start a session, or give session_id to continue "
                     "one. Returns the agent's reply with the session and task ids.", {
        "message": {"type": "string", "description": "What to tell the agent"},
        "agent": {"type": "object", "description": "The agent to start a session with (from list_agents)",
                  "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}},
                  "required": ["name"]},
        "session_id": {"type": "string", "description": "The session to continue"},
        "message_id": {"type": "string", "description": "Idempotency key of a session-creating call"},
    }, ["message"]),
    "create_session_checkpoint": ("Pin a session at a finished turn, so it can be forked later.", {
        "session_id": {"type": "string"},
        "expected_head_task_id": {"type": "string", "description": "The finished turn's task_id; fails if the "
                                                                   "session has advanced past it"},
        "request_id": _REQUEST_ID}, ["session_id", "expected_head_task_id"]),
    "list_session_checkpoints": ("List a session's checkpoints, oldest first.",
                                 {"session_id": {"type": "string"}, **_PAGE}, ["session_id"]),
    "fork_session": ("Start a new session from a checkpoint; its first turn sees the history through it.",
                     {"checkpoint_id": {"type": "string"}, "request_id": _REQUEST_ID}, ["checkpoint_id"]),
}


def _page(arguments: dict[str, Any]) -> tuple[int, str]:
    size = arguments.get("page_size", 0) or 50
    if not isinstance(size, int) or not 1 <= size <= 100:
        raise ServiceError("page_size must be from 1 to 100")
    token = arguments.get("page_token") or ""
    try:
        after = base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)).decode() if token else ""
    except (ValueError, UnicodeDecodeError) as exc:
        raise ServiceError("page_token is not one this gateway gave") from exc
    return size, after


def _token(value: Any) -> str:
    return base64.urlsafe_b64encode(str(value).encode()).rstrip(b"=").decode()


def _out(body: dict[str, Any], is_error: bool = False) -> ToolResult:
    return ToolResult([text(json.dumps(body))], structured=body, is_error=is_error)


def _checkpoint(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "session_id": row["session_id"], "head_task_id": row["head_task_id"],
            "history_sequence": row["history_sequence"], "state": "CHECKPOINT_STATE_READY",
            "created_at": row["created"]}


class AgentTools:
    """The six tools on one server, over one AgentService; also the TaskSource of invoke_agent."""

    tools = frozenset({"invoke_agent"})

    def __init__(self, service: AgentService) -> None:
        self.service = service
        self._notify: TaskNotify | None = None

    def attach(self, notify: TaskNotify) -> None:
        """TaskSource: the server's tasks extension, bound, hands over how to push our tasks' changes."""
        self._notify = notify

    def install(self, server: Any) -> None:
        handlers = {"list_agents": self.list_agents, "list_sessions": self.list_sessions,
                    "invoke_agent": self.invoke_agent, "create_session_checkpoint": self.create_checkpoint,
                    "list_session_checkpoints": self.list_checkpoints, "fork_session": self.fork_session}
        for name, (description, properties, required) in SCHEMAS.items():
            schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
            server.add_raw_tool(name, schema, _guarded(handlers[name]), description=description)
        self.service.add_listener("turn_changed", self._push)

    def _push(self, live: Any) -> None:
        """A turn changed: its task, as tasks/get shows it, to the owner's listens on its id (notifications/tasks)."""
        notify = self._notify
        row = self.service.store.turn(live.id, live.principal) if notify is not None else None
        if notify is not None and row is not None:
            snapshot = self.service.render(row, live.principal, live)
            notify(snapshot["taskId"], live.principal, snapshot)

    # ---- tools --------------------------------------------------------------------------------------
    def list_agents(self, ctx: Context, arguments: dict[str, Any]) -> ToolResult:
        size, after = _page(arguments)
        namespace = arguments.get("namespace")
        refs = sorted(ref for ref, spec in self.service.specs.items()
                      if (namespace is None or spec.namespace == namespace) and ref > after)
        body: dict[str, Any] = {"agents": [self.service.agent_entry(ref) for ref in refs[:size]]}
        if len(refs) > size:
            body["next_page_token"] = _token(refs[size - 1])
        return _out(body)

    def list_sessions(self, ctx: Context, arguments: dict[str, Any]) -> ToolResult:
        size, after = _page(arguments)
        rows = self.service.store.sessions(ctx.principal, after, size + 1)
        sessions = []
        for row in rows[:size]:
            head = self.service.store.head(row["id"])
            sessions.append({"id": row["id"], "agent": row["agent"], "state": head["state"] if head else "NEW",
                             "head_task_id": head["agent_task_id"] if head else ""})
        body: dict[str, Any] = {"sessions": sessions}
        if len(rows) > size:
            body["next_page_token"] = _token(rows[size - 1]["pos"])
        return _out(body)

    def invoke_agent(self, ctx: Context, arguments: dict[str, Any]) -> ToolResult:
        service = self.service
        paused = ctx.state.get("turn")  # an input_required round's retry: the turn that asked
        live = service.paused_turn(paused, ctx.principal) if paused else service.begin(ctx.principal, arguments)
        spec = service.specs[service.store.session_any(live.session_id)["agent"]]  # type: ignore[index]
        count = [0]
        if paused:  # the retry of an input_required round: what came before was told in the first round
            live.catch_up()
        told = live.view.seq if paused else 0

        def progress(message: str) -> None:  # each piece of the reply, or status line, as it came
            count[0] += 1
            ctx.progress(count[0], None, message)

        while True:
            end = live.end
            if live.status == "working":
                end, told = live.wait(spec.timeout, progress, lambda: ctx.cancelled, told,
                                      on_stop=lambda wake: ctx.add_listener("cancelled", wake))
            else:  # it paused (or ended) before this call got here: what it said first is told first
                _, told = live.wait(0.0, progress, lambda: True, told)
            row = service.store.turn(live.id, ctx.principal)
            assert row is not None
            if end is None and not live.finished and live.status != "input_required":
                if ctx.cancelled:
                    service.cancel(live)
                raise ServiceError(f"the turn did not finish within {spec.timeout:g}s; it goes on as task "
                                   f"{row['agent_task_id']} in session {row['session_id']}")
            if row["status"] != "input_required" or live.question is None:
                result = service.result(row)
                return ToolResult(result["content"], structured=result["structuredContent"],
                                  is_error=result["isError"])
            self._ask_caller(ctx, live, row)

    def _ask_caller(self, ctx: Context, live: Any, row: dict[str, Any]) -> None:
        """The agent paused: a caller that declared elicitation answers in an input_required round (or, in a
        handshake-era session, a server->client request); any other blocking caller gets -32021."""
        question = live.question
        form = elicitation(question)
        if "elicitation" not in (ctx.client_capabilities or {}):
            raise RpcError(mcp.MISSING_CAPABILITY, "Missing required client capability: the agent asked a question "
                           f"({question.message}); declare {mcp.TASKS_EXTENSION} in _meta clientCapabilities "
                           "to answer it with tasks/update",
                           {"requiredCapabilities": REQUIRED, "inputRequests": {question.key: form},
                            "taskId": self.service.render(row, ctx.principal)["taskId"]})
        ctx.state["turn"] = live.id
        reply = ctx.ask({question.key: form})[question.key]  # the first round ends here (InputRequired)
        try:
            answer(question, reply)
        except AnswerError as exc:
            raise RpcError.invalid_params(f"{exc}") from None
        self.service.resume(live, reply["action"], reply.get("content") or {})

    def create_checkpoint(self, ctx: Context, arguments: dict[str, Any]) -> ToolResult:
        store = self.service.store
        session = self.service.session(arguments.get("session_id"), ctx.principal)
        expected = arguments.get("expected_head_task_id")
        turns = store.turns(session["id"])
        head = turns[-1] if turns else None
        if head is None or head["status"] in ("working", "input_required"):
            raise ServiceError("a turn of this session is not finished; checkpoint after it ends")
        if head["agent_task_id"] != expected:
            raise ServiceError("conversation advanced beyond the expected task")
        refs = [t["agent_task_id"] for t in turns if t["agent_task_id"]]
        backend = self.service.backend(session["agent"])
        # A native fork copies a session as it is *now*: snapshot it here, so a later fork_session cannot see
        # turns after the checkpoint (A2A backends return None: their forks point at `refs` instead).
        row, created = store.add_checkpoint(session["id"], ctx.principal, head, refs, arguments.get("request_id"),
                                            lambda: backend.fork(session["id"], head["agent_task_id"]))
        if not created and (row["session_id"], row["head_task_id"]) != (session["id"], expected):
            raise ServiceError("request_id was already used for a different checkpoint")
        return _out({"checkpoint": _checkpoint(row)})

    def list_checkpoints(self, ctx: Context, arguments: dict[str, Any]) -> ToolResult:
        session = self.service.session(arguments.get("session_id"), ctx.principal)
        size, after = _page(arguments)
        rows = self.service.store.checkpoints(session["id"], ctx.principal, after, size + 1)
        body: dict[str, Any] = {"checkpoints": [_checkpoint(row) for row in rows[:size]]}
        if len(rows) > size:
            body["next_page_token"] = _token(rows[size - 1]["pos"])
        return _out(body)

    def fork_session(self, ctx: Context, arguments: dict[str, Any]) -> ToolResult:
        service = self.service
        checkpoint = service.store.checkpoint(arguments.get("checkpoint_id"), ctx.principal)
        if checkpoint is None:
            raise ServiceError(f"unknown checkpoint {arguments.get('checkpoint_id')!r}")
        source = service.store.session_any(checkpoint["session_id"])
        assert source is not None
        backend = service.backend(source["agent"])
        request_id = arguments.get("request_id")
        key = f"fork:{request_id}" if request_id else None
        snapshot = checkpoint.get("snapshot")
        if snapshot:  # fork the checkpoint's snapshot again: one checkpoint, many forks, none sees later turns
            def make() -> str:
                native = backend.fork(snapshot, checkpoint["head_task_id"])
                if native is None:
                    raise ServiceError(f"agent {source['agent']} could not fork the session")
                return native
            session, _ = service.store.create_session(ctx.principal, source["agent"], make, key)
        elif service.specs[source["agent"]].kind == "acp":
            raise ServiceError(f"checkpoint {checkpoint['id']} has no snapshot of the ACP session to fork (it was "
                               "taken by an older gateway); take a new checkpoint")
        else:  # A2A: a new contextId whose first message points at the history through the checkpoint
            refs = json.loads(checkpoint["refs"])
            session, _ = service.store.create_session(ctx.principal, source["agent"], backend.new_session, key, refs)
        return _out({"session": {"id": session["id"], "agent": session["agent"], "state": "ready"}})

    # ---- TaskSource --------------------------------------------------------------------------------
    def owns(self, task_id: Any) -> bool:
        return isinstance(task_id, str) and task_id.startswith("v1.")

    def start(self, call: Call, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            live = self.service.begin(call.conn.principal, arguments)
        except ServiceError as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        row = self.service.store.turn(live.id, call.conn.principal)
        assert row is not None
        return {"resultType": "task", **self.service.render(row, call.conn.principal, live)}

    def _task(self, call: Call) -> tuple[dict[str, Any], Any]:
        task_id = call.params.get("taskId")
        turn = open_id(self.service.store.secret, task_id, call.conn.principal)
        try:
            if turn is None:
                raise ServiceError("no such task")
            return self.service.find(turn, call.conn.principal)
        except ServiceError:
            raise RpcError.invalid_params(f"unknown task {task_id!r}") from None

    def get(self, call: Call) -> dict[str, Any]:
        row, live = self._task(call)
        return self.service.render(row, call.conn.principal, live)

    def update(self, call: Call) -> dict[str, Any]:
        row, live = self._task(call)
        responses = call.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise RpcError.invalid_params('tasks/update needs an "inputResponses" object')
        if row["status"] != "input_required" or live.question is None:
            return {}  # answered already (a duplicate is not sent twice) or over
        key = live.question.key
        if key not in responses:
            raise RpcError.invalid_params(f"inputResponses has no answer for the pending request "
                                           f"{key!r} (the key of inputRequests); the task is still input_required")
        value = responses[key]
        try:
            answer(live.question, value)
        except AnswerError as exc:
            raise RpcError.invalid_params(f"{exc}") from None
        self.service.resume(live, value["action"], value.get("content") or {})
        return {}

    def cancel(self, call: Call) -> dict[str, Any]:
        row, live = self._task(call)
        if row["status"] in ("working", "input_required"):
            try:
                self.service.cancel(live)
            except ServiceError as exc:
                raise RpcError.internal_error(f"{exc}") from None
        return {}


def _guarded(handler: Any) -> Any:
    """The registered tool function: service errors become isError results."""

    def tool(ctx: Context, arguments: dict[str, Any]) -> ToolResult:
        try:
            result: ToolResult = handler(ctx, arguments)
            return result
        except (ServiceError, StoreFull, SessionRefused) as exc:
            return ToolResult([text(str(exc))], is_error=True)

    return tool
