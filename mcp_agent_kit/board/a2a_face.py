"""board.a2a_face: every board task is an A2A Task — the board's A2A v1.0 agent (an a2a.service.A2AService).

There is one store of board tasks, the Board's: this face keeps no copy of them. Every operation reads or
acts through the Board facade and builds the A2A view on the way out (board.a2a_view has the view and the
state table, board.states.A2A_STATES). a2a.http serves it (card, JSON-RPC, HTTP+JSON, SSE, the
Host/Origin gate, tokens or OAuth).
- SendMessage without a taskId creates a task: the text parts joined are the prompt; the request's or the
  message's `metadata` may carry `agent`, `priority`, `title`, `blockedBy`, `base`, `hold`, `labels`. A contextId
  without a taskId is refused (each task is its own context).
- SendMessage with a taskId: needs_input → the answer (a data part: the schema answer; else the text: an
  option id, or an option name, any case); review → a follow-up prompt (back to queued); done, discarded,
  failed or cancelled → UnsupportedOperation (terminal to A2A, as its spec says; a failed or cancelled
  task is still prompted again through MCP or the CLI); held, queued, running → UnsupportedOperation
  (still working). Blocking by default: it returns once the task needs input, is in review or has ended
  (board.wait_task, at most `wait_timeout` s); `returnImmediately` returns at once.
- CancelTask: a live task → cancelled; review → TaskNotCancelable (its changes await a person: accept or
  discard them through MCP or the CLI; nothing here deletes work); failed, cancelled, done, discarded →
  TaskNotCancelable.
- SubscribeToTask / SendStreamingMessage: the task, then its transcript events converted (a2a_view) from
  the sequence number read before the action, woken by Board.add_listener("task"); a stream ends at a
  terminal A2A state (SendStreamingMessage also at input required). A stream holds one of the HTTP
  server's bounded stream threads while open (a keep-alive every KEEPALIVE_S).
- Push notification configs (board.a2a_push): on every change of a task's board state, a statusUpdate
  goes to each config of the task.
- Principals: a board is one team's; every authenticated principal sees every task (as on MCP). Push
  configs are per principal.
Rules: protocol mapping only; the board decides (its errors become A2A errors by ERRORS).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from mcp_agent_kit.a2a.engine import KEEPALIVE, KEEPALIVE_S
from mcp_agent_kit.a2a.job import Agent
from mcp_agent_kit.a2a.messages import check_media_types, count_param, flag_param, parse_message
from mcp_agent_kit.a2a.protocol import INPUT_REQUIRED, ROLE_USER, A2AError
from mcp_agent_kit.board import a2a_view as view
from mcp_agent_kit.board.a2a_push import PushConfigs, PushSender
from mcp_agent_kit.board.errors import BoardError, TaskConflict, TaskInvalid, TaskNotFound, TransitionRefused
from mcp_agent_kit.board.states import (
    A2A_STATES,
    CANCELLED,
    FAILED,
    FINAL,
    LIVE,
    NEEDS_INPUT,
    REVIEW,
    STATES,
)

__all__ = ["BoardAgent", "BoardFace"]

PAGE = 500  # transcript events read per call
MAX_EVENTS = 20_000  # a view reads at most this many transcript events (the history of a very long task is cut)
LIST_DEFAULT, LIST_MAX = 50, 100
CREATE_FIELDS = ("agent", "priority", "title", "blockedBy", "base", "hold", "labels")
# a board error -> the A2A error it is
ERRORS: dict[type[BoardError], str] = {TaskNotFound: "TaskNotFound", TransitionRefused: "UnsupportedOperation",
                                       TaskConflict: "UnsupportedOperation", TaskInvalid: "InvalidParams"}
# the board states that end a blocking SendMessage (A2A: terminal or interrupted)
SETTLED = frozenset(state for state in STATES if A2A_STATES[state] in view.A2A_TERMINAL | {INPUT_REQUIRED})


def _a2a(exc: BoardError, task_id: str | None = None) -> A2AError:
    name = next((name for kind, name in ERRORS.items() if isinstance(exc, kind)), "InvalidParams")
    return A2AError(name, f"{exc}", {"taskId": task_id} if task_id else None)


class BoardAgent(Agent):
    """The board's card facts."""

    name = "board"
    description = ("A board of coding agents on one git repository: each task runs in its own worktree, "
                   "asks when it needs input, and waits for review")
    input_modes = ("text/plain", "application/json")
    output_modes = ("text/plain", "application/json")
    push_notifications = True

    def skills(self) -> list[dict[str, Any]]:
        return [
            {"id": "create_task", "name": "Create a coding task", "tags": ["board", "coding"],
             "description": "A message without a taskId is a new task's prompt; metadata may name agent, "
                            "priority (urgent, high, normal, low), title, blockedBy, base, hold, labels",
             "examples": ["Add a --verbose flag to the CLI and test it"]},
            {"id": "answer_question", "name": "Answer a task's question", "tags": ["board"],
             "description": "A message with the taskId of a task in input-required (a question): the option id "
                            "or name as text, or a data part matching the question's schema"},
            {"id": "follow_up", "name": "Prompt a task again", "tags": ["board"],
             "description": "A message with the taskId of a task in review (input-required with the agent's "
                            "reply): a follow-up prompt in the same agent session and worktree"},
        ]


