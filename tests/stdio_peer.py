"""A raw line-level stdio peer for tests: spawn a server, write bytes, read JSON lines."""

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
        self.raw: list[bytes] = []
        self.stderr = b""
        self._pumps = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._pump_err, daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

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
        self.send(message)
        while True:
            reply = self.recv(timeout)
            if reply.get("id") == message.get("id") and "method" not in reply:
                return reply

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

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            try:
                self.close(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
