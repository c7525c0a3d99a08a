"""hosts.link: one spawned agent process and the relay of its lines — the part both transports and agentctl share.

`AgentProcess(agent, cwd=..., on_message=..., on_end=...)` starts the agent through process.PeerProcess (its own
process group, the minimal environment plus the entry's `env`; under bubblewrap when the entry says
`"sandbox": "bwrap"`, its cwd the writable workspace). A reader thread splits its stdout into lines: each JSON
object goes to `on_message(text, message)` unchanged (the ACP wire is relayed, never rewritten); other lines are
logged and dropped. `on_output(stream, line)` sees every stdout and stderr line (agentctl's output buffer). When
stdout ends, `on_end(why)` runs once. `send` writes one message as one line. `stop()` ends the whole process
tree (stdin closed, SIGTERM, SIGKILL: PeerProcess.stop) on a thread of its own, so no caller waits for it.
Rules: no HTTP and no routing; one writer at a time; an over-long line (past MAX_LINE) is dropped, not split.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.hosts.config import HostedAgent
from mcp_agent_kit.hosts.usage import tree_usage
from mcp_agent_kit.process import PeerProcess

__all__ = ["MAX_LINE", "AgentProcess", "LinkError"]

log = logging.getLogger("mcp_agent_kit.hosts")
MAX_LINE = 16 << 20  # bytes of one message from the agent
STOP_GRACE_S = 1.0
STOP_WAIT_S = 15.0  # SIGTERM, then SIGKILL and the reap: bounded


class LinkError(Exception):
    """The agent could not be started, or is gone."""


def _nothing(*_: Any) -> None:
    return None


class AgentProcess:
    """One agent process (see the module's doc)."""

    def __init__(self, agent: HostedAgent, *, cwd: str, on_message: Callable[[str, dict[str, Any]], None],
                 on_end: Callable[[str], None] = _nothing, on_output: Callable[[str, str], None] | None = None,
                 label: str = "agent") -> None:
        self.agent, self.cwd, self.label = agent, cwd, label
        self._on_message, self._on_end, self._on_output = on_message, on_end, on_output
        self._write_lock = threading.Lock()
        self._stopping = False
        self._state_lock = threading.Lock()  # never held while writing: a stuck pipe must not block stop()
        self._down = threading.Event()  # the process tree has ended (after stop)
        self.process: PeerProcess | None = None
        self.started_at = time.time()
        self.last_active = time.monotonic()
        self.messages_in = self.messages_out = 0

    def start(self) -> None:
        """Spawn the agent and its reader; LinkError (one line) when it cannot start."""
        from mcp_agent_kit.process import SpawnError
        from mcp_agent_kit.sandbox import SandboxError

        spec = self.agent.spec
        argv = self.agent.argv
        try:
            if spec.sandbox is not None:
                argv = spec.sandbox.wrap(argv, workspace=self.cwd, env=spec.env)
            self.process = PeerProcess(argv, env=spec.env, cwd=self.cwd, label=self.label,
                                       on_stderr=self._stderr if self._on_output else None,
                                       lasting=spec.sandbox is not None)
        except (SpawnError, SandboxError) as exc:
            raise LinkError(f"agent {self.agent.id!r} cannot start: {exc}") from None
        threading.Thread(target=self._read, name=f"{self.label}-stdout", daemon=True).start()

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode() is None and not self._stopping

    def send(self, message: dict[str, Any], text: str | None = None) -> bool:
        """Write one message to the agent (`text`: its JSON as received, when that is one line); False when gone."""
        if text is None or "\n" in text or "\r" in text:
            text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        data = text.encode() + b"\n"
        process = self.process
        if process is None or self._stopping:
            return False
        with self._write_lock:
            try:
                process.stdin.write(data)
                process.stdin.flush()
            except (OSError, ValueError):
                return False
        self.messages_in += 1
        self.last_active = time.monotonic()
        return True

    def usage(self) -> dict[str, Any]:
        """pid, its tree's RSS and CPU seconds, messages each way, seconds since the last one."""
        out: dict[str, Any] = {"pid": self.pid, "running": self.alive, "started_at": self.started_at,
                               "idle_s": round(time.monotonic() - self.last_active, 1),
                               "messages_to_agent": self.messages_in, "messages_from_agent": self.messages_out}
        if self.pid is not None and self.alive:
            out.update(tree_usage(self.pid))
        return out

    def stop(self, wait: bool = False) -> None:
        """End the agent's process tree (once); on a thread of its own unless `wait`."""
        with self._state_lock:
            first, self._stopping = not self._stopping, True
        process = self.process
        if process is None:
            self._down.set()
        elif first and wait:
            self._stop_now(process)
        elif first:
            threading.Thread(target=self._stop_now, args=(process,), name=f"{self.label}-stop", daemon=True).start()
        elif wait:
            self._down.wait(STOP_WAIT_S)

    def stopped(self, timeout: float) -> bool:
        """Stop the agent if nothing did yet; whether its process tree ended within `timeout` s."""
        self.stop()
        return self._down.wait(timeout)

    def _stop_now(self, process: PeerProcess) -> None:
        try:
            process.stop(STOP_GRACE_S)
        finally:
            self._down.set()

    # ---- the reader ---------------------------------------------------------------------------------------
    def _read(self) -> None:
        process = self.process
        assert process is not None
        stream = process.stdout
        try:
            while True:
                line = stream.readline(MAX_LINE + 1)
                if not line:
                    break
                if len(line) > MAX_LINE and not line.endswith(b"\n"):
                    log.warning("%s: a line over %d bytes was dropped", self.label, MAX_LINE)
                    while (rest := stream.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                        pass
                    continue
                self._line(line.decode("utf-8", "replace").strip())
        except (OSError, ValueError):
            pass
        finally:
            if self._stopping:
                why = "the agent was stopped"
            elif process.ended(0.5) is None:
                why = "the agent closed its output"
            else:
                why = f"the agent {process.describe_exit()}"
            with contextlib.suppress(OSError, ValueError):
                stream.close()
            self._on_end(why)

    def _line(self, text: str) -> None:
        if not text:
            return
        if self._on_output is not None:
            self._on_output("stdout", text)
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            log.debug("%s: not a JSON-RPC message on stdout: %.200s", self.label, text)
            return
        self.messages_out += 1
        self.last_active = time.monotonic()
        self._on_message(text, message)

    def _stderr(self, chunk: bytes) -> None:
        if self._on_output is not None and chunk:
            for line in chunk.decode("utf-8", "replace").splitlines():
                if line.strip():
                    self._on_output("stderr", line)


def default_place(agent: HostedAgent) -> str:
    """Where an agent process starts: its entry's `cwd`, else the host's own directory (the workspace seam)."""
    return agent.spec.cwd or os.getcwd()
