"""A raw-JSON ACP agent that probes its surroundings with plain Python (standard library only): a sandbox fixture.

Each prompt is one verb and its argument; the reply text is `ok ...` or `error <errno name>`:
  write PATH      open(PATH, "w") and write a line
  read PATH       the file's text
  list PATH       the directory's sorted names, as JSON
  connect PORT    a TCP connection to 127.0.0.1:PORT
  spawn TOKEN     start `python -c <sleep> TOKEN` in a new session (a child that tries to outlive the agent)
  terminal CODE   run `python -c CODE` through the client's terminal/* methods, reply `ok <exit code> <output>`
Its argv may carry a tag (ignored), so a test can find it in /proc.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from itertools import count
from typing import Any

IDS = count(100)


def send(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    sys.stdout.buffer.flush()


def read() -> dict[str, Any] | None:
    line = sys.stdin.buffer.readline()
    return json.loads(line) if line else None


def call(method: str, params: dict[str, Any]) -> Any:
    """One request to the client; its result (the probe makes no other request meanwhile)."""
    rid = next(IDS)
    send({"id": rid, "method": method, "params": params})
    while (message := read()) is not None:
        if message.get("id") == rid and "method" not in message:
            if "error" in message:
                raise OSError(errno.EIO, message["error"].get("message", "error"))
            return message.get("result")
    raise OSError(errno.EPIPE, "the client went away")


def terminal(session_id: str, code: str) -> str:
    made = call("terminal/create", {"sessionId": session_id, "command": sys.executable, "args": ["-c", code]})
    ref = {"sessionId": session_id, "terminalId": made["terminalId"]}
    status = call("terminal/wait_for_exit", ref)
    output = call("terminal/output", ref)["output"]
    call("terminal/release", ref)
    return f"ok {status.get('exitCode')} {output.strip()}"


def act(session_id: str, verb: str, arg: str) -> str:
    if verb == "write":
        with open(arg, "w", encoding="utf-8") as handle:
            handle.write("written by the probe\n")
        return "ok"
    if verb == "read":
        with open(arg, encoding="utf-8") as handle:
            return "ok " + handle.read().strip()
    if verb == "list":
        return "ok " + json.dumps(sorted(os.listdir(arg)))
    if verb == "connect":
        socket.create_connection(("127.0.0.1", int(arg)), timeout=5).close()
        return "ok"
    if verb == "spawn":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", arg], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return "ok"
    if verb == "terminal":
        return terminal(session_id, arg)
    return f"error unknown verb {verb!r}"


def prompt(message: dict[str, Any]) -> None:
    params = message["params"]
    text = "".join(block.get("text", "") for block in params["prompt"] if isinstance(block, dict))
    verb, _, arg = text.partition(" ")
    try:
        reply = act(params["sessionId"], verb, arg)
    except OSError as exc:
        reply = f"error {errno.errorcode.get(exc.errno or 0, str(exc))}"
    send({"method": "session/update", "params": {"sessionId": params["sessionId"], "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": reply}}}})
    send({"id": message["id"], "result": {"stopReason": "end_turn"}})


def main() -> None:
    while (message := read()) is not None:
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            send({"id": rid, "result": {"sessionId": "s-1"}})
        elif method == "session/prompt":
            prompt(message)
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": f"method not found: {method}"}})


if __name__ == "__main__":
    main()
