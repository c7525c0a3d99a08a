"""board.live: the board's live API in the seed's WebSocket envelope — sans-IO, over the Board facade.

Every frame is one JSON text message `{"id", "type", "action", "payload", "timestamp"}` (docs/board-api.md).
A `LiveSession` is one client: `handle(text)` takes a request and answers through `send(message: dict)`,
with a `response` echoing the request's id and action, or an `error` whose payload is `{"code", "message"}`
(CODES; board.errors map by ERROR_CODES). Bad JSON, a non-object, a missing or unknown action, a payload
field of the wrong type, an oversize message: an error naming the problem, and the session lives on.
ACTIONS maps each action to its handler. A session that signed in with the page's cookie (`cookie_auth`)
must send the page's CSRF token as `csrf` on every request (`csrf_check` says whether it is right).

Principals: `principal` None (no authentication configured) sees every task; otherwise the session sees
and acts on only the tasks it owns (a task's `owner`, set by `task.create`): another principal's task id
is `not_found`, the same answer as an id that does not exist.

Subscriptions: `task.subscribe {task_id, after}` answers, then sends every event of the task's log after
`after` and then each new one, exactly once and in order (board.live_events.Cursor); `board.subscribe`
sends `task.updated {task, seq}` when a task the session sees changes (not for each appended event). A
session holds at most one board listener (added by its first subscription, removed by `close`).
`LiveSocket` is the WebSocket face: the WsHandler (opened/received/closed) that httpd.ws_server's hub
drives for one `/ws` connection.
Rules: no I/O (the send callable does it) and no HTTP; only the Board facade's public methods.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_agent_kit.board import task_fields as tf
from mcp_agent_kit.board.errors import BoardError, TaskConflict, TaskInvalid, TaskNotFound, TransitionRefused
from mcp_agent_kit.board.live_events import Cursor, last_seq
from mcp_agent_kit.board.queue import RANK
from mcp_agent_kit.board.states import ACTIVE, HELD, NEEDS_INPUT, QUEUED, RUNNING

__all__ = ["ACTIONS", "CODES", "ERROR_CODES", "MAX_MESSAGE", "PRIORITY_LEVELS", "LiveError", "LiveSession",
           "LiveSocket"]

log = logging.getLogger("mcp_agent_kit.board.live")
MAX_MESSAGE = 1 << 20  # bytes of one request (the WebSocket hub's message limit is the same)
ID_MAX = 200
CODES = ("bad_request", "unknown_action", "not_found", "invalid", "conflict", "refused", "csrf", "forbidden",
         "too_big", "internal")
# board.errors -> the error code (the first class the error is an instance of wins)
ERROR_CODES: tuple[tuple[type[BoardError], str], ...] = (
    (TaskNotFound, "not_found"), (TaskConflict, "conflict"), (TransitionRefused, "refused"),
    (TaskInvalid, "invalid"), (BoardError, "refused"))
# the seed's numeric priorities -> the board's (higher is more urgent)
PRIORITY_LEVELS: Mapping[int, str] = {0: "low", 1: "normal", 2: "high", 3: "urgent"}
STARTED = frozenset({QUEUED, RUNNING, NEEDS_INPUT})  # orchestrator.start on these: nothing to do
_JSON_KINDS: Mapping[type, str] = {str: "text", bool: "true or false", int: "a number", float: "a number",
                                   list: "a list", dict: "an object", type(None): "null"}


class LiveError(Exception):
    """A request refused with `code` (one of CODES) and a one-line message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class LiveCall:
    """One request: its id (echoed), action and payload."""

    id: str | int | None
    action: str
    payload: dict[str, Any]


def now() -> str:
    return tf.iso(time.time())


def _kind(value: Any) -> str:
    return _JSON_KINDS.get(type(value), type(value).__name__)


def _field(payload: Mapping[str, Any], name: str, types: tuple[type, ...], what: str, *, required: bool = False
           ) -> Any:
    value = payload.get(name)
    if value is None:
        if required:
            raise LiveError("bad_request", f"payload.{name} is missing: send it as {what}")
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise LiveError("bad_request", f"payload.{name} must be {what}, not {_kind(value)}")
    return value


