"""An agent written with acp.agent, driven in-process by our own client (acp.client): a terminal run by
the client and read back, a file read through the client, and a read outside the session's cwd refused
by the client (the agent sees the error, answers -32603, and keeps serving)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.acp.client.errors import AcpError
from mcp_agent_kit.acp.client.permissions import AllowAll

AGENT = '''
import sys
from mcp_agent_kit.acp.agent import Agent, Turn

agent = Agent("tools", "1")


@agent.prompt
def prompt(turn: Turn) -> None:
    if turn.text == "terminal":
        with turn.terminal(sys.executable, ["-c", "print('hi from the terminal')"], cwd=turn.session.cwd) as run:
            status = run.wait_for_exit()
            turn.say(f"{run.output()['output'].strip()} (exit {status.get('exitCode')})")
    else:
        turn.say(turn.read_file(turn.text))


agent.run()
'''


def test_our_client_runs_the_agents_terminal_and_file_reads(spawn: Any, tmp_path: Path) -> None:
    script = tmp_path / "tools_agent.py"
    script.write_text(AGENT, encoding="utf-8")
    (tmp_path / "in.txt").write_text("file text", encoding="utf-8")
    agent = spawn([sys.executable, str(script)], policy=AllowAll())
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    assert session.run("terminal").text == "hi from the terminal (exit 0)"
    assert session.run(str(tmp_path / "in.txt")).text == "file text"
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere.txt"
    outside.write_text("not for the agent", encoding="utf-8")
    with pytest.raises(AcpError) as refused:  # the client refused the read; the prompt failed naming it
        session.run(str(outside))
    assert "fs/read_text_file failed on the client" in str(refused.value)
    assert "outside the session's directories" in str(refused.value) and "-32603" in str(refused.value)
    assert session.run(str(tmp_path / "in.txt")).text == "file text"  # the agent still serves
