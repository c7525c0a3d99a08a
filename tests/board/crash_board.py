"""A board in a process of its own, for the restart test: it runs one task to review, queues two more, starts a
follow-up that waits ("/wait"), prints what it made as one JSON line, and waits to be killed (SIGKILL).
Arguments: CONFIG_JSON REPO DATA_DIR."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config
from tests.board.boards import Transcript, settled


def main() -> None:
    board = Board(parse_config(json.loads(sys.argv[1])), sys.argv[2], data_dir=sys.argv[3])
    board.start()
    first = board.create_task("hello from before", title="First")
    settled(board, first["id"], "review")
    board.create_task("held one", priority="urgent", hold=True)
    board.create_task("blocked one", blocked_by=[first["id"]])
    waiting = Transcript(board, first["id"], lambda e: e["kind"] == "message" and "Waiting" in e["text"])
    board.prompt_task(first["id"], "/wait until killed")
    waiting.wait()
    run = board.runner.run_of(first["id"])
    agent_pid = run.agent.process.pid if run is not None and run.agent is not None else None
    print(json.dumps({"tasks": board.list_tasks(), "agentPid": agent_pid}), flush=True)
    threading.Event().wait(60)  # killed long before


if __name__ == "__main__":
    main()
