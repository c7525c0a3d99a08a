"""A deterministic ACP v1 agent (no model) built on mcp_agent_kit.acp.agent — a fixture and a worked example.

Run it as `python examples/acp_echo_agent.py` (stdio). Each turn:
  1. sends a plan (echo, then write the echo to a file);
  2. streams the prompt back as `agent_message_chunk`s, word by word ("Echo: ...");
  3. announces a tool call "Write echo.txt" (kind edit, a diff) and asks permission with the options
     allow_once / reject_once / allow_always (an allow_always answer is remembered for the session);
  4. when allowed and the client advertised `fs.writeTextFile`, writes `<cwd>/echo.txt` through the
     client (`fs/write_text_file`) and completes the tool call; otherwise fails it, saying why.
A prompt asking "what did I say before?" is answered from the session's history instead; "mcp servers?"
echoes, as JSON, the MCP servers the client last handed to the session (`session/new`, `load`, `fork`;
a fixture: it shows their env and headers too);
"turns?" counts the prompts the session has seen before this one. A prompt starting with "/wait" waits
(at most 60 s) for a `session/cancel`. The config option `case`
("as-is" or "upper") changes how the echo is written. Sessions are JSON files under
$ACP_ECHO_AGENT_DIR (default ~/.cache/mcp-agent-kit/acp-echo-agent/sessions), so a new process can
`session/load` them (the history is replayed) and `session/list` them; `session/close` and
`session/fork` (a copy of the session as it is now) are supported. Environment switches for tests:
ACP_ECHO_AGENT_NO_FORK=1 leaves `session/fork` out; ACP_ECHO_AGENT_MCP_HTTP=1 advertises
`mcpCapabilities.http`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from mcp_agent_kit.acp.agent import Agent, JsonSessionStore, Session, Turn, updates
from mcp_agent_kit.acp.agent.session import default_directory

SESSIONS = default_directory("ACP_ECHO_AGENT_DIR", "mcp-agent-kit/acp-echo-agent")
OPTIONS = [updates.permission_option("allow-once", "Allow once", "allow_once"),
           updates.permission_option("reject-once", "Reject", "reject_once"),
           updates.permission_option("allow-always", "Always allow in this session", "allow_always")]
WAIT_LIMIT = 60.0

agent = Agent("acp-echo-agent", "1.0.0", title="ACP echo agent (deterministic)", store=JsonSessionStore(SESSIONS),
              mcp_capabilities={"http": True} if os.environ.get("ACP_ECHO_AGENT_MCP_HTTP") == "1" else None)
agent.config_option("case", "Echo case", [("as-is", "As typed"), ("upper", "Upper case")])
agent.load_session()
agent.list_sessions()
agent.close_session()
if os.environ.get("ACP_ECHO_AGENT_NO_FORK") != "1":
    agent.fork_session()


def recall(turn: Turn) -> None:
    """Answer from the history: the user's message before this one."""
    earlier = [text for role, text in turn.session.text_history()[:-1] if role == "user"]
    turn.say(f"Before, you said: {earlier[-1]}" if earlier else "You have not said anything before.")


def mcp_servers(turn: Turn) -> None:
    """Say which MCP servers the session was handed, exactly as they came (the McpServer wire shapes)."""
    turn.say("MCP servers: " + json.dumps(turn.session.mcp_servers, sort_keys=True))


def count_turns(turn: Turn) -> None:
    """Say how many prompts this session saw before this one."""
    earlier = [role for role, _ in turn.session.text_history()[:-1] if role == "user"]
    turn.say(f"Turns so far: {len(earlier)}")


ANSWERS = {"what did i say": recall, "mcp servers?": mcp_servers, "turns?": count_turns}


def write_echo(turn: Turn, echo: str) -> str:
    """The tool call: ask, then write <cwd>/echo.txt through the client. Returns what happened."""
    path = os.path.join(turn.session.cwd, "echo.txt")
    call = turn.tool_call("Write echo.txt", kind="edit", locations=[updates.location(path)],
                          content=[updates.diff(path, echo + "\n")], raw_input={"path": path})
    if turn.session.state.get("always_allow"):
        allowed = True
    else:
        answer = turn.ask_permission(call, OPTIONS)
        if answer.cancelled:
            call.fail("cancelled")
            return "cancelled"
        allowed = answer.allowed
        if answer.kind == "allow_always":
            turn.session.state["always_allow"] = True
    if not allowed:
        call.fail("permission refused")
        return "refused"
    if not turn.can("fs", "writeTextFile"):
        call.fail("the client cannot write files (fs.writeTextFile not advertised)")
        return "not written"
    call.update(status="in_progress")
    turn.write_file(path, echo + "\n")
    call.complete([updates.content_item(f"wrote {path}")])
    return "written"


@agent.prompt
def on_prompt(turn: Turn) -> str | None:
    text = turn.text.strip()
    session = turn.session
    if session.title is None:
        session.title = text[:60] or "(empty prompt)"
        agent.send_session_info(session)
    answer = next((fn for phrase, fn in ANSWERS.items() if phrase in text.lower()), None)
    if answer is not None:
        answer(turn)
        return None
    if text.startswith("/wait"):
        turn.say("Waiting for a cancel...")
        turn.cancelled.wait(WAIT_LIMIT)
        return None
    echo = text.upper() if session.config.get("case") == "upper" else text
    steps = ["Echo the prompt", "Write the echo to echo.txt"]
    turn.plan([updates.plan_entry(steps[0], "high", "in_progress"), updates.plan_entry(steps[1])])
    turn.say("Echo:")
    for word in echo.split():
        turn.check()
        turn.say(" " + word)
    turn.plan([updates.plan_entry(steps[0], "high", "completed"), updates.plan_entry(steps[1], status="in_progress")])
    outcome = write_echo(turn, echo)
    if outcome == "cancelled":
        return "cancelled"
    turn.plan([updates.plan_entry(steps[0], "high", "completed"), updates.plan_entry(steps[1], status="completed")])
    turn.say(f"\nFile: {outcome}.")
    return None


@agent.new_session
def on_new(session: Session) -> None:
    session.state["always_allow"] = False


if __name__ == "__main__":
    agent.run()
