"""board.task_scope: the board's side of the tools inside each task's agent session (issue #26, item 6).

Every task's ACP session gets, beside the configured `mcpServers`, an MCP server scoped to that task:
`grant(run)` gives the running task a fresh token and returns the ACP McpServer (stdio: every ACP agent
takes it) the runner adds to the session, `python -P -m mcp_agent_kit.board.task_server` (board.task_server)
with this endpoint and the token in its env. That program forwards each tool call here:
- `ask_user` {message, options | schema}: the task moves `ask` with `question` {kind "question", message,
  options [{id, name, kind "choice"}] or a JSON `schema` (a question without either wants text)}; the call
  waits, event-driven and bounded by the turn's timeout, until `answer(task_id, answer)` (Board.answer_task)
  takes an option id or content the kit's validator (core.schema) finds matching the schema (a JSON text is
  read as its value when the text itself does not match; a mismatch is TaskInvalid naming the problem);
  then the task moves `answer` (running again) and the agent gets {"answer": ...}. No answer in time: the
  task moves back to running and the call fails, saying so.
- `create_subtask` {prompt, title?, agent? (default: this task's agent), priority?, blocked_by_this?}: a
  new board task, blocked by this one when asked; this task's transcript notes it.
- `report_progress` {message}: a `progress` event in the transcript and the task's `progress` field.
Endpoint: the kit's httpd on 127.0.0.1, an ephemeral port, started with the first grant; `POST
/task/<id>/<tool>`, `Authorization: Bearer <token>`, the arguments as a JSON object; 200 {"result": ...} or
an error status with {"error": "<for a person>"}. A question's wait runs on an httpd stream thread, never
holding a request worker. Security: a token is 32 random bytes, kept in memory only, compared in constant
time with the one granted to that task id (another task's token, an empty or cut one are all refused
alike); it is valid only while this process runs the task's turn (`revoke` when the run ends, is
cancelled or the board closes; a question in flight then fails at once); it is never logged, stored or
put in a transcript. A request carrying an Origin (a browser) or a Host other than the loopback address
is refused (DNS rebinding). Rules: moves go through the runner's helpers under the run's lock (one lock
per run orders moves, as board.runner says); lock order: a run's lock, then this module's.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import secrets
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mcp_agent_kit.board import task_fields as tf
from mcp_agent_kit.board.errors import BoardError, TaskConflict, TaskInvalid, TaskNotFound, TransitionRefused
from mcp_agent_kit.board.states import transition
from mcp_agent_kit.board.task_server import ENDPOINT_ENV, SERVER_NAME, TOKEN_ENV, WAIT_ENV
from mcp_agent_kit.httpd import Handler, Limits, Server

__all__ = ["AskedQuestion", "ScopeEndpoint", "TaskScope"]

log = logging.getLogger("mcp_agent_kit.board")
TOKEN_BYTES = 32
MAX_BODY = 1 << 20
SUBTASKS_MOST = 100  # subtasks one run may create (a looping agent does not flood the board)
_PATH = re.compile(r"/task/([A-Za-z0-9][A-Za-z0-9_-]{0,39})/([a-z_]{1,40})")
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
REFUSED = "refused: no valid token for task {id} (a task's token opens only its own task, only while its turn runs)"
# a board refusal -> the HTTP status the program sees (it shows the message either way)
STATUS: tuple[tuple[type[BoardError], int], ...] = ((TaskNotFound, 404), (TaskInvalid, 400),
                                                   (TransitionRefused, 409), (TaskConflict, 409))
Runner = Any  # board.runner.TaskRunner (its module imports this one)
Run = Any  # board.runner.BoardRun


def _option(index: int, option: Any) -> dict[str, str]:
    """One ask_user option (a text, or {"id", "name"?}) as a question option."""
    if isinstance(option, str):
        option = {"id": option}
    if not isinstance(option, Mapping) or not isinstance(option.get("id"), str) or not option["id"].strip():
        raise TaskInvalid(f"options[{index}] must be a text or an object with a text id")
    return {"id": option["id"], "name": str(option.get("name") or option["id"]), "kind": "choice"}


@dataclass
class AskedQuestion:
    """One ask_user question waiting for its answer; `done` is set when it is settled (answer or error)."""

    question: dict[str, Any]
    validator: Any = None  # core.schema.Validator (a schema question)
    done: threading.Event = field(default_factory=threading.Event)
    answer: Any = None
    error: str | None = None

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> AskedQuestion:
        """The question ask_user's arguments make; TaskInvalid names what is wrong with them."""
        from mcp_agent_kit.core.schema import SchemaError, compile_schema

        options, schema = arguments.get("options"), arguments.get("schema")
        if options is not None and schema is not None:
            raise TaskInvalid("ask_user takes options or a schema, not both")
        if options is not None and (not isinstance(options, list) or not options):
            raise TaskInvalid("options must be a non-empty list of choices")
        asked: dict[str, Any] = {"kind": "question", "message": arguments.get("message")}
        if options is not None:
            asked["options"] = [_option(i, option) for i, option in enumerate(options)]
            ids = [o["id"] for o in asked["options"]]
            if len(set(ids)) != len(ids):
                raise TaskInvalid("options must have distinct ids")
        else:
            asked["schema"] = {"type": "string"} if schema is None else schema
        question = tf.check_question("question", asked)
        if not str(question["message"]).strip():
            raise TaskInvalid("message must say what the agent asks")
        if "schema" not in question:
            return cls(question)
        try:
            return cls(question, compile_schema(question["schema"]))
        except SchemaError as exc:
            raise TaskInvalid(f"schema is not a JSON schema the board can check: {exc}") from None

    def check(self, answer: Any) -> Any:
        """The answer as the agent gets it: an option id, or content matching the schema; else TaskInvalid."""
        if self.validator is None:
            chosen = answer.get("optionId", answer.get("id")) if isinstance(answer, Mapping) else answer
            ids = [o["id"] for o in self.question["options"]]
            if chosen not in ids:
                raise TaskInvalid(f"answer {chosen!r} is not one of the question's options: use one of "
                                  f"{', '.join(ids)}")
            return chosen
        problem = self.validator.first_error(answer)
        if problem is not None and isinstance(answer, str):  # a JSON text typed on a command line
            try:
                decoded = json.loads(answer)
            except ValueError:
                decoded = None
            if decoded is not None and self.validator.first_error(decoded) is None:
                return decoded
        if problem is not None:
            where = f"at {problem.path}: " if problem.path else ""
            raise TaskInvalid(f"the answer does not match the question's schema: {where}{problem.message}")
        return answer

    def settle(self, answer: Any = None, error: str | None = None) -> None:
        self.answer, self.error = answer, error
        self.done.set()


