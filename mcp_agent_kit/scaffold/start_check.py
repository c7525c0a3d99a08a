"""scaffold.start_check: start a server command the way a host will and see it answer MCP.

`install` writes an entry only once this check passes: the command runs from the home directory
(hosts start servers elsewhere) with the entry's environment, is sent a 2026-07-28
`server/discover` and, when it answers that with an error, a handshake-era `initialize`; either
result is a pass. Anything else is one line saying why: a program that cannot run, a Python
error with the user's file:line, a script that exits at once without answering (it never called
`server.run()`), or no answer in time. Lines on stdout that are not JSON are skipped and named.
Rules: bounded in time and output; spawned through mcp_agent_kit.process, whose stop ends the whole
process group whatever happened; knows the MCP wire only through `client.probe`'s request builders.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import threading
import time
from pathlib import Path
from typing import IO, Any

from mcp_agent_kit.client.probe import MODERN_CORRECTABLE, Probe
from mcp_agent_kit.process import STDERR_RING, PeerProcess, SpawnError
from mcp_agent_kit.wire.implementation import VERSION

CHECK_SECONDS = 20.0  # how long a server may take to answer (a cold interpreter on a slow disk)
FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
RUN_HINT = "did you call server.run()?"
_EOF = object()


def _reader(stream: IO[bytes], lines: queue.Queue[Any]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in stream:
            lines.put(line)
    lines.put(_EOF)


def python_error(stderr: str) -> str | None:
    """`file:line: ExceptionLine` of a Python traceback in stderr (the deepest frame of real code), or None."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if not any(line.startswith("Traceback (most recent call last)") for line in lines) and not any(
            line.startswith(("SyntaxError", "IndentationError", "TabError")) for line in lines):
        return None
    frames = [(m.group(1), m.group(2)) for m in map(FRAME.match, lines) if m and not m.group(1).startswith("<")]
    last = lines[-1].strip()
    return f"{frames[-1][0]}:{frames[-1][1]}: {last}" if frames else last


class _Started:
    """One started command (mcp_agent_kit.process: its own group, stderr kept): its stdout lines on a queue."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        # the caller's environment as it is, with the entry's on top (what install checks is the command)
        self.peer = PeerProcess(command, env={**os.environ, **env}, cwd=str(cwd), anchor=False, label="start-check")
        self.lines: queue.Queue[Any] = queue.Queue()
        self._reader = threading.Thread(target=_reader, args=(self.peer.stdout, self.lines), daemon=True)
        self._reader.start()

    def send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.peer.stdin.write(json.dumps(message).encode() + b"\n")
            self.peer.stdin.flush()

    def exited(self) -> str:
        """Why the process ended without answering, once it has (its stderr read to the end)."""
        code = self.peer.ended()
        said = self.peer.stderr_text(STDERR_RING)
        error = python_error(said)
        if error:
            return error
        if code == 0 or code is None:
            return f"it exited at once without answering; {RUN_HINT}"
        last = [line.strip() for line in said.splitlines() if line.strip()]
        return f"it exited with code {code}" + (f" ({last[-1]})" if last else "")

    def stop(self) -> None:
        self.peer.stop(grace=1.0)
        self._reader.join(1.0)
        with contextlib.suppress(OSError, ValueError):
            self.peer.stdout.close()


def _answer(line: bytes, pending: int) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) and message.get("id") == pending else None


def start_problem(command: list[str], env: dict[str, str], seconds: float = CHECK_SECONDS,
                  cwd: Path | None = None) -> str | None:
    """None when the command answers `server/discover` or `initialize` within `seconds`; else why not."""
    try:
        run = _Started(command, env, cwd or Path.home())
    except SpawnError as exc:
        return f"cannot run {command[0]}: {exc.why}"
    probe = Probe(client_info={"name": "mcp-agent-kit-install", "version": VERSION})
    request = probe.discover()
    noise: list[str] = []
    deadline = time.monotonic() + seconds
    try:
        run.send(request)
        while True:
            try:
                line = run.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                what = f"it did not answer server/discover or initialize within {seconds:g} s"
                return what + (f"; it printed {noise[0]!r} on stdout: write logs to stderr" if noise else "")
            if line is _EOF:
                return run.exited()
            answer = _answer(line, request["id"])
            if answer is None:
                if line.strip():
                    noise.append(line.decode("utf-8", "replace").strip()[:80])
                continue
            if "result" in answer or (answer.get("error") or {}).get("code") in MODERN_CORRECTABLE:
                return None  # a result, or a modern server asking for another version or capability: it runs
            if request["method"] != "initialize":  # a handshake-era server: try its own handshake
                request = probe.initialize()
                run.send(request)
                continue
            return f"it answered initialize with an error: {json.dumps(answer.get('error'))[:200]}"
    finally:
        run.stop()
