"""board.mcp_tools: the board's MCP tools on a kit Server — create, steer and review tasks (issue #26, item 7).

TOOLS is the one table: each tool's name, description, input schema, output schema, annotations and the
Board call it makes. Tools that act on a task take `task_id`. The structuredContent is the task object
(`list_tasks`: {"tasks"}, `task_diff`: {"files", "patch"}, `task_events`: {"events", "next"}), with a
short text for a person or a model beside it (board.render; the diff's text carries its patch, the
events' text the transcript). A board refusal (board.errors.BoardError) or bad input (ValueError) is an
`isError` result whose text names the problem, never a JSON-RPC error. `task_events` long-polls: with
`wait` it returns as soon as the task's transcript grows (Board.add_listener("task")), or when `wait`
seconds pass, or when the tools close (the server stopping). Rules: maps MCP to the Board facade
(BOARD_API.md) and nothing else; the board is any object with the facade's methods.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_agent_kit.board import render
from mcp_agent_kit.board.errors import BoardError
from mcp_agent_kit.board.states import NEEDS_INPUT, REVIEW, STATES
from mcp_agent_kit.board.task_fields import BLOCKERS_MAX, ID_MAX, LABELS_MAX, PRIORITIES
from mcp_agent_kit.core.content import ToolResult, text

SERVER_NAME = "mcp-agent-kit-board"
MAX_WAIT_S = 30.0  # the longest task_events long-poll
EVENTS_LIMIT = 500
SETTLED = frozenset(set(STATES) - {"held", "queued", "running", "needs_input"})  # no transcript growth expected
INSTRUCTIONS = (
    "A board of coding agents on one git repository. create_task queues work for an agent; each task runs in its "
    "own git worktree on its own branch. Follow a task with get_task or task_events; answer its questions with "
    "answer_task; when it reaches `review`, read task_diff, then accept_task (merge: true to merge into the base), "
    "prompt_task for more work, or discard_task.")

# ---- schemas ---------------------------------------------------------------------------------------------
_TEXT_OR_NULL = {"type": ["string", "null"]}
TASK_ID = {"type": "string", "minLength": 1, "maxLength": ID_MAX, "description": "The task's id (from list_tasks)"}
QUESTION = {"type": ["object", "null"], "description": "What the agent asks while the task is needs_input",
            "properties": {"kind": {"enum": ["permission", "question"]}, "message": {"type": "string"},
                           "options": {"type": "array", "items": {"type": "object", "properties": {
                               "id": {"type": "string"}, "name": {"type": "string"}, "kind": {"type": "string"}}}},
                           "schema": {"type": "object"}}}
TASK: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "title": {"type": "string"}, "prompt": {"type": "string"},
        "agent": {"type": "string"}, "priority": {"enum": list(PRIORITIES)}, "state": {"enum": list(STATES)},
        "waiting": {**_TEXT_OR_NULL, "description": "Why a queued task is not running"},
        "blockedBy": {"type": "array", "items": {"type": "string"}},
        **{name: dict(_TEXT_OR_NULL) for name in ("branch", "base", "workspace", "result", "error", "sessionId",
                                                  "startedAt", "endedAt", "progress")},
        "labels": {"type": "array", "items": {"type": "string"}},
        "host": {**_TEXT_OR_NULL, "description": "The agent host it runs on (null: the board's machine)"},
        "createdAt": {"type": "string"},
        "question": QUESTION,
    },
    "required": ["id", "title", "state"],
}
TASK_LIST = {"type": "object", "properties": {"tasks": {"type": "array", "items": TASK}}, "required": ["tasks"]}
DIFF = {"type": "object", "required": ["files", "patch"], "properties": {
    "files": {"type": "array", "items": {"type": "object", "required": ["path", "status"], "properties": {
        "path": {"type": "string"}, "status": {"type": "string"},
        "added": {"type": "integer"}, "removed": {"type": "integer"}}}},
    "patch": {"type": "string", "description": "The unified diff against the task's base"}}}
EVENTS = {"type": "object", "required": ["events", "next"], "properties": {
    "events": {"type": "array", "items": {"type": "object", "required": ["seq"], "properties": {
        "seq": {"type": "integer"}}}},
    "next": {"type": "integer", "description": "Pass as `after` to get the events that follow"}}}


def _annotations(title: str, *, read_only: bool = False, destructive: bool = False,
                 idempotent: bool = False) -> dict[str, Any]:
    hints: dict[str, Any] = {"title": title, "readOnlyHint": read_only, "openWorldHint": False}
    if not read_only:
        hints.update(destructiveHint=destructive, idempotentHint=idempotent)
    return hints


# state -> what to do next, said after a task's summary
NEXT: Mapping[str, str] = {
    NEEDS_INPUT: "answer it with answer_task",
    REVIEW: "read task_diff, then accept_task (merge: true to merge), prompt_task for more, or discard_task",
    "held": "release_task queues it",
    "failed": "prompt_task continues it in the same session; discard_task throws it away",
    "cancelled": "prompt_task continues it in the same session; discard_task throws it away",
}


def _task_text(task: Mapping[str, Any]) -> str:
    lines = [render.summary(task)]
    question = task.get("question")
    if isinstance(question, Mapping):
        lines.append(render.question_text(question))
    if task.get("state") in (REVIEW, "done") and task.get("result"):
        lines.append(f"result: {task['result']}")
    hint = NEXT.get(str(task.get("state")))
    if hint:
        lines.append(f"next: {hint}")
    return "\n".join(lines)


def _list_text(body: Mapping[str, Any]) -> str:
    tasks = body["tasks"]
    return render.table(tasks) if tasks else "no tasks"


def _diff_text(body: Mapping[str, Any]) -> str:
    patch = str(body.get("patch") or "")
    return render.diff_summary(body) + (f"\n\n{patch}" if patch else "")


def _events_text(body: Mapping[str, Any]) -> str:
    events = body["events"]
    shown = render.transcript(events).strip("\n") if events else "no new events"
    return f"{shown}\n(next: {body['next']})"


Call = Callable[[Any, dict[str, Any]], dict[str, Any]]
OWNER = "\0owner"  # the key under which a call's arguments carry the caller's principal (a task's owner)
Say = Callable[[Mapping[str, Any]], str]
# output schema -> the text beside its structuredContent
TEXTS: tuple[tuple[dict[str, Any], Say], ...] = ((TASK, _task_text), (TASK_LIST, _list_text), (DIFF, _diff_text),
                                                (EVENTS, _events_text))


@dataclass(frozen=True)
class Tool:
    """One board tool: what it says, takes and returns, and the Board call behind it."""

    description: str
    properties: dict[str, Any]
    required: list[str]
    output: dict[str, Any]
    annotations: dict[str, Any]
    call: Call | None = None  # None: a method of TaskTools (task_events)

    @property
    def say(self) -> Say:
        return next(say for schema, say in TEXTS if schema is self.output)


def _task_only(method: str) -> Call:
    return lambda board, args: dict(getattr(board, method)(args["task_id"]))


_ON_TASK = {"task_id": TASK_ID}
TOOLS: dict[str, Tool] = {
    "create_task": Tool(
        "Create a task: a prompt for a coding agent, run in its own git worktree on a new branch "
        "task/<id>-<slug>. It is queued (by priority, then creation order) and starts when the board and the "
        "agent have room and every task in blockedBy is done; hold: true keeps it `held` until release_task.",
        {"prompt": {"type": "string", "minLength": 1, "description": "What the agent should do"},
         "title": {"type": "string", "description": "A short title (default: the prompt's first line)"},
         "agent": {"type": "string", "description": "The agent id (default: the board's default agent)"},
         "priority": {"enum": list(PRIORITIES), "description": "urgent, high, normal (default) or low"},
         "blockedBy": {"type": "array", "items": {"type": "string"}, "maxItems": BLOCKERS_MAX,
                       "description": "Task ids that must be done (accepted) before this one starts"},
         "base": {"type": "string", "description": "The git revision to branch from (default: the repository's "
                                                   "current HEAD commit)"},
         "hold": {"type": "boolean", "description": "Create it held: it waits for release_task (default false)"},
         "labels": {"type": "array", "items": {"type": "string"}, "maxItems": LABELS_MAX,
                    "description": "Labels an agent host must all have to run it (e.g. [\"gpu\"])"}},
        ["prompt"], TASK, _annotations("Create a task"),
        lambda board, a: dict(board.create_task(
            a["prompt"], title=a.get("title"), agent=a.get("agent"), priority=a.get("priority", "normal"),
            blocked_by=tuple(a.get("blockedBy") or ()), base=a.get("base"), hold=bool(a.get("hold", False)),
            owner=a.get(OWNER), labels=a.get("labels")))),
    "release_task": Tool("Release a held task: it joins the queue.", _ON_TASK, ["task_id"], TASK,
                         _annotations("Release a held task"), _task_only("release_task")),
    "list_tasks": Tool(
        "List the board's tasks in creation order, each with its state and, when queued, why it waits.",
        {"state": {"enum": list(STATES), "description": "Only tasks in this state"},
         "agent": {"type": "string", "description": "Only tasks of this agent"}},
        [], TASK_LIST, _annotations("List tasks", read_only=True),
        lambda board, a: {"tasks": [dict(t) for t in board.list_tasks(state=a.get("state"), agent=a.get("agent"))]}),
    "get_task": Tool("Get one task: state, why it waits, its question, result or error, branch and worktree.",
                     _ON_TASK, ["task_id"], TASK, _annotations("Get a task", read_only=True), _task_only("get_task")),
    "prompt_task": Tool(
        "Send a follow-up prompt to a task in review, failed or cancelled: it is queued again and continues in "
        "the same agent session and worktree.",
        {**_ON_TASK, "message": {"type": "string", "minLength": 1, "description": "What the agent should do next"}},
        ["task_id", "message"], TASK, _annotations("Prompt a task again"),
        lambda board, a: dict(board.prompt_task(a["task_id"], a["message"]))),
    "answer_task": Tool(
        "Answer the question of a task that needs input: a permission question takes an option id (from the "
        "task's question.options), any other question an object matching its question.schema.",
        {**_ON_TASK, "answer": {"type": ["string", "object"],
                                "description": "An option id, or content matching the question's schema"}},
        ["task_id", "answer"], TASK, _annotations("Answer a task's question"),
        lambda board, a: dict(board.answer_task(a["task_id"], a["answer"]))),
    "cancel_task": Tool("Cancel a task that is held, queued, running or waiting for an answer; its agent is "
                        "stopped, its worktree kept (prompt_task continues it).", _ON_TASK, ["task_id"], TASK,
                        _annotations("Cancel a task"), _task_only("cancel_task")),
    "task_diff": Tool("The task's changes against its base: the files (status, lines added and removed) and the "
                      "patch.", _ON_TASK, ["task_id"], DIFF, _annotations("Show a task's changes", read_only=True),
                      lambda board, a: dict(board.task_diff(a["task_id"]))),
    "accept_task": Tool(
        "Accept a task in review: its changes are committed on its branch; merge: true also merges the branch "
        "into the base branch (refused, with nothing changed, on a conflict or uncommitted work there).",
        {**_ON_TASK, "merge": {"type": "boolean", "description": "Also merge into the base branch (default false)"}},
        ["task_id"], TASK, _annotations("Accept a task's changes"),
        lambda board, a: dict(board.accept_task(a["task_id"], merge=bool(a.get("merge", False))))),
    "discard_task": Tool("Discard a task in review, failed or cancelled: its worktree is removed and its branch "
                         "deleted, with the work on them.", _ON_TASK, ["task_id"], TASK,
                         _annotations("Discard a task's work", destructive=True), _task_only("discard_task")),
    "task_events": Tool(
        "A task's transcript after sequence number `after` (0: from the start): message chunks, thoughts, plan, "
        "tool calls with their diffs, questions and answers, turn start and end, state moves. Pass the returned "
        "`next` as `after` to read on; `wait` (seconds) waits for the next event when there is none yet.",
        {**_ON_TASK, "after": {"type": "integer", "minimum": 0, "description": "The last sequence number seen"},
         "limit": {"type": "integer", "minimum": 1, "maximum": EVENTS_LIMIT,
                   "description": f"Most events returned (default {EVENTS_LIMIT})"},
         "wait": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S,
                  "description": f"Seconds to wait for an event while the task is live (default 0, at most "
                                 f"{MAX_WAIT_S:g})"}},
        ["task_id"], EVENTS, _annotations("Read a task's transcript", read_only=True)),
}

class TaskTools:
    """The board's tools over one Board; `close()` ends the long-polls in flight (the server is stopping)."""

    def __init__(self, board: Any) -> None:
        self.board = board
        self._lock = threading.Lock()
        self._waiting: set[threading.Event] = set()
        self._closed = False

    def install(self, server: Any) -> None:
        """Register every tool of TOOLS on a kit Server (its Registry)."""
        for name, tool in TOOLS.items():
            schema = {"type": "object", "properties": tool.properties, "required": tool.required,
                      "additionalProperties": False}
            call = tool.call or self.task_events
            server.add_raw_tool(name, schema, self._guarded(call, tool.say),
                                description=tool.description, annotations=tool.annotations,
                                output_schema=tool.output)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            waiting = list(self._waiting)
        for woke in waiting:
            woke.set()

    def _guarded(self, call: Call, say: Say) -> Callable[[Any, dict[str, Any]], ToolResult]:
        board = self.board

        def tool(ctx: Any, arguments: dict[str, Any]) -> ToolResult:
            try:  # the caller's principal rides along (after validation: a client cannot set it)
                body = call(board, {**arguments, OWNER: getattr(ctx, "principal", None)})
            except (BoardError, ValueError) as exc:
                return ToolResult([text(str(exc) or type(exc).__name__)], is_error=True)
            return ToolResult([text(say(body))], structured=body)

        return tool

    def task_events(self, board: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        """The events after `after`; with `wait`, the first that come within it (an empty page when none do)."""
        task_id, after = arguments["task_id"], int(arguments.get("after", 0))
        limit, wait = int(arguments.get("limit", EVENTS_LIMIT)), min(float(arguments.get("wait", 0)), MAX_WAIT_S)
        page: dict[str, Any] = dict(board.task_events(task_id, after, limit))
        if page["events"] or wait <= 0:
            return page
        woke = threading.Event()

        def changed(change: Mapping[str, Any]) -> None:
            task = change.get("task")
            if isinstance(task, Mapping) and task.get("id") == task_id:
                woke.set()

        with self._lock:
            if self._closed:
                return page
            self._waiting.add(woke)
        remove = board.add_listener("task", changed)
        try:  # read again once listening: an event written in between is not missed
            page = dict(board.task_events(task_id, after, limit))
            if not page["events"] and board.get_task(task_id).get("state") not in SETTLED:
                woke.wait(wait)
                page = dict(board.task_events(task_id, after, limit))
        finally:
            remove()
            with self._lock:
                self._waiting.discard(woke)
        return page


def board_server(board: Any, *, name: str = SERVER_NAME) -> tuple[Any, TaskTools]:
    """A kit Server offering the board's tools, and the tools (close them before the server stops).

    Its tools/call runs off the HTTP request workers (relayed_methods): a long-poll or a slow git call
    holds none of them."""
    from mcp_agent_kit.server import Server
    from mcp_agent_kit.wire.implementation import VERSION

    server = Server(name, VERSION, instructions=INSTRUCTIONS)
    server.relayed_methods = frozenset({"tools/call"})
    tools = TaskTools(board)
    tools.install(server)
    return server, tools
