"""stdio: a client Channel to an MCP server run as a child process (newline-delimited JSON-RPC).

Spawns the command with its args, env and cwd through the kit's one child-process manager
(mcp_agent_kit.process: its own process group; a minimal environment plus the config's `env`, as
the MCP hosts and the official SDK's get_default_environment() do); a reader thread matches replies to waiting
requests, hands notifications and (legacy) server requests to the client's callbacks (a stdout
line that is not JSON-RPC, such as a print at import, is skipped with a warning telling the
server to log to stderr; a request answered only by such lines fails as "garbage"): the kit's one
line peer (line_peer.LinePeer, lenient server policy: no junk cap, a line over max_line ends the
reading, server requests each on a thread). The
process's stderr thread keeps the last bytes of stderr for error messages and logs its lines.
Close shuts down politely: stdin closed, a grace period, then SIGTERM, then SIGKILL, each to the
whole process group, so what the server started ends with it. Rules: no protocol
decisions; peer failures become probe Failures ("exited", "timeout", "garbage"), never
exceptions; what the peer writes reaches the log only through its LineLimiter (client.loglimit:
a bounded number of lines a second, each truncated), so a flooding peer cannot flood the log.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp_agent_kit.client.channel import ChannelListeners, Slot
from mcp_agent_kit.client.loglimit import MAX_CHARS, LineLimiter
from mcp_agent_kit.client.probe import Event, Failure, Reply
from mcp_agent_kit.line_peer import LinePeer, Threads
from mcp_agent_kit.process import PeerProcess, SpawnError
from mcp_agent_kit.wire import jsonrpc
from mcp_agent_kit.wire.peer import LENIENT_SERVER, JsonRpcPeer

log = logging.getLogger("mcp_agent_kit.client")
MAX_LINE = 16 * 1024 * 1024
STDERR_KEEP = 16 * 1024
LINE_KEEP = 4 * MAX_CHARS  # bytes of one stderr line kept for the log (it is cut to MAX_CHARS characters)
STDOUT_HINT = "a stdio server writes only JSON-RPC to stdout: write logs to stderr (print(..., file=sys.stderr))"


class StdioChannel(ChannelListeners):
    """A child process speaking MCP on its stdin/stdout."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        grace: float = 2.0,
        max_line: int = MAX_LINE,
        label: str | None = None,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = cwd
        self.grace = grace
        self.max_line = max_line
        super().__init__()
        self.strict = False
        self.legacy_version: str | None = None
        self._proc: PeerProcess | None = None
        self._last: PeerProcess | None = None  # the latest process, whose stderr tail outlives close()
        self._lines: LinePeer[Slot] | None = None  # the latest process's line peer
        self._exit_note = ""
        self._noise: str | None = None  # the latest non-JSON-RPC stdout line of this process, if any
        self._noise_lines = 0  # how many such lines, so an exchange knows whether any came while it waited
        self._started = False
        # One bucket for both streams: stderr lines and non-JSON stdout lines, per peer.
        self.log_limiter = LineLimiter(log, label or command)

    # ---- lifecycle -----------------------------------------------------------------------------
    def describe(self) -> str:
        return " ".join([self.command, *self.args])

    def start(self) -> None:
        self._started = True
        try:  # a relative command names a file relative to `cwd`, as the hosts' Popen does (anchor=False)
            proc = PeerProcess([self.command, *self.args], env=self.env, cwd=self.cwd, stderr_limit=STDERR_KEEP,
                               anchor=False, on_stderr=self._stderr_lines(), label="mcp-client")
        except SpawnError as exc:
            self._exit_note = f"could not start {self.command!r}: {exc.why}"
            self._proc = None
            return
        self._proc = self._last = proc
        self._exit_note = ""
        self._noise, self._noise_lines = None, 0
        peer: JsonRpcPeer[Slot] = JsonRpcPeer(LENIENT_SERVER, lambda message: (Reply(message), None),
                                              max_line=self.max_line)
        lines: LinePeer[Slot] = LinePeer(
            proc.stdout, proc.stdin, peer, handle=self.answer_request, notify=self.tell_notification,
            concurrency=Threads(),
            on_bad_line=self._stray, on_oversize=self._too_long, on_end=lambda: self._ended(proc, lines),
            log=self._log_stdout, name=self.command,
            thread_name="mcp-client")
        self._lines = lines
        lines.start()

    def restart(self) -> None:
        self.close()
        self.start()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.stop(self.grace)  # stdin closed, then SIGTERM, then SIGKILL of its whole group
        self._exit_note = "the connection was closed"
        self._fail_all(self._lines, Failure("exited", self._exit_note))
        self.log_limiter.flush()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stderr_tail(self) -> str:
        """The last bytes the latest server process wrote to stderr ('' before any); once it has exited, all of
        them (its last words may still be in the pipe when its stdout closes)."""
        if self._last is None:
            return ""
        self._last.ended(0.0)
        return self._last.stderr_text(STDERR_KEEP)

    # ---- I/O --------------------------------------------------------------------------------------
    def _write(self, message: dict[str, Any]) -> bool:
        if self._proc is None or self._lines is None:
            return False
        try:
            self._lines.send(message)
        except (OSError, ValueError):
            return False
        return True

    def exchange(self, message: dict[str, Any], timeout: float, headers: dict[str, str] | None = None) -> Event:
        if self._proc is None and not self._started:
            self.start()  # lazily, on first use; after close() only restart() starts again
        lines = self._lines
        if self._proc is None or lines is None:
            return Failure("exited", self._exit_note)
        slot = Slot()
        id_ = message["id"]
        noise_before = self._noise_lines
        if not lines.expect(id_, slot) or not self._write(message):
            slot.resolve(Failure("exited", self._exit_reason()))
        if not slot.done.wait(timeout):
            slot.resolve(self._silence(message["method"], timeout, self._noise_lines > noise_before))
            self._write(jsonrpc.notification("notifications/cancelled", {"requestId": id_, "reason": "timeout"}))
        lines.forget(id_)
        assert slot.event is not None
        return slot.event

    def notify(self, message: dict[str, Any]) -> None:
        self._write(message)

    def _exit_reason(self) -> str:
        proc = self._proc
        code = proc.returncode() if proc is not None else None
        tail = self.stderr_tail().strip().splitlines()[-3:]
        note = f"the server process exited (code {code})" if code is not None else "the server closed its stdout"
        note += f"; stderr: {' | '.join(tail)}" if tail else ""
        return note + (f"; it wrote {self._noise[:120]!r} to stdout ({STDOUT_HINT})" if self._noise else "")

    def _silence(self, method: str, timeout: float, noisy: bool) -> Failure:
        """No reply in time: a timeout, or "garbage" when the server wrote non-JSON-RPC lines meanwhile."""
        if not noisy or self._noise is None:
            return Failure("timeout", f"no reply to {method} within {timeout:g}s")
        return Failure("garbage", f"no JSON-RPC reply to {method} within {timeout:g}s, only non-JSON-RPC output "
                                  f"such as {self._noise[:120]!r}; {STDOUT_HINT}")

    @staticmethod
    def _fail_all(lines: LinePeer[Slot] | None, failure: Failure) -> None:
        for slot in lines.take_all() if lines is not None else []:
            slot.resolve(failure)

    def _ended(self, proc: PeerProcess, lines: LinePeer[Slot]) -> None:
        """The server's stdout ended (or a line over the limit ended the reading): fail what waits."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.popen.wait(self.grace)
        with contextlib.suppress(OSError, ValueError):
            proc.stdout.close()  # stdout is ours to close, once read to its end
        if proc is self._proc or self._proc is None:
            self._fail_all(lines, Failure("exited", self._exit_reason()))

    def _stray(self, line: bytes, reply: dict[str, Any] | None) -> None:
        """A line that is not JSON-RPC (a print at import, a banner): skipped with a warning naming the
        fix, as the official SDKs skip it; a request still unanswered at its timeout fails as "garbage"."""
        sample = line[: 4 * MAX_CHARS].decode("utf-8", "replace").strip()
        self._noise = sample
        self._noise_lines += 1
        self.log_limiter.line(logging.WARNING, "wrote a line to stdout that is not JSON-RPC (write logs to stderr: "
                                               "print(..., file=sys.stderr))", repr(sample))

    def _log_stdout(self, text: str) -> None:
        self.log_limiter.line(logging.WARNING, "stdout", text)

    def _too_long(self, size: int) -> None:
        sample = f"a line longer than {self.max_line} bytes"
        if self.strict:
            self._fail_all(self._lines, Failure("garbage", f"the server wrote non-JSON-RPC output: {sample[:120]!r}"))
        else:
            self.log_limiter.line(logging.WARNING, "wrote a line that is not JSON-RPC", repr(sample))

    def _stderr_lines(self) -> Callable[[bytes], None]:
        """For one process: each stderr chunk (b"" at its end) cut into lines logged through the limiter
        (the process keeps the tail for error messages)."""
        partial = bytearray()  # the line being read, at most LINE_KEEP bytes of it

        def chunk_read(chunk: bytes) -> None:
            if not chunk:
                if partial.strip():
                    self._stderr_line(bytes(partial))
                return
            *lines, rest = chunk.split(b"\n")
            for piece in lines:
                partial.extend(piece[: max(0, LINE_KEEP - len(partial))])
                if partial.strip():
                    self._stderr_line(bytes(partial))
                partial.clear()
            partial.extend(rest[: max(0, LINE_KEEP - len(partial))])

        return chunk_read

    def _stderr_line(self, line: bytes) -> None:
        self.log_limiter.line(logging.INFO, "stderr", line.decode("utf-8", "replace").rstrip())
