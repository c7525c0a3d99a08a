"""A raw line-level stdio peer for tests: spawn a server, write bytes, read JSON lines.

Strict: `call` fails on a reply to anything but the request it waits for (a notification must never
be answered, a request answered once), and leaving the `with` block fails when the server wrote a
reply nobody read (unless the test read `raw` itself). Server notifications and requests met while
waiting are kept in `seen`. stderr is read line by line too: `stderr_line()` waits for the next one
(a readiness signal for fixtures that report on stderr).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
}


def modern(id_: Any, method: str, caps: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    meta = dict(MODERN_META)
    if caps is not None:
        meta["io.modelcontextprotocol/clientCapabilities"] = caps
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": {"_meta": meta, **params}}


def legacy(id_: Any, method: str, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params:
        message["params"] = params
    return message


class StdioPeer:
    def __init__(self, script: str = "tests/fixtures/kitchen_server.py", *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._raw: list[bytes] = []
        self._raw_read = False
        self.seen: list[dict[str, Any]] = []
        self.stderr = b""
        self.stderr_lines: queue.Queue[bytes | None] = queue.Queue()
        self._pumps = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._pump_err, daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    @property
    def raw(self) -> list[bytes]:
        """Every stdout line so far; a test that reads it checks the output itself."""
        self._raw_read = True
        return self._raw

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._raw.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line
            self.stderr_lines.put(line)
        self.stderr_lines.put(None)

    def stderr_line(self, timeout: float = 10.0) -> str:
        """The next line the server writes to stderr (EOFError once stderr is closed)."""
        line = self.stderr_lines.get(timeout=timeout)
        if line is None:
            raise EOFError("server closed stderr")
        return line.decode(errors="replace").rstrip("\n")

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_bytes(json.dumps(message).encode() + b"\n")

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise EOFError("server closed stdout")
        value: dict[str, Any] = json.loads(line)
        return value

    def call(self, message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        """Send a request and return its reply; any other reply on the way is a failure."""
        self.send(message)
        while True:
            reply = self.recv(timeout)
            if isinstance(reply, dict) and "method" in reply:
                self.seen.append(reply)  # a server notification or request: the test may inspect them
                continue
            if isinstance(reply, dict) and "id" in reply and reply["id"] == message.get("id"):
                return reply
            raise AssertionError(f"unexpected line while waiting for id {message.get('id')!r}: {reply!r:.300}")

    def wait(self, timeout: float = 10.0) -> int:
        """Wait for the process to exit and for everything it wrote to be read."""
        code = self.proc.wait(timeout)
        for pump in self._pumps:
            pump.join(timeout)
        return code

    def close(self, timeout: float = 10.0) -> int:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.wait(timeout)

    def __enter__(self) -> StdioPeer:
        return self

    def unread_replies(self) -> list[dict[str, Any]]:
        """Replies still queued that no `recv` took (server notifications do not count)."""
        left: list[dict[str, Any]] = []
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return left
            if line is None:
                continue
            try:
                value = json.loads(line)
            except ValueError:
                left.append({"unparsable": line.decode(errors="replace")})
                continue
            if not (isinstance(value, dict) and "method" in value):
                left.append(value)

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if self.proc.poll() is None:
            try:
                self.close(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if exc_type is None and not self._raw_read:
            unread = self.unread_replies()
            assert not unread, f"the server wrote replies nobody asked for: {unread!r:.500}"
