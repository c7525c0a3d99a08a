"""acp.client.terminals: the client's `terminal/*` methods — commands the agent runs, confined and bounded.

Each terminal is a subprocess in its own process group, started in a directory inside the
session's roots (its cwd by default), with stdout and stderr merged into one buffer that keeps
only the last `outputByteLimit` bytes (capped by the client's own limit), truncated from the
start at a character boundary as the spec says. `wait_for_exit` is bounded; `kill` ends the
group and keeps the id; `release` kills and forgets it; `close_all` ends every one. Rules: knows
the terminal methods' params and results only; imports `wire`, `acp.connection`, `acp.client.files` and
`process` (its minimal environment). A sandboxed agent's terminals run in its sandbox: `wrap(argv, cwd)`
gives the command line (a SandboxError is the request's error).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.acp.client.files import Roots
from mcp_agent_kit.process import in_lasting_thread, minimal_environment
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError

MAX_OUTPUT = 1 << 20
MAX_TERMINALS = 16
WAIT_LIMIT = 600.0


class Terminal:
    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], limit: int, lasting: bool = False) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.truncated = False
        self.lock = threading.Lock()

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    cwd=cwd, env=env, start_new_session=True)

        try:  # a sandboxed one dies with the thread that forked it (bwrap --die-with-parent): not this one
            self.popen = in_lasting_thread(start) if lasting else start()
        except (OSError, ValueError) as exc:
            raise RpcError(wire.INVALID_PARAMS, f"cannot run {argv[0]!r}: {exc}") from None
        self.reader = threading.Thread(target=self._read, name="acp-terminal", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        stream = self.popen.stdout
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read1(65536):  # type: ignore[attr-defined]
                with self.lock:
                    self.buffer += chunk
                    if len(self.buffer) > self.limit:
                        cut = len(self.buffer) - self.limit
                        while cut < len(self.buffer) and (self.buffer[cut] & 0xC0) == 0x80:
                            cut += 1  # never start inside a UTF-8 character
                        del self.buffer[:cut]
                        self.truncated = True

    def exit_status(self) -> dict[str, Any] | None:
        code = self.popen.poll()
        if code is None:
            return None
        if code < 0:
            try:
                return {"exitCode": None, "signal": signal.Signals(-code).name}
            except ValueError:
                return {"exitCode": None, "signal": str(-code)}
        return {"exitCode": code, "signal": None}

    def output(self) -> dict[str, Any]:
        if self.popen.poll() is not None:
            self.reader.join(1.0)  # take what the pipe still holds
        with self.lock:
            text = self.buffer.decode("utf-8", "replace")
            result: dict[str, Any] = {"output": text, "truncated": self.truncated}
        status = self.exit_status()
        if status is not None:
            result["exitStatus"] = status
        return result

    def kill(self) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(5.0)


class Terminals:
    """The terminals of one client connection, by id."""

    def __init__(self, output_limit: int = MAX_OUTPUT, max_terminals: int = MAX_TERMINALS,
                 wait_limit: float = WAIT_LIMIT, wrap: Callable[[list[str], str], list[str]] | None = None) -> None:
        self.output_limit, self.max_terminals, self.wait_limit = output_limit, max_terminals, wait_limit
        self.wrap = wrap
        self._terminals: dict[str, Terminal] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _get(self, params: Any) -> Terminal:
        terminal_id = params.get("terminalId") if isinstance(params, dict) else None
        with self._lock:
            terminal = self._terminals.get(terminal_id) if isinstance(terminal_id, str) else None
        if terminal is None:
            raise RpcError(wire.RESOURCE_NOT_FOUND, f"no such terminal: {terminal_id!r}")
        return terminal

    def create(self, roots: Roots, params: Any) -> dict[str, Any]:
        params = params if isinstance(params, dict) else {}
        command, args = params.get("command"), params.get("args") or []
        if not isinstance(command, str) or not command or not isinstance(args, list):
            raise RpcError(wire.INVALID_PARAMS, "terminal/create needs a command string and an args list")
        cwd = params.get("cwd") or roots.dirs[0]
        roots.root_of(cwd)
        env = minimal_environment({str(item.get("name")): str(item.get("value", ""))
                                   for item in params.get("env") or [] if isinstance(item, dict)})
        asked = params.get("outputByteLimit")
        limit = min(int(asked), self.output_limit) if isinstance(asked, int) and asked >= 0 else self.output_limit
        with self._lock:
            if len(self._terminals) >= self.max_terminals:
                raise RpcError(wire.INVALID_PARAMS, f"refused: at most {self.max_terminals} terminals at once; "
                                                    "release one first")
            argv = [command, *map(str, args)]
            terminal = Terminal(argv if self.wrap is None else self._wrapped(argv, cwd), cwd, env, limit,
                                lasting=self.wrap is not None)
            terminal_id = f"term-{next(self._ids)}"
            self._terminals[terminal_id] = terminal
        return {"terminalId": terminal_id}

    def _wrapped(self, argv: list[str], cwd: str) -> list[str]:
        from mcp_agent_kit.sandbox import SandboxError

        assert self.wrap is not None
        try:
            return self.wrap(argv, cwd)
        except SandboxError as exc:
            raise RpcError(wire.INTERNAL_ERROR, f"cannot run {argv[0]!r} in the agent's sandbox: {exc}") from None

    def output(self, params: Any) -> dict[str, Any]:
        return self._get(params).output()

    def wait_for_exit(self, params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        try:
            terminal.popen.wait(self.wait_limit)
        except subprocess.TimeoutExpired:
            raise RpcError(wire.INTERNAL_ERROR, f"the command is still running after {self.wait_limit:g} s; "
                                                "kill or release the terminal") from None
        status = terminal.exit_status()
        assert status is not None
        return status

    def kill(self, params: Any) -> None:
        self._get(params).kill()

    def release(self, params: Any) -> None:
        terminal = self._get(params)
        terminal.kill()
        with self._lock:
            self._terminals = {k: v for k, v in self._terminals.items() if v is not terminal}

    def close_all(self) -> None:
        with self._lock:
            terminals, self._terminals = list(self._terminals.values()), {}
        for terminal in terminals:
            terminal.kill()