@dataclass
class _Grant:
    """What one run's token opens: the run, its question waiting for an answer, the subtasks it made."""

    token: bytes
    run: Run
    asked: AskedQuestion | None = None
    subtasks: int = 0


class TaskScope:
    """The task-scoped tools of one board process (see the module docstring)."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self._lock = threading.Lock()
        self._grants: dict[str, _Grant] = {}  # task id -> the grant of the run here
        self._endpoint: ScopeEndpoint | None = None
        self._closed = False

    # ---- tokens ------------------------------------------------------------------------------------
    def grant(self, run: Run, taken: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
        """A fresh token for the run's task; the ACP McpServer (stdio) that gives its session the tools.
        `taken`: the names of the session's other servers (ours gets another name when one is SERVER_NAME)."""
        endpoint = self._serving()
        token = secrets.token_urlsafe(TOKEN_BYTES)
        with self._lock:
            self._grants[run.task_id] = _Grant(token.encode("ascii"), run)
        host, port = endpoint.server_address
        wait = float(run.spec.timeout)
        package_root = str(Path(__file__).resolve().parents[2])
        env = {ENDPOINT_ENV: f"http://{host}:{port}/task/{run.task_id}", TOKEN_ENV: token,
               WAIT_ENV: f"{wait + 60:g}", "PYTHONPATH": package_root}
        name = SERVER_NAME if SERVER_NAME not in taken else "mcp-agent-kit-board"
        # -P: `-m` must not put the cwd (the task's worktree, maybe a checkout of this kit) before the kit
        return {"name": name, "command": sys.executable, "args": ["-P", "-m", "mcp_agent_kit.board.task_server"],
                "env": [{"name": key, "value": value} for key, value in env.items()]}

    def revoke(self, run: Run, why: str = "the task's turn ended") -> None:
        """The run's token opens nothing from now on; its question in flight fails with `why`. (A newer run of
        the same task, a follow-up already started, keeps its own grant.)"""
        with self._lock:
            grant = self._grants.get(run.task_id)
            if grant is None or grant.run is not run:
                return
            del self._grants[run.task_id]
        if grant.asked is not None:
            grant.asked.settle(error=why)

    def _grant_of(self, run: Run) -> _Grant | None:
        """The run's grant while it holds one (callers hold the run's lock: the grant's `asked` is under it)."""
        with self._lock:
            grant = self._grants.get(run.task_id)
        return grant if grant is not None and grant.run is run else None

    def _run_for(self, task_id: str, token: bytes) -> Run | None:
        """The run a request may act on: the token must be the one granted to `task_id` (constant time)."""
        with self._lock:
            grant = self._grants.get(task_id)
        if grant is None or not token:
            return None
        return grant.run if hmac.compare_digest(grant.token, token) else None

    # ---- the endpoint ------------------------------------------------------------------------------
    def _serving(self) -> ScopeEndpoint:
        with self._lock:
            if self._closed:
                raise BoardError("the board is closing")
            if self._endpoint is None:
                self._endpoint = ScopeEndpoint(self)
                threading.Thread(target=self._endpoint.serve_forever, name="board-task-tools",
                                 daemon=True).start()
            return self._endpoint

    def close(self) -> None:
        """Revoke every token (questions in flight fail at once), then stop the endpoint."""
        with self._lock:
            self._closed = True
            endpoint, self._endpoint = self._endpoint, None
            runs = [grant.run for grant in self._grants.values()]
        for run in runs:
            self.revoke(run, "the board is closing")
        if endpoint is not None:
            endpoint.shutdown()
            endpoint.server_close()

    # ---- the tools ---------------------------------------------------------------------------------
    def call(self, run: Run, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """report_progress and create_subtask (ask_user waits: `ask` and `wait`)."""
        if tool == "report_progress":
            return self.progress(run, arguments.get("message"))
        if tool == "create_subtask":
            return self.subtask(run, arguments)
        raise TaskNotFound(f"no tool {tool!r} here: ask_user, create_subtask, report_progress")

    def progress(self, run: Run, message: Any) -> dict[str, Any]:
        line = " ".join(tf.check_progress("message", message).split())
        with run.lock:
            if run.stopped or self._grant_of(run) is None:  # revoked since the token was checked
                raise TaskConflict(f"task {run.task_id}'s turn has ended")
            self.runner.say(run, {"type": "progress", "text": line})
            run.task = self.runner.tasks.update(run.task_id, {"progress": line})
        return {"progress": line}

    def subtask(self, run: Run, arguments: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            grant = self._grants.get(run.task_id)
            if grant is None or grant.run is not run:
                raise TaskConflict(f"task {run.task_id}'s turn has ended")
            if grant.subtasks >= SUBTASKS_MOST:
                raise TaskInvalid(f"this turn created {SUBTASKS_MOST} subtasks already; that is the most")
        blocked = arguments.get("blocked_by_this", False)
        if not isinstance(blocked, bool):
            raise TaskInvalid("blocked_by_this must be true or false")
        created = self.runner.tasks.create(arguments.get("prompt"), title=arguments.get("title"),
                                           agent=arguments.get("agent") or run.task.get("agent"),
                                           priority=arguments.get("priority") or tf.DEFAULT_PRIORITY,
                                           blocked_by=(run.task_id,) if blocked else ())
        with self._lock:
            grant.subtasks += 1
        with run.lock:
            self.runner.say(run, {"type": "progress", "subtask": created["id"],
                                   "text": f"created subtask {created['id']}: {created['title']}"
                                           + (" (blocked by this task)" if blocked else "")})
        return dict(created)

    def ask(self, run: Run, asked: AskedQuestion) -> None:
        """Pause the task with the question (moves `ask`); TaskConflict when it cannot ask now."""
        with run.lock:
            grant = self._grant_of(run)
            if run.stopped or grant is None:
                raise TaskConflict(f"task {run.task_id}'s turn has ended")
            if grant.asked is not None:
                raise TaskConflict(f"task {run.task_id} already waits for an answer to a question")
            if self.runner.move(run, "ask", {"question": asked.question}) is None:
                state = self.runner.tasks.get(run.task_id)["state"]
                raise TaskConflict(f"task {run.task_id} cannot ask now: it is {state} (a question of the agent's may "
                                   "be waiting already)")
            grant.asked = asked
            if self._grant_of(run) is not grant:  # revoked meanwhile (the board closing): no answer will come
                asked.settle(error="the task's turn ended")
            self.runner.say(run, {"type": "question", "question": asked.question})

    def wait(self, run: Run, asked: AskedQuestion) -> Any:
        """The answer (the task is running again by then); TaskConflict when none came in time or the turn ended."""
        limit = float(run.spec.timeout)
        if not asked.done.wait(limit):
            with run.lock:
                grant = self._grant_of(run)
                mine = grant is not None and grant.asked is asked
                if grant is not None and mine:
                    grant.asked = None
                    self.runner.say(run, {"type": "error", "text": f"no answer within {limit:g} s: the agent "
                                                                    "goes on without one"})
                    self.runner.move(run, "answer")
                    asked.settle(error=f"no answer came within {limit:g} s")
            asked.done.wait(limit)  # settled meanwhile by an answer or a revoke: take that
        if asked.error is not None:
            raise TaskConflict(f"no answer: {asked.error}")
        return asked.answer

    def answer(self, task_id: str, answer: Any) -> dict[str, Any]:
        """Answer an ask_user question (Board.answer_task for a question of kind "question")."""
        task = self.runner.tasks.get(task_id)
        transition(task["state"], "answer", task_id)
        run = self.runner.run_of(task_id)
        if run is None:
            raise TaskConflict(f"task {task_id} waits on another board process (replica {self.runner.tasks.replica} "
                               "does not run it): answer it there")
        with run.lock:
            grant = self._grant_of(run)
            asked = grant.asked if grant is not None else None
            if grant is None or asked is None:
                raise TaskConflict(f"task {task_id}'s question was settled meanwhile: read the task again")
            value = asked.check(answer)
            grant.asked = None
            self.runner.say(run, {"type": "answer", "answer": value})
            moved = self.runner.move(run, "answer")
            asked.settle(value)
        return dict(moved if moved is not None else self.runner.tasks.get(task_id))


class ScopeEndpoint(Server):
    """The loopback HTTP endpoint the task servers call (the kit's httpd engine)."""

    def __init__(self, scope: TaskScope) -> None:
        self.scope = scope
        super().__init__(("127.0.0.1", 0), ScopeHandler.serve(self),
                         Limits(workers=16, max_body=MAX_BODY, max_connections=1024, stream_workers=256))


class ScopeHandler(Handler):
    """One request to the endpoint: check it, act, answer JSON."""

    @property
    def endpoint(self) -> ScopeEndpoint:
        return cast(ScopeEndpoint, self.server)

    def log_message(self, format: str, *args: Any) -> None:  # requests are not logged (nothing secret is in
        return  # a request line, but a board's log has no use for them)

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refusal(self, exc: BoardError) -> None:
        status = next((code for kind, code in STATUS if isinstance(exc, kind)), 400)
        self._json(status, {"error": str(exc) or type(exc).__name__})

    def do_POST(self) -> None:
        found = _PATH.fullmatch(self.path)
        port = self.endpoint.server_address[1]
        if self.headers.get("Origin") is not None or self.headers.get("Host") not in {
                f"{host}:{port}" for host in _LOOPBACK_HOSTS}:
            self._json(403, {"error": "refused: only the board's own task tools call here"})
            return
        if found is None:
            self._json(404, {"error": "not found: POST /task/<id>/<tool>"})
            return
        task_id, tool = found.groups()
        scheme, _, given = str(self.headers.get("Authorization") or "").partition(" ")
        token = given.strip().encode("utf-8", "replace") if scheme.lower() == "bearer" else b""
        run = self.endpoint.scope._run_for(task_id, token)
        if run is None:
            self._json(401, {"error": REFUSED.format(id=task_id)})
            return
        try:
            arguments = json.loads(self.rfile.read() or b"{}")
            if not isinstance(arguments, dict):
                raise ValueError("not an object")
        except ValueError:
            self._json(400, {"error": "the arguments must be a JSON object"})
            return
        try:
            if tool == "ask_user":
                self._ask(run, arguments)
                return
            result = self.endpoint.scope.call(run, tool, arguments)
        except BoardError as exc:
            self._refusal(exc)
            return
        self._json(200, {"result": result})

    def _ask(self, run: Run, arguments: dict[str, Any]) -> None:
        """Pause the task and wait for the answer on a stream thread (no request worker waits for a person)."""
        asked = AskedQuestion.of(arguments)
        self.close_connection = True
        scope = self.endpoint.scope

        def waiting() -> bool:
            try:
                scope.ask(run, asked)
                answer = scope.wait(run, asked)
            except BoardError as exc:
                self._refusal(exc)
            else:
                self._json(200, {"result": {"answer": answer}})
            return False

        if not self.endpoint.hand_off(self.wfile, waiting):  # type: ignore[arg-type]
            self._json(503, {"error": "the board has too many questions open; ask again later"})
