"""A raw-JSON scripted ACP agent for the misbehaviours the SDK cannot produce (standard library only).

`raw_agent.py MODE`: junk (non-JSON stdout lines), longline (a 1 MiB update line), custom (non-`_`
methods), collide (its request reuses the id of our live prompt), early (available_commands_update
before the session/new reply), cancel_end_turn, cancel_never, exit_at_start, flood (endless junk),
orphan (a child that keeps stdout open after the agent dies mid-turn), orphan_at_start, reexec (the real agent is a
child of a waiting parent, as sandboxed agents do).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
OUT = sys.stdout.buffer


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    OUT.flush()


def raw(line: bytes) -> None:
    OUT.write(line)
    OUT.flush()


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": session_id, "update": body}})


def say(session_id: str, text: str) -> None:
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def read() -> dict[str, Any] | None:
    line = sys.stdin.buffer.readline()
    return json.loads(line) if line else None


def prompt(message: dict[str, Any]) -> None:
    sid, rid = message["params"]["sessionId"], message["id"]
    if MODE == "junk":
        raw(b"\x1b[2Jprogress: 50%\n")
        say(sid, "after junk")
    elif MODE == "longline":
        say(sid, "L" * (1 << 20))
    elif MODE == "custom":
        send({"method": "qwen/notify/session/mode-update", "params": {"x": 1}})
        send({"id": 0, "method": "craft/drainMidTurnQueue", "params": {}})
        answer = read()
        say(sid, f"drain answered {answer.get('error', {}).get('code') if answer else None}")
    elif MODE == "collide":
        send({"id": rid, "method": "session/request_permission", "params": {
            "sessionId": sid, "toolCall": {"toolCallId": "c1", "title": "Write", "kind": "edit"},
            "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                        {"optionId": "no", "name": "No", "kind": "reject_once"}]}})
        answer = read()
        say(sid, f"permission answer id={answer.get('id')} result={json.dumps(answer.get('result'))}")
    elif MODE in ("cancel_end_turn", "cancel_never", "flood_updates"):
        say(sid, "working")
        while True:
            if MODE == "flood_updates":
                say(sid, "x" * 100)
                continue
            message = read()
            if message is None:
                return
            if message.get("method") == "session/cancel":
                if MODE == "cancel_end_turn":
                    send({"id": rid, "result": {"stopReason": "end_turn"}})
                    return
                while read() is not None:  # cancel_never: ignore it and everything after
                    pass
                time.sleep(3600)
    elif MODE == "orphan":
        say(sid, "forking")
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])  # inherits stdout
        os._exit(4)
    elif MODE == "flood":
        while True:
            raw(b"log line that is not JSON\n")
    send({"id": rid, "result": {"stopReason": "end_turn"}})


def main() -> None:
    if MODE == "orphan_at_start":  # dies before answering, its child keeps stdout open
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        sys.stderr.write("fatal: sandbox failed\n")
        sys.exit(5)
    if MODE == "exit_at_start":
        sys.stderr.write("fatal: HOME is not set up\n")
        sys.exit(2)
    if MODE == "reexec" and not os.environ.get("RAW_AGENT_CHILD"):
        child = subprocess.Popen([sys.executable, __file__, "plain"], env={**os.environ, "RAW_AGENT_CHILD": "1"})
        child.wait()  # the parent only waits: killing it alone would orphan the real agent
        return
    if MODE == "junk":
        raw(b"Starting agent v1.2.3...\n")
    while (message := read()) is not None:
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}}})  # no authMethods key
        elif method == "session/new":
            if MODE == "early":
                update("s-1", {"sessionUpdate": "available_commands_update",
                               "availableCommands": [{"name": "init", "description": "set up"}]})
            send({"id": rid, "result": {"sessionId": "s-1", "models": {"currentModelId": "m", "availableModels": []}}})
        elif method == "session/prompt":
            prompt(message)
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": f"method not found: {method}"}})


if __name__ == "__main__":
    main()
