"""A scripted ACP agent on the official Python SDK (agent-client-protocol 0.12.1): the oracle for our client.

The first word of each prompt picks a scenario; its results come back as agent_message_chunk
text, so a test reads what the agent saw. Sessions (their history) are kept in
`.sdk-agent-sessions.json` in the session's cwd, so a new process can `session/load` them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import acp
from acp import schema

STORE = ".sdk-agent-sessions.json"
ALL_KINDS = ("allow_once", "allow_always", "reject_once", "reject_always")
NEEDS_AUTH = bool(os.environ.get("SDK_AGENT_AUTH"))  # reaches us only through the client's --env


def config(value: str) -> list[dict[str, Any]]:
    return [{"type": "select", "id": "model", "name": "Model", "category": "model", "currentValue": value,
             "options": [{"value": "fast", "name": "Fast"}, {"value": "slow", "name": "Slow"}]}]


def modes() -> schema.SessionModeState:
    return schema.SessionModeState(current_mode_id="ask", available_modes=[
        schema.SessionMode(id="ask", name="Ask"), schema.SessionMode(id="code", name="Code")])


class ScriptedAgent(acp.Agent):
    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, Any]] = {}
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kw: Any) -> acp.InitializeResponse:
        self.client_capabilities = client_capabilities
        self.authenticated = not NEEDS_AUTH
        return acp.InitializeResponse(
            auth_methods=[schema.AuthMethodAgent(id="key", name="API key")] if NEEDS_AUTH else [],
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                session_capabilities=schema.SessionCapabilities(list=schema.SessionListCapabilities())),
            agent_info=schema.Implementation(name="sdk-scripted", version="0.12.1"))

    def _store(self, cwd: str) -> Path:
        return Path(cwd) / STORE

    def _save(self, session_id: str) -> None:
        session = self.sessions[session_id]
        path = self._store(session["cwd"])
        data = json.loads(path.read_text()) if path.exists() else {}
        data[session_id] = session
        path.write_text(json.dumps(data))

    async def authenticate(self, method_id: str, **kw: Any) -> Any:
        if method_id != "key":
            raise acp.RequestError(-32602, f"unknown method {method_id}")
        self.authenticated = True
        return schema.AuthenticateResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **kw: Any) -> Any:
        return schema.SetSessionConfigOptionResponse.model_validate({"configOptions": config(str(value))})

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kw: Any) -> acp.NewSessionResponse:
        if not self.authenticated:
            raise acp.RequestError(-32000, "Authentication required")
        session_id = uuid.uuid4().hex
        self.sessions[session_id] = {"cwd": cwd, "history": []}
        self._save(session_id)
        return acp.NewSessionResponse(session_id=session_id, modes=modes())

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kw: Any) -> acp.LoadSessionResponse:
        path = self._store(cwd)
        data = json.loads(path.read_text()) if path.exists() else {}
        if session_id not in data:
            raise acp.RequestError(-32002, f"no session {session_id}")
        self.sessions[session_id] = data[session_id]
        for role, text in data[session_id]["history"]:
            update = acp.update_user_message_text(text) if role == "user" else acp.update_agent_message_text(text)
            await self.conn.session_update(session_id=session_id, update=update)
        return acp.LoadSessionResponse(modes=modes())

    async def list_sessions(self, cursor: Any = None, cwd: Any = None, **kw: Any) -> Any:
        return schema.ListSessionsResponse(sessions=[
            schema.SessionInfo(session_id=sid, cwd=s["cwd"]) for sid, s in self.sessions.items()])

    async def set_session_mode(self, mode_id: str, session_id: str, **kw: Any) -> Any:
        await self.say(session_id, f"mode is {mode_id}")
        return schema.SetSessionModeResponse()

    async def say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id=session_id, update=acp.update_agent_message_text(text))

    async def prompt(self, prompt: list[Any], session_id: str, **kw: Any) -> acp.PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt)
        word, _, rest = text.partition(" ")
        session = self.sessions[session_id]
        session["history"].append(["user", text])
        self.cancelled[session_id] = asyncio.Event()
        scenario = getattr(self, f"do_{word}", None)
        if scenario is None:
            reply = f"echo: {text}"
            await self.say(session_id, reply)
            stop = "end_turn"
        else:
            stop, reply = await scenario(session_id, rest)
        session["history"].append(["agent", reply])
        self._save(session_id)
        return acp.PromptResponse(stop_reason=stop)

    async def do_updates(self, sid: str, rest: str) -> tuple[str, str]:
        updates: list[Any] = [
            acp.update_user_message_text("user said"),
            acp.update_agent_thought_text("thinking"),
            acp.update_plan([acp.plan_entry("step one", priority="high", status="in_progress")]),
            acp.start_tool_call("t1", "Read a file", kind="read", status="pending",
                                locations=[schema.ToolCallLocation(path="/x", line=3)]),
            acp.update_tool_call("t1", status="completed",
                                 content=[acp.tool_content(acp.text_block("file body"))]),
            schema.AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[
                schema.AvailableCommand(name="web", description="search the web")]),
            schema.CurrentModeUpdate(session_update="current_mode_update", current_mode_id="code"),
            schema.ConfigOptionUpdate.model_validate({"sessionUpdate": "config_option_update",
                                                      "configOptions": config("fast")}),
            schema.SessionInfoUpdate(session_update="session_info_update", title="A title",
                                     updated_at="2026-12-01T00:00:00Z"),
            schema.UsageUpdate(session_update="usage_update", used=10, size=1000,
                               cost=schema.Cost(amount=0.5, currency="USD")),
            acp.update_agent_message_text("done"),
        ]
        for update in updates:
            await self.conn.session_update(session_id=sid, update=update)
        return "end_turn", "done"

    async def do_permission(self, sid: str, rest: str) -> tuple[str, str]:
        kind, _, offered = rest.partition(" ")
        kinds = offered.split(",") if offered else list(ALL_KINDS)
        await self.conn.session_update(session_id=sid, update=acp.start_tool_call(
            "p1", f"Do a {kind} thing", kind=kind, status="pending"))
        options = [schema.PermissionOption(option_id=f"opt-{i}-{k}", name=k, kind=k) for i, k in enumerate(kinds)]
        answer = await self.conn.request_permission(
            session_id=sid, tool_call=schema.ToolCallUpdate(tool_call_id="p1"), options=options)
        outcome = answer.outcome
        chosen = getattr(outcome, "option_id", None)
        reply = f"outcome={outcome.outcome} option={chosen}"
        status = "completed" if chosen and "allow" in chosen else "failed"
        await self.conn.session_update(session_id=sid, update=acp.update_tool_call("p1", status=status))
        await self.say(sid, reply)
        return "end_turn", reply

    async def do_read(self, sid: str, rest: str) -> tuple[str, str]:
        try:
            got = await self.conn.read_text_file(session_id=sid, path=rest)
            reply = f"content={got.content}"
        except acp.RequestError as exc:
            reply = f"error={exc.code} {exc}"
        await self.say(sid, reply)
        return "end_turn", reply

    async def do_write(self, sid: str, rest: str) -> tuple[str, str]:
        path, _, content = rest.partition(" ")
        try:
            await self.conn.write_text_file(session_id=sid, path=path, content=content)
            reply = "written"
        except acp.RequestError as exc:
            reply = f"error={exc.code} {exc}"
        await self.say(sid, reply)
        return "end_turn", reply

    async def do_terminal(self, sid: str, rest: str) -> tuple[str, str]:
        command, *args = rest.split()
        try:
            term = await self.conn.create_terminal(command=command, session_id=sid, args=args,
                                                   output_byte_limit=64)
            await self.conn.session_update(session_id=sid, update=acp.start_tool_call(
                "sh", "Run", kind="execute", status="in_progress", content=[acp.tool_terminal_ref(term.terminal_id)]))
            done = await self.conn.wait_for_terminal_exit(session_id=sid, terminal_id=term.terminal_id)
            out = await self.conn.terminal_output(session_id=sid, terminal_id=term.terminal_id)
            await self.conn.release_terminal(session_id=sid, terminal_id=term.terminal_id)
            reply = f"exit={done.exit_code} truncated={out.truncated} output={out.output}"
        except acp.RequestError as exc:
            reply = f"error={exc.code} {exc}"
        await self.say(sid, reply)
        return "end_turn", reply

    async def do_slow(self, sid: str, rest: str) -> tuple[str, str]:
        await self.say(sid, "working")
        try:
            await asyncio.wait_for(self.cancelled[sid].wait(), 60)
        except TimeoutError:
            return "end_turn", "slow done"
        return "cancelled", "stopped"

    async def do_crash(self, sid: str, rest: str) -> tuple[str, str]:
        await self.say(sid, "about to crash")
        await asyncio.sleep(0.1)
        sys.stderr.write("scripted agent: fatal error mid-turn\n")
        sys.stderr.flush()
        os._exit(3)

    async def do_unknown(self, sid: str, rest: str) -> tuple[str, str]:
        try:
            await self.conn.ext_method("x/unknown", {"a": 1})
            reply = "answered"
        except acp.RequestError as exc:
            reply = f"error={exc.code}"
        await self.conn.ext_notification("x/ignored", {"b": 2})
        await self.say(sid, reply)
        return "end_turn", reply

    async def do_outoforder(self, sid: str, rest: str) -> tuple[str, str]:
        await self.conn.session_update(session_id=sid, update=acp.update_tool_call("o1", status="completed"))
        await self.conn.session_update(session_id=sid, update=acp.start_tool_call("o1", "Late start", kind="edit"))
        await self.say(sid, "ok")
        return "end_turn", "ok"

    async def do_big(self, sid: str, rest: str) -> tuple[str, str]:
        text = "b" * int(rest or 200_000)
        await self.say(sid, text)
        return "end_turn", f"big {len(text)}"

    async def do_refuse(self, sid: str, rest: str) -> tuple[str, str]:
        return "refusal", ""

    async def cancel(self, session_id: str, **kw: Any) -> None:
        if session_id in self.cancelled:
            self.cancelled[session_id].set()


if __name__ == "__main__":
    asyncio.run(acp.run_agent(ScriptedAgent()))