def text(payload: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    found: str | None = _field(payload, name, (str,), "text", required=required)
    return found


def flag(payload: Mapping[str, Any], name: str) -> bool:
    return bool(_field(payload, name, (bool,), "true or false"))


def task_id_of(payload: Mapping[str, Any]) -> str:
    """payload.task_id (or payload.id, as the seed's task.get sends it)."""
    name = "task_id" if "task_id" in payload or "id" not in payload else "id"
    found = text(payload, name, required=True)
    assert found is not None
    return found


def priority_of(payload: Mapping[str, Any]) -> str | None:
    """payload.priority: a board priority name, or the seed's number (PRIORITY_LEVELS)."""
    value = _field(payload, "priority", (str, int), "a priority name or a number 0-3")
    if isinstance(value, int):
        if value not in PRIORITY_LEVELS:
            raise LiveError("invalid", f"payload.priority {value} is not one of 0-3 (0 low ... 3 urgent)")
        return PRIORITY_LEVELS[value]
    return None if value is None else str(value)


def error_code(exc: BoardError) -> str:
    return next(code for kind, code in ERROR_CODES if isinstance(exc, kind))


def one_line(message: str) -> str:
    return " ".join(message.split())[:2000]


class LiveSession:
    """One client of the live API (see the module's doc); thread-safe."""

    def __init__(self, board: Any, principal: str | None, send: Callable[[dict[str, Any]], None], *,
                 cookie_auth: bool = False, csrf_check: Callable[[str], bool] | None = None,
                 max_message: int = MAX_MESSAGE) -> None:
        self.board, self.principal, self._send_fn = board, principal, send
        self.cookie_auth, self.csrf_check, self.max_message = cookie_auth, csrf_check, max_message
        self._lock = threading.Lock()
        self._board_lock = threading.RLock()  # board.subscribe's response goes out before its first update
        self._cursors: dict[str, Cursor] = {}
        self._watch_board = False
        self._told: dict[Any, dict[str, Any]] = {}  # board.subscribe: each task as last sent
        self._remove: Callable[[], None] | None = None
        self._closed = False

    # ---- framing -----------------------------------------------------------------------------------
    def handle(self, message: str | bytes) -> None:
        """Answer one request (a response, or an error naming the problem); never raises."""
        if self._closed:
            return
        try:
            call = self._parse(message)
        except _Refused as refused:
            self._error(refused.id, refused.action, refused.code, str(refused))
            return
        try:
            answer = ACTIONS[call.action](self, call)
        except LiveError as exc:
            self._error(call.id, call.action, exc.code, str(exc))
        except BoardError as exc:
            self._error(call.id, call.action, error_code(exc), str(exc))
        except Exception:
            log.exception("live API: %s failed", call.action)
            self._error(call.id, call.action, "internal", "the board failed on this request (logged on the server)")
        else:
            if answer is not None:
                self._respond(call, answer)

    def _parse(self, message: str | bytes) -> LiveCall:
        size = len(message.encode() if isinstance(message, str) else message)
        if size > self.max_message:
            raise _Refused("too_big", f"the message is {size} bytes; at most {self.max_message} are allowed")
        if isinstance(message, bytes):
            raise _Refused("bad_request", "send each request as a JSON text message, not binary")
        try:
            data = json.loads(message)
        except ValueError as exc:
            raise _Refused("bad_request", f"the message is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise _Refused("bad_request", f"a request is a JSON object with id, type, action and payload, not "
                                          f"{_kind(data)}")
        request_id = data.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (str, int, type(None))) or (
                isinstance(request_id, str) and len(request_id) > ID_MAX):
            raise _Refused("bad_request", f"id must be text of at most {ID_MAX} characters")
        action = data.get("action")
        if not isinstance(action, str) or not action:
            raise _Refused("bad_request", "action is missing: name one, e.g. \"orchestrator.status\"", request_id)
        if data.get("type", "request") != "request":
            raise _Refused("bad_request", f"type must be \"request\", not {data.get('type')!r}", request_id, action)
        if action not in ACTIONS:
            raise _Refused("unknown_action", f"unknown action {action[:100]!r}: use one of {', '.join(ACTIONS)}",
                           request_id, action)
        payload = data.get("payload", {})
        if payload is None:
            payload = {}
        if not isinstance(payload, dict):
            raise _Refused("bad_request", f"payload must be an object, not {_kind(payload)}", request_id, action)
        if self.cookie_auth:
            token = data.get("csrf")
            if not isinstance(token, str) or self.csrf_check is None or not self.csrf_check(token):
                raise _Refused("csrf", "this connection signed in with the page's cookie: send the page's CSRF "
                                       "token as \"csrf\" on every request (GET /api/session)", request_id, action)
        return LiveCall(request_id, action, payload)

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self._send_fn(message)
        except Exception:  # a broken transport must not break the board's listener or the caller
            log.exception("live API: sending failed")

    def _respond(self, call: LiveCall, payload: dict[str, Any]) -> None:
        self._send({"id": call.id, "type": "response", "action": call.action, "payload": payload,
                    "timestamp": now()})

    def _error(self, request_id: Any, action: str | None, code: str, message: str) -> None:
        self._send({"id": request_id, "type": "error", "action": action,
                    "payload": {"code": code, "message": one_line(message)}, "timestamp": now()})

    def notify(self, action: str, payload: dict[str, Any]) -> None:
        """Send a notification (not after close)."""
        if not self._closed:
            self._send({"id": uuid.uuid4().hex, "type": "notification", "action": action, "payload": payload,
                        "timestamp": now()})

    # ---- principals ----------------------------------------------------------------------------------
    def owns(self, task: Mapping[str, Any]) -> bool:
        return self.principal is None or task.get("owner") == self.principal

    def task(self, task_id: str) -> dict[str, Any]:
        """The task, when this session may see it; TaskNotFound otherwise (whether or not it exists)."""
        found: dict[str, Any] = self.board.get_task(task_id)
        if not self.owns(found):
            raise TaskNotFound(task_id)
        return found

    def tasks(self, state: str | None = None, agent: str | None = None) -> list[dict[str, Any]]:
        return [task for task in self.board.list_tasks(state=state, agent=agent) if self.owns(task)]

    def on_task(self, call: LiveCall, act: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        """`act(task_id)` on the task the payload names, once this session may see it."""
        task_id = task_id_of(call.payload)
        self.task(task_id)
        return act(task_id)

    # ---- subscriptions -------------------------------------------------------------------------------
    def _listen(self) -> None:
        with self._lock:
            if self._remove is None and not self._closed:
                self._remove = self.board.add_listener("task", self._changed)

    def _changed(self, change: dict[str, Any]) -> None:
        """The board's "task" listener: catch up the task's cursor; tell a board subscriber."""
        task = change.get("task") or {}
        cursor = self._cursors.get(task.get("id", ""))
        if cursor is not None:
            cursor.catch_up(change.get("seq"))
        if self._watch_board and self.owns(task):
            with self._board_lock:  # an appended event leaves the task as it was: nothing to tell (linear cost)
                if self._watch_board and self._told.get(task.get("id")) != task:
                    self._told[task.get("id")] = task
                    self.notify("task.updated", {"task": task, "seq": change.get("seq")})

    def subscribe_task(self, call: LiveCall) -> None:
        task_id = task_id_of(call.payload)
        after = _field(call.payload, "after", (int,), "a sequence number (0: from the start)") or 0
        if after < 0:
            raise LiveError("invalid", "payload.after must be 0 or more")
        self.task(task_id)
        if after and [e["seq"] for e in self.board.task_events(task_id, after - 1, 1)["events"]] != [after]:
            raise LiveError("invalid", f"payload.after {after} is past the last event of task {task_id}: "
                                       "subscribe from 0")
        self._listen()
        cursor = Cursor(self.board, task_id, after, self.notify)
        with cursor.lock:
            with self._lock:
                old, self._cursors[task_id] = self._cursors.get(task_id), cursor
            if old is not None:
                old.stop()
            self._respond(call, {"success": True, "task_id": task_id, "seq": last_seq(self.board, task_id, after)})
            cursor.catch_up()
        if self._closed:
            cursor.stop()

    def unsubscribe_task(self, call: LiveCall) -> dict[str, Any]:
        task_id = task_id_of(call.payload)
        self.task(task_id)
        with self._lock:
            cursor = self._cursors.pop(task_id, None)
        if cursor is not None:
            cursor.stop()
        return {"success": True, "task_id": task_id}

    def subscribe_board(self, call: LiveCall) -> None:
        self._listen()
        with self._board_lock:
            self._watch_board = True
            self._respond(call, {"success": True, "tasks": self.tasks()})

    def close(self) -> None:
        """Stop every subscription and remove the board listener; nothing is sent after this returns."""
        with self._lock:
            self._closed = True
            remove, self._remove = self._remove, None
            cursors = list(self._cursors.values())
            self._cursors.clear()
        self._watch_board = False
        if remove is not None:
            remove()
        for cursor in cursors:
            cursor.stop()
        with self._board_lock:
            pass


class _Refused(LiveError):
    """A request refused before its action ran: what is known of it so far."""

    def __init__(self, code: str, message: str, request_id: Any = None, action: str | None = None) -> None:
        super().__init__(code, message)
        self.id, self.action = request_id, action


class LiveConnection(Protocol):
    """What LiveSocket uses of httpd.ws_server's connection (thread-safe there)."""

    @property
    def principal(self) -> str | None: ...

    def send(self, message: str | bytes) -> bool: ...

    def close(self, code: int = 1000, reason: str = "") -> None: ...


class LiveSocket:
    """The WsHandler of one `/ws` connection: a LiveSession whose messages go out as JSON text frames."""

    def __init__(self, board: Any, *, cookie_auth: bool = False, csrf_check: Callable[[str], bool] | None = None,
                 max_message: int = MAX_MESSAGE) -> None:
        self.board, self.cookie_auth, self.csrf_check, self.max_message = board, cookie_auth, csrf_check, max_message
        self.session: LiveSession | None = None

    def opened(self, conn: LiveConnection) -> None:
        def send(message: dict[str, Any]) -> None:
            conn.send(json.dumps(message, ensure_ascii=False, separators=(",", ":")))

        self.session = LiveSession(self.board, conn.principal, send, cookie_auth=self.cookie_auth,
                                   csrf_check=self.csrf_check, max_message=self.max_message)

    def received(self, conn: LiveConnection, message: str | bytes) -> None:
        if self.session is not None:
            self.session.handle(message)

    def closed(self, conn: LiveConnection, code: int, reason: str) -> None:
        if self.session is not None:
            self.session.close()


# ---- the actions ------------------------------------------------------------------------------------------
def _status(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    status = session.board.status()
    tasks = session.tasks()
    return {"running": status["running"], "active_agents": sum(task["state"] in ACTIVE for task in tasks),
            "queued_tasks": sum(task["state"] == QUEUED for task in tasks),
            "max_concurrent": status["max_concurrent"]}


def _queue(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    queued = session.tasks(state=QUEUED)  # creation order; the scheduler takes them by priority, then that
    order = {task["id"]: index for index, task in enumerate(queued)}
    queued.sort(key=lambda task: (RANK.get(task["priority"], len(RANK)), order[task["id"]]))
    return {"tasks": queued}


def _start(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    """Make the task go: a held one is released; a queued or running one is left as it is (the scheduler
    starts queued tasks as slots free up). agent_type must be the task's agent; priority re-orders it."""
    task = session.task(task_id_of(call.payload))
    agent, priority = text(call.payload, "agent_type"), priority_of(call.payload)
    if agent is not None and agent != task["agent"]:
        raise LiveError("invalid", f"task {task['id']} runs on agent {task['agent']!r}, not {agent!r}: the agent "
                                   "is chosen when the task is created")
    if task["state"] != HELD and task["state"] not in STARTED:
        raise LiveError("refused", f"task {task['id']} is {task['state']}: it cannot start; "
                                   "orchestrator.prompt runs it again with a follow-up")
    if priority is not None and priority != task["priority"]:
        task = session.board.set_priority(task["id"], priority)
    if task["state"] == HELD:
        task = session.board.release_task(task["id"])
    return {"success": True, "task_id": task["id"], "agent_instance_id": f"{task['agent']}:{task['id']}",
            "state": task["state"]}


def _trigger(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    task = session.task(task_id_of(call.payload))
    if task["state"] != QUEUED:
        task = session.board.release_task(task["id"])
    return {"success": True, "task_id": task["id"], "state": task["state"]}


def _stop(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    reason, force = text(call.payload, "reason"), flag(call.payload, "force")
    task = session.on_task(call, session.board.cancel_task)  # the board always stops the agent: force or not
    log.info("live API: task %s cancelled (%s)%s", task["id"], reason or "no reason given", " [force]" * force)
    return {"success": True, "task_id": task["id"], "state": task["state"]}


def _prompt(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    prompt = text(call.payload, "prompt", required=True)
    task = session.on_task(call, lambda task_id: session.board.prompt_task(task_id, prompt))
    return {"success": True, "task_id": task["id"], "state": task["state"]}


def _complete(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    task = session.on_task(call, lambda task_id: session.board.accept_task(task_id, merge=False))
    return {"success": True, "task_id": task["id"], "state": task["state"]}


def _create(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    payload = call.payload
    prompt = text(payload, "description") or text(payload, "prompt")
    if prompt is None:
        raise LiveError("bad_request", "payload.description is missing: send the task's prompt as text")
    blockers = _field(payload, "blocked_by", (list,), "a list of task ids") or []
    for blocker in blockers:
        if not isinstance(blocker, str):
            raise LiveError("bad_request", f"payload.blocked_by holds task ids (text), not {_kind(blocker)}")
        session.task(blocker)
    metadata = _field(payload, "metadata", (dict,), "an object")
    labels = _field(payload, "labels", (list,), "a list of labels")
    task: dict[str, Any] = session.board.create_task(
        prompt, title=text(payload, "title"), agent=text(payload, "agent_type"),
        priority=priority_of(payload) or tf.DEFAULT_PRIORITY, blocked_by=blockers, base=text(payload, "base"),
        hold=flag(payload, "hold"), owner=session.principal, metadata=metadata, task_id=text(payload, "id"),
        labels=labels)
    echoed: dict[str, Any] = {key: payload[key] for key in ("board_id", "column_id") if key in payload}
    return {**task, **echoed}


def _get(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    return session.task(task_id_of(call.payload))


def _list(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    return {"tasks": session.tasks(text(call.payload, "state"), text(call.payload, "agent"))}


def _answer(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    answer = _field(call.payload, "answer", (str, dict), "an option id or an object", required=True)
    result: dict[str, Any] = session.on_task(call, lambda task_id: session.board.answer_task(task_id, answer))
    return result


def _accept(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    merge = flag(call.payload, "merge")
    result: dict[str, Any] = session.on_task(call, lambda task_id: session.board.accept_task(task_id, merge=merge))
    return result


def _agents(session: LiveSession, call: LiveCall) -> dict[str, Any]:
    tasks = session.tasks()
    return {"agents": [{"id": agent["id"], "name": agent["id"], "ready": agent["ready"], "why": agent.get("why"),
                        "running": sum(t["agent"] == agent["id"] and t["state"] in ACTIVE for t in tasks),
                        "queued": sum(t["agent"] == agent["id"] and t["state"] == QUEUED for t in tasks)}
                       for agent in session.board.status()["agents"]]}


Action = Callable[[LiveSession, LiveCall], "dict[str, Any] | None"]
# action -> its handler: the response payload, or None when the handler answered itself (subscriptions)
ACTIONS: Mapping[str, Action] = {
    "orchestrator.status": _status,
    "orchestrator.queue": _queue,
    "orchestrator.start": _start,
    "orchestrator.trigger": _trigger,
    "orchestrator.stop": _stop,
    "orchestrator.prompt": _prompt,
    "orchestrator.complete": _complete,
    "task.create": _create,
    "task.get": _get,
    "task.list": _list,
    "task.subscribe": LiveSession.subscribe_task,
    "task.unsubscribe": LiveSession.unsubscribe_task,
    "board.subscribe": LiveSession.subscribe_board,
    "task.answer": _answer,
    "task.diff": lambda session, call: session.on_task(call, session.board.task_diff),
    "task.accept": _accept,
    "task.discard": lambda session, call: session.on_task(call, session.board.discard_task),
    "task.cancel": lambda session, call: session.on_task(call, session.board.cancel_task),
    "agents.list": _agents,
}