class _Wake:
    """One stream's wake-up: set by the board's task listener, cleared before each read."""

    __slots__ = ("event",)

    def __init__(self) -> None:
        self.event = threading.Event()


class BoardFace:
    """Board tasks as A2A tasks (the module's doc has the rules)."""

    def __init__(self, board: Any, *, agent: Agent | None = None, wait_timeout: float = 300.0,
                 post: Callable[[str, dict[str, str], bytes], int] | None = None) -> None:
        """post: how a push notification is sent (default: client.oauth.net's checked fetcher)."""
        self.board = board
        self.agent = agent or BoardAgent()
        self.wait_timeout = wait_timeout
        self.url: str | None = None  # where this face is served (set by the server's owner): the SSRF rule's base
        self._lock = threading.Lock()
        self._wakes: dict[str, set[_Wake]] = {}
        self._pushed: dict[str, str] = {}  # task id (with push configs) -> the board state last pushed
        self._closed = False
        self.push = PushConfigs(self._check_push_url)
        self.sender = PushSender(post or self._post)
        self._remove = board.add_listener("task", self._changed)

    def close(self) -> None:
        self._closed = True
        self._remove()
        self.sender.close()
        with self._lock:
            wakes = [wake for group in self._wakes.values() for wake in group]
        for wake in wakes:
            wake.event.set()

    # ---- the operations ----------------------------------------------------------------------------------
    def send(self, owner: str, params: dict[str, Any], stream: bool = False
             ) -> dict[str, Any] | Iterator[dict[str, Any]]:
        message = parse_message(params.get("message"))
        if message["role"] != ROLE_USER:
            raise A2AError("InvalidParams", detail="message.role must be ROLE_USER",
                           violations=[("message.role", "must be ROLE_USER")])
        config = params.get("configuration") or {}
        if not isinstance(config, dict):
            raise A2AError("InvalidParams", detail="configuration must be an object")
        immediate = flag_param(config, "returnImmediately", "return_immediately")
        history_length = count_param(config, "historyLength", "history_length")
        check_media_types(message, self.agent.accepted_media_types())
        task_id = message.get("taskId")
        if task_id is None:
            task, after = self._create(message, params, owner), 0
        else:
            task, after = self._continue(str(task_id), message)
        push = config.get("taskPushNotificationConfig") or config.get("pushNotificationConfig")
        if isinstance(push, dict):
            self._add_push(owner, task, push)
        if stream:
            return self._stream(task["id"], after, SETTLED)
        if not immediate and task["state"] not in SETTLED:
            task = self.board.wait_task(task["id"], SETTLED, self.wait_timeout)
        return {"task": self._view(task, history_length)}

    def get(self, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        return self._view(self._task(params), count_param(params, "historyLength", "history_length"))

    def list_tasks(self, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        size = count_param(params, "pageSize", "page_size")
        size = LIST_DEFAULT if not size else min(size, LIST_MAX)
        history_length = count_param(params, "historyLength", "history_length") or 0
        artifacts = flag_param(params, "includeArtifacts", "include_artifacts")
        wanted, context = params.get("status"), params.get("contextId") or params.get("context_id")
        after = params.get("statusTimestampAfter") or params.get("status_timestamp_after")
        token = params.get("pageToken") or params.get("page_token") or ""
        tasks = [task for task in reversed(self.board.list_tasks())
                 if (not wanted or A2A_STATES[task["state"]] == wanted) and (not context or task["id"] == context)]
        if after:
            tasks = [task for task in tasks if str(view.status(task).get("timestamp", "")) >= str(after)]
        start = 0
        if token:
            start = next((i + 1 for i, task in enumerate(tasks) if task["id"] == token), -1)
            if start < 0:
                raise A2AError("InvalidParams", detail="pageToken is not one this agent gave",
                               violations=[("pageToken", "unknown")])
        page = tasks[start:start + size]
        more = start + size < len(tasks)
        return {"tasks": [self._view(task, history_length, artifacts=artifacts) for task in page],
                "nextPageToken": page[-1]["id"] if more and page else "", "pageSize": size,
                "totalSize": len(tasks)}

    def cancel(self, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        task = self._task(params)
        if task["state"] not in LIVE:
            why = (" (its changes await a person: accept or discard it through the board's MCP tools or "
                   "`mcp-agent-kit task`)" if task["state"] == REVIEW else "")
            raise A2AError("TaskNotCancelable", f"Task {task['id']} is {task['state']}: it cannot be canceled{why}",
                           {"taskId": task["id"]})
        try:
            return self._view(self.board.cancel_task(task["id"]))
        except BoardError as exc:
            raise A2AError("TaskNotCancelable", f"{exc}", {"taskId": task["id"]}) from None

    def subscribe(self, owner: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        task = self._task(params)
        if A2A_STATES[task["state"]] in view.A2A_TERMINAL:
            raise A2AError("UnsupportedOperation", f"Task {task['id']} is in terminal state "
                           f"{A2A_STATES[task['state']]}", {"taskId": task["id"]})
        return self._stream(task["id"], self._last_seq(task["id"]), FINAL | {FAILED, CANCELLED})

    def push_config(self, method: str, owner: str, params: dict[str, Any]) -> dict[str, Any]:
        task_id = params.get("taskId") or params.get("task_id")
        task = self._task({"id": task_id}, "taskId")
        if method == "CreateTaskPushNotificationConfig":
            return self._add_push(owner, task, params)
        if method == "ListTaskPushNotificationConfigs":
            return {"configs": self.push.listed(owner, task["id"]), "nextPageToken": ""}
        config_id = params.get("id")
        if not isinstance(config_id, str) or not config_id:
            raise A2AError("InvalidParams", detail="id (the config's) must be a non-empty string",
                           violations=[("id", "must be a non-empty string")])
        if method == "GetTaskPushNotificationConfig":
            return self.push.get(owner, task["id"], config_id)
        self.push.delete(owner, task["id"], config_id)
        return {}

    def _add_push(self, owner: str, task: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        """A new config; the task's state now counts as pushed (the next change is news)."""
        config = self.push.create(owner, task["id"], params)
        with self._lock:
            self._pushed.setdefault(task["id"], task["state"])
        return config

    # ---- creating and continuing ------------------------------------------------------------------------
    def _create(self, message: dict[str, Any], params: dict[str, Any], owner: str) -> dict[str, Any]:
        """A new board task owned by the sender's principal (none without authentication: "")."""
        if message.get("contextId"):
            raise A2AError("InvalidParams", detail="each board task is its own context: send a new task without "
                           "contextId, or continue one with its taskId",
                           violations=[("message.contextId", "not accepted without taskId")])
        meta = {**(params.get("metadata") or {}), **(message.get("metadata") or {})}
        options = {key: meta[key] for key in CREATE_FIELDS if meta.get(key) is not None}
        if "blockedBy" in options:
            options["blocked_by"] = options.pop("blockedBy")
        if not isinstance(options.get("hold", False), bool):
            raise A2AError("InvalidParams", detail="metadata.hold must be a boolean")
        try:
            return dict(self.board.create_task(self._text(message), owner=owner or None, **options))
        except (BoardError, TypeError, ValueError) as exc:
            raise A2AError("InvalidParams", detail=f"{exc}") from None

    def _continue(self, task_id: str, message: dict[str, Any]) -> tuple[dict[str, Any], int]:
        task = self._task({"id": task_id}, "message.taskId")
        if message.get("contextId") not in (None, task["id"]):
            raise A2AError("InvalidParams", detail=f"message.contextId does not match task {task_id}",
                           violations=[("message.contextId", f"task {task_id} is its own context")])
        state, after = task["state"], self._last_seq(task_id)
        try:
            if state == NEEDS_INPUT:
                return dict(self.board.answer_task(task_id, self._answer(task, message))), after
            if state == REVIEW:  # failed and cancelled are terminal to A2A: no message continues them there
                return dict(self.board.prompt_task(task_id, self._text(message))), after
        except BoardError as exc:
            raise _a2a(exc, task_id) from None
        ended = A2A_STATES[state] in view.A2A_TERMINAL
        why = f"is in terminal state {A2A_STATES[state]} ({state})" if ended else f"is still working ({state})"
        raise A2AError("UnsupportedOperation", f"Task {task_id} {why}", {"taskId": task_id})

    @staticmethod
    def _text(message: dict[str, Any]) -> str:
        text = "\n".join(part["text"] for part in message["parts"] if "text" in part).strip()
        if not text:
            raise A2AError("InvalidParams", detail="the message needs a text part (the prompt)",
                           violations=[("message.parts", "no text")])
        return text

    def _answer(self, task: dict[str, Any], message: dict[str, Any]) -> str | dict[str, Any]:
        """A data part's object (the schema answer), or the text as an option id or name."""
        for part in message["parts"]:
            if isinstance(part.get("data"), dict):
                return dict(part["data"])
        text = self._text(message)
        options = (task.get("question") or {}).get("options") or []
        for option in options:
            if text == option["id"]:
                return text
        for option in options:
            if text.casefold() == option["name"].casefold():
                return str(option["id"])
        return text  # the board names what it wants when this is not an answer

    # ---- views ----------------------------------------------------------------------------------------
    def _task(self, params: dict[str, Any], field: str = "id") -> dict[str, Any]:
        task_id = params.get("id") if field == "id" else params.get("id", params.get("taskId"))
        if not isinstance(task_id, str) or not task_id:
            raise A2AError("InvalidParams", detail=f"{field} must be a non-empty string",
                           violations=[(field, "must be a non-empty string")])
        try:
            return dict(self.board.get_task(task_id))
        except TaskNotFound:
            raise A2AError("TaskNotFound", f"Task {task_id} not found", {"taskId": task_id}) from None
        except BoardError as exc:
            raise _a2a(exc, task_id) from None

    def _events(self, task_id: str, after: int = 0) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        while len(events) < MAX_EVENTS:
            page = self.board.task_events(task_id, after=after, limit=PAGE)
            events.extend(page["events"])
            if len(page["events"]) < PAGE or page["next"] == after:
                break
            after = page["next"]
        return events

    def _last_seq(self, task_id: str) -> int:
        after = 0
        while True:
            page = self.board.task_events(task_id, after=after, limit=PAGE)
            if not page["events"]:
                return after
            after = int(page["next"])

    def _view(self, task: dict[str, Any], history_length: int | None = None, *,
              artifacts: bool = True) -> dict[str, Any]:
        events = None if history_length == 0 else self._events(task["id"])
        diff = None
        if artifacts and task["state"] == REVIEW and task.get("result"):
            try:
                diff = self.board.task_diff(task["id"])
            except BoardError:
                diff = None
        return view.task_view(task, events, history_length=history_length, diff=diff, artifacts=artifacts)

    # ---- streams --------------------------------------------------------------------------------------
    def _stream(self, task_id: str, after: int, until: frozenset[str]) -> Iterator[dict[str, Any]]:
        wake = _Wake()
        with self._lock:
            self._wakes.setdefault(task_id, set()).add(wake)
        first = self._view(self.board.get_task(task_id))
        return self._follow(task_id, after, until, wake, first)

    def _follow(self, task_id: str, after: int, until: frozenset[str], wake: _Wake,
                first: dict[str, Any]) -> Generator[dict[str, Any], None, None]:
        try:
            yield {"task": first}
            replying = False
            while True:
                wake.event.clear()
                page = self.board.task_events(task_id, after=after, limit=PAGE)
                if page["events"]:
                    task = self.board.get_task(task_id)
                    out, replying = view.stream_events(task, page["events"], replying)
                    after = int(page["next"])
                    for event in out:
                        yield event
                        update = event.get("statusUpdate")
                        if update is not None and update["metadata"]["state"] in until:
                            return
                    continue
                if self._closed:
                    return
                if not wake.event.wait(KEEPALIVE_S):
                    yield KEEPALIVE
        finally:
            with self._lock:
                group = self._wakes.get(task_id)
                if group is not None:
                    group.discard(wake)
                    if not group:
                        del self._wakes[task_id]

    # ---- the board's changes ----------------------------------------------------------------------------
    def _changed(self, payload: dict[str, Any]) -> None:
        """Board listener ("task"): wake the task's streams; push a state change to its configs."""
        task = payload.get("task") or {}
        task_id = str(task.get("id", ""))
        with self._lock:
            wakes = list(self._wakes.get(task_id, ()))
        for wake in wakes:
            wake.event.set()
        configs = self.push.of_task(task_id)
        if not configs or task.get("state") not in A2A_STATES:
            return
        with self._lock:
            moved = self._pushed.get(task_id) != task["state"]
            self._pushed[task_id] = task["state"]
        if moved:
            update = {"statusUpdate": {"taskId": task_id, "contextId": task_id, "status": view.status(task),
                                       "metadata": {"state": task["state"]}}}
            for config in configs:
                self.sender.deliver(config, update)
        if task["state"] in FINAL:
            self.push.forget_task(task_id)
            with self._lock:
                self._pushed.pop(task_id, None)

    def _check_push_url(self, url: str) -> None:
        from mcp_agent_kit.client.oauth.errors import OAuthError

        try:
            self._fetcher().check(url)
        except OAuthError as exc:
            raise A2AError("InvalidParams", detail=f"push url: {exc}", violations=[("url", f"{exc}")]) from None

    def _fetcher(self) -> Any:
        from mcp_agent_kit.client.oauth.net import Fetcher, is_internal

        url = self.url
        return Fetcher(lambda: url is None or is_internal(url))

    def _post(self, url: str, headers: dict[str, str], body: bytes) -> int:
        return int(self._fetcher()("POST", url, headers, body).status)
