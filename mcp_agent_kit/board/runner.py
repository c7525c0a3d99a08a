"""board.runner: one board task's run — its workspace, its agent process, one ACP turn, told to the task as it goes.

`TaskRunner.launch(task)` takes a task the scheduler has just moved to `running` and, on a short-lived
thread, makes or re-attaches its workspace (board.workspaces: a new worktree on the first start, the
same one on a follow-up or after a restart; its `workspace`, `branch` and `base` recorded in the task),
spawns the task's ACP agent in it (acp.client.AcpAgent: cwd = the workspace, fs and terminal calls
confined to it, the environment ours less git's repository variables plus the entry's `env`; under bwrap,
terminals included, when the entry has `"sandbox": "bwrap"`: docs/sandbox.md), opens the
session (`session/load` of the task's `sessionId` on a follow-up when the agent can load sessions, else
`session/new`; `mcpServers` = the config's plus the agent entry's plus the task's own tools, board.task_scope:
ask_user, create_subtask, report_progress, on a token valid while the run lasts) and runs ONE turn through the one
turn engine (turns.engine). One agent process per running task: simplest, no session of one task can
see another's, and a crash ends one task only; the process is stopped when the turn ends.

What the turn says goes to the task's transcript as deltas (EVENT_KINDS: message, thought, plan,
tool_call, answer, progress; never the text so far), between a `turn_start` and a `turn_end`. A
permission request the entry's `approve` does not answer itself moves the task `ask` (needs_input) with
its question; `answer` hands the chosen option straight to the waiting agent, then moves `answer`. The
end moves `finish` (result = the turn's reply text) or `fail` (STOP_FAILS, or the error). `cancel`
cancels the turn (`session/cancel`), then moves `cancel`; the end that follows moves nothing.
An agent's pid is noted in the data directory (`agents/<task>.json`, with the replica running it) while it
runs: a board started after a crash stops the agents its previous life left behind (`stop_orphans`), before
they edit on in a workspace whose task was interrupted; replicas sharing the data directory leave a live
replica's agents alone. `reconcile(lost)` stops the runs whose task the store no longer has running here
(cancelled on another replica, or taken over after a stall).
Agent hosts (board.hosts): a task placed on a host (its `host`) connects to the agent's ACP endpoint there
(board.host_workspaces: the entry, the workspace the host keeps unless `mounted`). When its connection drops and
the host no longer answers (HostPool.lost), or the health checks find the host down (`host_down`), the run is
settled like a dead replica's (BoardTasks.vanished): back to `queued` when it changed nothing (no edit tool call
or file write seen, an empty diff where one can be read), else `failed` with "host <id> vanished".
Rules: one lock per run orders the engine's calls and the task's moves (an answer's move lands before the
end it lets happen); nothing here blocks a connection's reader thread but store writes; a run that vanished
(the board closing) moves nothing, so the task keeps its state for the restart rule.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.errors import AcpError
from mcp_agent_kit.acp.client.permissions import PermissionRequest
from mcp_agent_kit.board.errors import BoardError, TaskConflict, TaskInvalid, TransitionRefused
from mcp_agent_kit.board.host_workspaces import edits
from mcp_agent_kit.board.states import transition
from mcp_agent_kit.board.task_scope import TaskScope
from mcp_agent_kit.board.tasks import BoardTasks
from mcp_agent_kit.board.workspaces import SetupFailed, Workspace, WorkspaceError, Workspaces, safe_id
from mcp_agent_kit.turns.engine import EngineTurn, TurnEngine, TurnOutcome, asked

if TYPE_CHECKING:
    from mcp_agent_kit.board.host_workspaces import RemoteWorkspaces

log = logging.getLogger("mcp_agent_kit.board")
TEXT_MOST = 190_000  # a result or error is cut to its last this many characters (task_fields.TEXT_MAX is 200k)
STOP_FAILS: Mapping[str, str] = {  # an ACP stopReason -> why the task failed (any other: the turn finished)
    "cancelled": "the turn was cancelled (it ran past the agent's timeout, or the agent stopped it)",
    "refusal": "the agent refused to go on",
}
Tell = Callable[[dict[str, Any], int], None]  # (the task as last seen, the transcript's seq) -> the "task" listeners


def _tool_call(event: ev.ToolCall) -> dict[str, Any]:
    """A tool call (or its update) as a transcript delta: only the fields it carries (diffs are in `content`)."""
    said = {"toolCallId": event.tool_call_id, "title": event.title, "toolKind": event.tool_kind,
            "status": event.status, "content": event.content, "locations": event.locations}
    return {"type": "tool_call", "update": event.kind, **{k: v for k, v in said.items() if v is not None}}


# acp event class -> its transcript entry (None: not told; the class is matched exactly, then by its base)
EVENT_KINDS: Mapping[type[ev.Event], Callable[[Any], dict[str, Any] | None]] = {
    ev.AgentMessageChunk: lambda e: {"type": "message", "text": e.text} if e.text else None,
    ev.AgentThoughtChunk: lambda e: {"type": "thought", "text": e.text} if e.text else None,
    ev.Plan: lambda e: {"type": "plan", "entries": e.entries},
    ev.ToolCall: _tool_call,
    ev.ToolCallUpdate: _tool_call,
    ev.PermissionDecision: lambda e: {"type": "answer", "toolCallId": e.tool_call_id, "outcome": e.outcome,
                                      "optionId": e.option_id, "optionKind": e.option_kind},
    ev.FileWritten: lambda e: {"type": "progress", "text": f"wrote {e.path}" if e.error is None
                               else f"could not write {e.path}: {e.error}"},
}


def transcript_entry(event: ev.Event) -> dict[str, Any] | None:
    """The transcript delta for one turn event (None: not worth a line)."""
    build = EVENT_KINDS.get(type(event))
    return None if build is None else build(event)


def question_of(request: PermissionRequest) -> dict[str, Any]:
    """A permission request as the task's `question`."""
    return {"kind": "permission", "message": asked(request),
            "options": [{"id": o.option_id, "name": o.name, "kind": o.kind} for o in request.options]}


