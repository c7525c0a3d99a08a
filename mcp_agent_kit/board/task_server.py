"""board.task_server: the MCP server (stdio) inside each board task's agent session — ask_user, create_subtask
and report_progress, each forwarded to the board that runs the task (issue #26, item 6).

The board's runner adds it to every session's `mcpServers` (board.task_scope.grant): `python -P -m
mcp_agent_kit.board.task_server` with MCP_AGENT_KIT_BOARD_TASK (the board's loopback endpoint for this
task), MCP_AGENT_KIT_BOARD_TASK_TOKEN (the task's token) and MCP_AGENT_KIT_BOARD_TASK_WAIT (how long a
question may wait for its answer, s). TOOLS is the one table: each tool's description, input and output
schemas and annotations. `Forwarder.call(tool, arguments)` POSTs the arguments to `<endpoint>/<tool>` with
the token as a bearer token (no proxy, no redirect) and returns the board's result; the board's refusal,
or a board that cannot be reached, is a TaskToolError whose text names the problem, which the tool returns
as an `isError` result. Rules: forwards and decides nothing (the board checks the arguments, the token and
the task's state); the token never appears in a result, an error or a log line; a missing variable is one
stderr line and exit status 2.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from mcp_agent_kit.core.content import ToolResult, text

__all__ = ["TOOLS", "Forwarder", "TaskToolError", "main", "task_server"]

SERVER_NAME = "board"
ENDPOINT_ENV, TOKEN_ENV, WAIT_ENV = ("MCP_AGENT_KIT_BOARD_TASK", "MCP_AGENT_KIT_BOARD_TASK_TOKEN",
                                     "MCP_AGENT_KIT_BOARD_TASK_WAIT")
CALL_TIMEOUT_S = 60.0  # create_subtask, report_progress
DEFAULT_WAIT_S = 3660.0  # ask_user when the board does not say
INSTRUCTIONS = ("Tools of the board that runs your task: ask_user pauses the task with a question to the person "
                "and returns the answer; create_subtask queues new work for a coding agent on the board (run "
                "after this task is accepted when blocked_by_this is true); report_progress shows a status line "
                "on the board.")
_TASK_OUT = {"type": "object", "required": ["id", "title", "state"], "properties": {
    "id": {"type": "string"}, "title": {"type": "string"}, "state": {"type": "string"},
    "blockedBy": {"type": "array", "items": {"type": "string"}}}}
TOOLS: dict[str, dict[str, Any]] = {
    "ask_user": {
        "description": "Ask the person watching the board a question and wait for the answer (the task pauses "
                       "meanwhile). Give `options` (choices; the answer is the chosen id) or a JSON `schema` (the "
                       "answer is content matching it); with neither, the answer is text.",
        "inputSchema": {"type": "object", "additionalProperties": False, "required": ["message"], "properties": {
            "message": {"type": "string", "minLength": 1, "description": "The question, for a person"},
            "options": {"type": "array", "minItems": 1, "description": "Choices: texts, or {id, name}",
                        "items": {"anyOf": [{"type": "string"}, {"type": "object", "required": ["id"], "properties": {
                            "id": {"type": "string"}, "name": {"type": "string"}}}]}},
            "schema": {"type": "object", "description": "A JSON schema the answer must match"}}},
        "outputSchema": {"type": "object", "required": ["answer"], "properties": {
            "answer": {"description": "The chosen option's id, or the content the person gave"}}},
        "annotations": {"title": "Ask the person", "readOnlyHint": False, "destructiveHint": False,
                        "idempotentHint": False, "openWorldHint": False},
    },
    "create_subtask": {
        "description": "Create a new task on the board: a prompt for a coding agent, run in its own git worktree. "
                       "With blocked_by_this: true it starts only after this task is accepted (done).",
        "inputSchema": {"type": "object", "additionalProperties": False, "required": ["prompt"], "properties": {
            "prompt": {"type": "string", "minLength": 1, "description": "What the agent should do"},
            "title": {"type": "string", "description": "A short title (default: the prompt's first line)"},
            "agent": {"type": "string", "description": "The agent id (default: this task's agent)"},
            "priority": {"enum": ["urgent", "high", "normal", "low"], "description": "Default normal"},
            "blocked_by_this": {"type": "boolean", "description": "Wait for this task to be done (default false)"}}},
        "outputSchema": _TASK_OUT,
        "annotations": {"title": "Create a subtask", "readOnlyHint": False, "destructiveHint": False,
                        "idempotentHint": False, "openWorldHint": False},
    },
    "report_progress": {
        "description": "Report what you are doing now: a one-line status shown on the board beside this task.",
        "inputSchema": {"type": "object", "additionalProperties": False, "required": ["message"], "properties": {
            "message": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "The status line"}}},
        "outputSchema": {"type": "object", "required": ["progress"], "properties": {"progress": {"type": "string"}}},
        "annotations": {"title": "Report progress", "readOnlyHint": False, "destructiveHint": False,
                        "idempotentHint": True, "openWorldHint": False},
    },
}


class TaskToolError(Exception):
    """The board refused a call, or could not be reached; the text is for the agent (never the token)."""


class Forwarder:
    """Calls the board's endpoint for one task with its token."""

    def __init__(self, endpoint: str, token: str, wait_s: float = DEFAULT_WAIT_S) -> None:
        self.endpoint, self._token, self.wait_s = endpoint.rstrip("/"), token, wait_s
        # no proxy (the board is on loopback), and a redirect is an error, never followed with the token
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def __repr__(self) -> str:
        return f"Forwarder({self.endpoint!r})"

    def call(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The board's result for the tool call; TaskToolError with the board's words when it refuses."""
        request = urllib.request.Request(f"{self.endpoint}/{tool}", method="POST",
                                         data=json.dumps(dict(arguments)).encode("utf-8"),
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self._token}"})
        timeout = self.wait_s if tool == "ask_user" else CALL_TIMEOUT_S
        try:
            with self._opener.open(request, timeout=timeout) as response:
                body = _body(response.read())
        except urllib.error.HTTPError as exc:
            body = _body(exc.read())
            raise TaskToolError(str(body.get("error") or f"the board answered HTTP {exc.code}")) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TaskToolError(f"the board at {self.endpoint} cannot be reached ({reason}): it may have "
                                "stopped") from None
        result = body.get("result")
        if not isinstance(result, dict):
            raise TaskToolError("the board answered without a result")
        return result


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _body(data: bytes) -> dict[str, Any]:
    try:
        body = json.loads(data or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _said(tool: str, result: Mapping[str, Any]) -> str:
    """The text beside a result's structuredContent."""
    if tool == "ask_user":
        answer = result.get("answer")
        return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    if tool == "create_subtask":
        blocked = " (blocked by this task)" if result.get("blockedBy") else ""
        return f"created task {result.get('id')} \"{result.get('title')}\", {result.get('state')}{blocked}"
    return f"progress: {result.get('progress')}"


def _tool(forwarder: Forwarder, name: str) -> Callable[[Any, dict[str, Any]], ToolResult]:
    def call(ctx: Any, arguments: dict[str, Any]) -> ToolResult:
        try:
            result = forwarder.call(name, arguments)
        except TaskToolError as exc:
            return ToolResult([text(str(exc))], is_error=True)
        return ToolResult([text(_said(name, result))], structured=result)

    return call


def task_server(forwarder: Forwarder) -> Any:
    """A kit Server offering TOOLS, each forwarded by `forwarder`."""
    from mcp_agent_kit.server import Server
    from mcp_agent_kit.wire.implementation import VERSION

    server = Server(SERVER_NAME, VERSION, instructions=INSTRUCTIONS)
    for name, tool in TOOLS.items():
        server.add_raw_tool(name, tool["inputSchema"], _tool(forwarder, name), description=tool["description"],
                            annotations=tool["annotations"], output_schema=tool["outputSchema"])
    return server


def main() -> int:
    """Serve the tools on stdio for the task named by the environment (see the module docstring)."""
    endpoint, token = os.environ.get(ENDPOINT_ENV, ""), os.environ.get(TOKEN_ENV, "")
    if not endpoint or not token:
        missing = ENDPOINT_ENV if not endpoint else TOKEN_ENV
        print(f"board task tools: {missing} is not set: the board starts this program for each task's agent "
              "session; it is not run by hand", file=sys.stderr)
        return 2
    try:
        wait = float(os.environ.get(WAIT_ENV) or DEFAULT_WAIT_S)
    except ValueError:
        wait = DEFAULT_WAIT_S
    code: int = task_server(Forwarder(endpoint, token, wait)).serve_stdio()
    return code


if __name__ == "__main__":
    sys.exit(main())
