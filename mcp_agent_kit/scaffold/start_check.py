"""scaffold.start_check: start a server command the way a host will and see it answer MCP.

`install` writes an entry only once this check passes: the command runs from the home directory
(hosts start servers elsewhere) with the entry's environment, is sent a 2026-07-28
`server/discover` and, when it answers that with an error, a handshake-era `initialize`; either
result is a pass. Anything else is one line saying why: a program that cannot run, a Python
error with the user's file:line, a script that exits at once without answering (it never called
`server.run()`), or no answer in time. Lines on stdout that are not JSON are skipped and named.
Rules: bounded in time and output; the whole process group is ended, whatever happened; knows
the MCP wire only through `client.probe`'s request builders.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from mcp_agent_kit.client.probe import MODERN_CORRECTABLE, Probe
from mcp_agent_kit.wire.implementation import VERSION

CHECK_SECONDS = 20.0  # how long a server may take to answer (a cold interpreter on a slow disk)
STDERR_KEEP = 64 * 1024
FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
RUN_HINT = "did you call server.run()?"
_EOF = object()


def _reader(stream: IO[bytes], lines: queue.Queue[Any]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in stream:
            lines.put(line)
    lines.put(_EOF)


def _collector(stream: IO[bytes], kept: bytearray) -> None:
    with contextlib.suppress(OSError, ValueError):
        while chunk := stream.read(8192):
            kept.extend(chunk)
            del kept[:-STDERR_KEEP]


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
    """One started command: its stdout lines on a queue, its stderr kept, its group ended by `stop`."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, **env}, cwd=cwd, start_new_session=True)
        self.lines: queue.Queue[Any] = queue.Queue()
        self.stderr = bytearray()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._threads = [threading.Thread(target=_reader, args=(self.proc.stdout, self.lines), daemon=True),
                         threading.Thread(target=_collector, args=(self.proc.stderr, self.stderr), daemon=True)]
        for thread in self._threads:
            thread.start()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()

    def exited(self) -> str:
        """Why the process ended without answering, once it has (its stderr read to the end)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(2.0)
        self._threads[1].join(2.0)
        said = self.stderr.decode("utf-8", "replace")
        error = python_error(said)
        if error:
            return error
        code = self.proc.returncode
        if code == 0 or code is None:
            return f"it exited at once without answering; {RUN_HINT}"
        last = [line.strip() for line in said.splitlines() if line.strip()]
        return f"it exited with code {code}" + (f" ({last[-1]})" if last else "")

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(2.0)
                break
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()


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
    except OSError as exc:
        return f"cannot run {command[0]}: {exc.strerror or exc}"
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