def _start_time(pid: int) -> str | None:
    """When process `pid` started (field 22 of /proc/PID/stat), None where that cannot be read (gone, no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _tail(text: str) -> str:
    return text if len(text) <= TEXT_MOST else "…" + text[-TEXT_MOST:]


class BoardRun:
    """One task's run in this process: its agent, its engine and turn, the pending question."""

    def __init__(self, task: dict[str, Any], spec: Any) -> None:
        self.task_id, self.task, self.spec = str(task["id"]), task, spec
        self.lock = threading.RLock()
        self.engine = TurnEngine(spec.approve, spec.timeout)
        self.agent: Any = None  # acp.client.AcpAgent once spawned
        self.turn: EngineTurn | None = None
        self.question: PermissionRequest | None = None
        self.stopped = False  # cancelled, or the board closes: the end moves nothing
        self.edited = False  # the agent changed files in this run (an edit tool call, a file written)


class TaskRunner:
    """The runs of this process (see the module docstring)."""

    def __init__(self, tasks: BoardTasks, workspaces: Workspaces, config: Any, tell: Tell,
                 remote: RemoteWorkspaces | None = None) -> None:
        self.tasks, self.workspaces, self.config, self.tell = tasks, workspaces, config, tell
        self.remote = remote  # runs on agent hosts (board.host_workspaces), with their pool
        self.hosts = remote.pool if remote is not None else None
        self._runs: dict[str, BoardRun] = {}
        self._lock = threading.Lock()
        self._closed = False
        # the MCP server each session gets, scoped to its task: ask_user, create_subtask, report_progress (its
        # token is granted as the session opens and revoked as the run ends, is cancelled or the board closes)
        self.scope = TaskScope(self)

    # ---- starting ------------------------------------------------------------------------------
    def launch(self, task: dict[str, Any]) -> None:
        """Run `task` (already moved to `running` by this process) on a short-lived thread."""
        run = BoardRun(task, self._spec(task))
        with self._lock:
            if self._closed:
                return
            self._runs[run.task_id] = run
        threading.Thread(target=self._begin, args=(run,), name=f"board-run-{run.task_id}", daemon=True).start()

    def _spec(self, task: dict[str, Any]) -> Any:
        """The agent's entry (gateway.agents_config.AgentSpec); on a host, pointed at the agent's endpoint there."""
        spec = self.config.agents.get(task["agent"])
        return spec if not task.get("host") or self.remote is None else self.remote.spec_for(task, spec)

    def ready(self, agent_id: str) -> tuple[bool, str]:
        """Whether an agent can be started now, and why not."""
        spec = self.config.agents.get(agent_id)
        if spec is None:
            return False, "not configured"
        if spec.url:
            return True, ""  # a remote agent: its first use tells whether it is reachable
        command = spec.command
        found = os.path.isfile(command) if os.sep in command else shutil.which(command) is not None
        return found, "" if found else f"command {command!r} not found"

    def _begin(self, run: BoardRun) -> None:
        try:
            workspace = self._workspace(run)
            if workspace is None:
                return
            session, note = self._session(run, workspace)
            with run.lock:
                if run.stopped:
                    self._retire(run)
                    return
                run.turn = run.engine.turn(lambda: session, str(run.task["prompt"]), _Observer(self, run))
            self.say(run, {"type": "turn_start", "prompt": run.task["prompt"], "sessionId": session.id,
                            "replica": self.tasks.replica, **({"note": note} if note else {})})
            run.turn.start()
        except (AcpError, BoardError, OSError) as exc:
            self._fail(run, f"{exc}")
        except Exception as exc:  # a bug here must not leave the task running for ever
            log.exception("board: starting task %s failed", run.task_id)
            self._fail(run, f"the board could not start the task: {type(exc).__name__}: {exc}")

    def _workspace(self, run: BoardRun) -> Workspace | None:
        """The task's workspace, made on its first start, attached again after; recorded in the task."""
        task = run.task
        if self.remote is not None and self.remote.kept(task):  # the host makes and keeps it
            workspace = self.remote.create(task)
            self._record_workspace(run, workspace)
            return workspace
        found = self.workspaces.find(run.task_id)
        if found is not None:
            workspace = self.workspaces.attach(found)
        elif task.get("workspace"):
            raise WorkspaceError(f"the workspace of task {run.task_id} at {task['workspace']} is gone: discard the "
                                 "task, or create a new one")
        else:
            try:
                workspace = self.workspaces.create(run.task_id, str(task.get("title") or ""), base=task.get("base"))
            except SetupFailed as exc:
                self._record_workspace(run, exc.workspace)
                self._fail(run, f"{exc}" + (f"\n{exc.output}" if exc.output else ""))
                return None
            self._record_workspace(run, workspace)
        return workspace

    def _record_workspace(self, run: BoardRun, workspace: Workspace) -> None:
        base = run.task.get("base") or workspace.base_branch or workspace.base_commit
        run.task = self.tasks.update(run.task_id, {"workspace": workspace.path, "branch": workspace.branch,
                                                   "base": base})

    def _session(self, run: BoardRun, workspace: Workspace) -> tuple[Any, str]:
        """Spawn the agent in the workspace and open the task's session: (the session, a note for the transcript)."""
        from mcp_agent_kit.acp.client.client import AcpAgent, ClientOptions, Timeouts
        from mcp_agent_kit.board.git import git_environment

        spec = run.spec
        env = git_environment({**spec.env, "MCP_AGENT_KIT_TASK_ID": run.task_id,
                               "MCP_AGENT_KIT_WORKSPACE": workspace.path})
        timeouts = Timeouts(turn=spec.timeout, permission=spec.timeout)
        if spec.url:  # a remote agent: its fs and terminal requests are still served here, in the workspace
            from mcp_agent_kit.gateway.agents_config import remote_headers
            from mcp_agent_kit.gateway.config import ConfigError

            try:
                headers = remote_headers(spec, os.environ)
            except ConfigError as exc:
                raise AcpError(str(exc)) from None
            agent = AcpAgent.connect(spec.url, headers, cwd=workspace.path,
                                     policy=run.engine, options=ClientOptions(terminal=True), log=log.info,
                                     timeouts=timeouts)
        else:
            agent = AcpAgent.spawn(spec.command, spec.args, env=env, cwd=workspace.path, policy=run.engine,
                                   options=ClientOptions(terminal=True), log=log.info, sandbox=spec.sandbox,
                                   sandbox_binds=self._sandbox_binds() if spec.sandbox is not None else (),
                                   timeouts=timeouts)
        with run.lock:
            run.agent = agent
        self._note_agent(run.task_id, agent.process.pid if agent.process is not None else None)
        agent.initialize()
        servers = [*self.config.mcp_servers, *spec.mcp_servers]
        servers.append(self.scope.grant(run, {str(server.get("name")) for server in servers}))
        previous, note = run.task.get("sessionId"), ""
        if previous and agent.capability("loadSession") is True:
            try:
                session = agent.load_session(previous, workspace.path, servers)
            except AcpError as exc:
                note = f"session/load of {previous} failed ({exc}): a new session"
                session = agent.new_session(workspace.path, servers)
        else:
            if previous:
                note = f"the agent cannot load session {previous} (no loadSession): a new session"
            session = agent.new_session(workspace.path, servers)
        if session.id != previous:
            run.task = self.tasks.update(run.task_id, {"sessionId": session.id})
        return session, note

    def _sandbox_binds(self) -> tuple[str, ...]:
        """What a sandboxed agent sees read-only beyond its worktree, wherever it lives: the repository's git
        directory (git reads work in the worktree; writes there stay refused) and the kit's own files and
        Python, which the task tools' server (board.task_scope) runs from."""
        kit = str(Path(__file__).resolve().parents[2])
        return (str(self.workspaces.root / ".git"), kit, sys.prefix, sys.base_prefix)

    # ---- what the turn says (the observer calls these under the run's lock) ----------------------
    def say(self, run: BoardRun, entry: dict[str, Any]) -> None:
        seq = self.tasks.append(run.task_id, {"kind": entry["type"], **entry})
        self.tell(run.task, seq)

    def move(self, run: BoardRun, action: str, fields: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """Move the task; None when it was moved elsewhere meanwhile (cancelled on another replica, say)."""
        try:
            run.task = self.tasks.move(run.task_id, action, fields).task
        except (TransitionRefused, TaskConflict) as exc:
            log.info("board: task %s: %s not applied (%s)", run.task_id, action, exc)
            return None
        return run.task

    def paused(self, run: BoardRun, request: PermissionRequest) -> None:
        with run.lock:
            if run.stopped:
                return
            question = question_of(request)
            run.question = request
            self.say(run, {"type": "question", "question": question})
            self.move(run, "ask", {"question": question})

    def ended(self, run: BoardRun, end: TurnOutcome) -> None:
        with run.lock:
            run.question = None
            if not self._closed:
                self.say(run, {"type": "turn_end", "stopReason": end.stop_reason,
                                **({"error": end.error} if end.error else {})})
            if not run.stopped and not (end.error and self._vanished(run)):
                why = STOP_FAILS.get(end.stop_reason or "") if end.stop_reason else f"the agent failed: {end.error}"
                if why is None:
                    self.move(run, "finish", {"result": _tail(end.text)})
                else:
                    self.move(run, "fail", {"error": _tail(why), "result": _tail(end.text) or None})
            self._retire(run)

    def _fail(self, run: BoardRun, why: str) -> None:
        with run.lock:
            if not run.stopped and not self._vanished(run):
                self.say(run, {"type": "error", "text": _tail(why)})
                self.move(run, "fail", {"error": _tail(why)})
            self._retire(run)

    # ---- agent hosts ------------------------------------------------------------------------------------
    def _vanished(self, run: BoardRun, checked: bool = False) -> bool:
        """The run's host is gone (its connection dropped and a check fails; `checked`: known down): settle the
        task (BoardTasks.vanished) and stop the run. False when the run is not on a host, or the host lives."""
        host = run.task.get("host")
        if not host or self.hosts is None or run.stopped or not (checked or self.hosts.lost(host)):
            return False
        run.stopped = True
        why = f"host {host} vanished"
        self.scope.revoke(run, why)
        moved = self.tasks.vanished(run.task_id, why, f"host {host} running this task vanished",
                                    not run.edited and self.remote is not None and self.remote.unchanged(run.task_id))
        if moved is not None:
            run.task = moved.task
        log.warning("board: task %s: %s (%s)", run.task_id, why, moved.task["state"] if moved else "moved meanwhile")
        return True

    def host_down(self, host: str) -> None:
        """The health checks found `host` down: settle every run of this process on it."""
        with self._lock:
            runs = [run for run in self._runs.values() if run.task.get("host") == host]
        for run in runs:
            with run.lock:
                settled = self._vanished(run, checked=True)
            if settled:
                self._retire(run)

    def _retire(self, run: BoardRun) -> None:
        """Forget the run and stop its agent (on a thread of its own: this may be the agent's reader)."""
        self.scope.revoke(run)
        with self._lock:
            if self._runs.get(run.task_id) is run:
                del self._runs[run.task_id]
        agent, run.agent = run.agent, None
        if agent is not None:
            threading.Thread(target=self._stop_agent, args=(run.task_id, agent), name=f"board-stop-{run.task_id}",
                             daemon=True).start()

    def _stop_agent(self, task_id: str, agent: Any) -> None:
        agent.close()
        self._note_agent(task_id, None)

    # ---- agent processes that outlive a killed board ---------------------------------------------
    @property
    def _agents_dir(self) -> Path:
        return self.workspaces.data_dir / "agents"

    def _note_agent(self, task_id: str, pid: int | None) -> None:
        """Record (pid) or forget (None) the agent process of a task, so that a board started after a crash
        can stop the agent its previous life left running in the task's workspace."""
        path = self._agents_dir / f"{safe_id(task_id)}.json"
        if pid is None:
            path.unlink(missing_ok=True)
            return
        self._agents_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"taskId": task_id, "pid": pid, "start": _start_time(pid),
                                    "replica": self.tasks.replica}), "utf-8")

    def stop_orphans(self, only: Collection[str] | None = None) -> list[str]:
        """Stop (SIGKILL, the whole process group) every agent (of the tasks `only`, None: all) recorded by an
        earlier life of this board, or by a replica that died, that still runs: it would go on editing a
        workspace whose task is interrupted. A live replica's agents are left alone. The task ids it stopped."""
        stopped = []
        for path in sorted(self._agents_dir.glob("*.json")) if self._agents_dir.is_dir() else []:
            try:
                note = json.loads(path.read_text("utf-8"))
                pid, start, task_id = int(note["pid"]), note.get("start"), str(note.get("taskId"))
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)
                continue
            if (only is not None and task_id not in only) or self.run_of(task_id) is not None \
                    or self.tasks.live_elsewhere(task_id, note.get("replica")):
                continue
            if start is not None and _start_time(pid) == start:  # the same process, not a reused pid
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                    stopped.append(task_id)
            path.unlink(missing_ok=True)
        return stopped

    # ---- a person's actions --------------------------------------------------------------------
    def run_of(self, task_id: str) -> BoardRun | None:
        with self._lock:
            return self._runs.get(task_id)

    def answer(self, task_id: str, answer: str | Mapping[str, Any]) -> dict[str, Any]:
        """Hand the answer to the agent waiting on the task's question, then move `answer`."""
        task = self.tasks.get(task_id)
        transition(task["state"], "answer", task_id)
        run = self.run_of(task_id)
        if run is None:
            raise TaskConflict(f"task {task_id} waits on another board process (replica {self.tasks.replica} does "
                               "not run it): answer it there")
        chosen = answer.get("optionId", answer.get("id")) if isinstance(answer, Mapping) else answer
        with run.lock:
            request, turn = run.question, run.turn
            if request is None or turn is None:
                raise TaskConflict(f"task {task_id}'s question was settled meanwhile: read the task again")
            option = next((o for o in request.options if o.option_id == chosen), None)
            if option is None:
                ids = ", ".join(o.option_id for o in request.options)
                raise TaskInvalid(f"answer {chosen!r} is not one of the question's options: use one of {ids}")
            if not turn.answer(option):
                raise TaskConflict(f"task {task_id}'s question was settled meanwhile: read the task again")
            run.question = None
            moved = self.move(run, "answer")
            return moved if moved is not None else self.tasks.get(task_id)

    def cancel(self, task_id: str) -> dict[str, Any] | None:
        """Cancel the task's turn here and move `cancel`; None when this process does not run it."""
        run = self.run_of(task_id)
        if run is None:
            return None
        with run.lock:
            run.stopped = True
            self.scope.revoke(run, "the task was cancelled")  # a question of ask_user's ends at once
            if run.turn is not None:
                run.turn.cancel()
            moved = self.tasks.move(task_id, "cancel").task
            run.task = moved
        if run.turn is None:
            self._retire(run)
        return moved

    def running_ids(self) -> list[str]:
        """The tasks whose runs are in this process."""
        with self._lock:
            return sorted(self._runs)

    def reconcile(self, lost: Collection[str]) -> None:
        """Stop the runs of the tasks `lost` (board.tasks.BoardTasks.lost: moved, or taken over, elsewhere)."""
        with self._lock:
            runs = [run for task_id, run in self._runs.items() if task_id in lost]
        for run in runs:
            with run.lock:
                run.stopped = True
                self.scope.revoke(run, "the task was moved on another board process")
                if run.turn is not None:
                    run.turn.cancel()
            self.tasks.forget(run.task_id)

    def close(self) -> None:
        """Stop every run's agent; the tasks keep their state (Board.start's recover settles them)."""
        with self._lock:
            self._closed = True
            runs = list(self._runs.values())
        self.scope.close()  # every token revoked, questions in flight answered "closing", the endpoint stopped
        stoppers = []
        for run in runs:
            with run.lock:
                run.stopped = True
                agent, run.agent = run.agent, None
            if agent is not None:
                stopper = threading.Thread(target=self._stop_agent, args=(run.task_id, agent),
                                           name=f"board-close-{run.task_id}", daemon=True)
                stopper.start()
                stoppers.append(stopper)
        for stopper in stoppers:
            stopper.join(10.0)


class _Observer:
    """The turn engine's observer for one run (turns.engine.TurnObserver)."""

    def __init__(self, runner: TaskRunner, run: BoardRun) -> None:
        self.runner, self.run = runner, run

    def update(self, event: ev.Event) -> None:
        if edits(event):
            self.run.edited = True  # (a vanished host's task then fails instead of going back to the queue)
        entry = transcript_entry(event)
        if entry is None:
            return
        with self.run.lock:
            if not self.runner._closed:
                self.runner.say(self.run, entry)

    def paused(self, question: PermissionRequest) -> None:
        self.runner.paused(self.run, question)

    def ended(self, end: TurnOutcome) -> None:
        self.runner.ended(self.run, end)
