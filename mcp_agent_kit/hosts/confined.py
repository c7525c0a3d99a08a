"""hosts.confined: the host's own answers to an agent's `fs/*` and `terminal/*` requests, confined to one workspace.

A connection bound to a workspace (`Acp-Workspace`) puts one `Confined(path, agent, reply)` between its agent and
the remote client. `initialize(message)` gives the client's `initialize` with `clientCapabilities.fs`
(`readTextFile`, `writeTextFile`) and `terminal` set to true, whatever the client said (everything else of it
unchanged); `intercept(message)` takes a request of the agent for one of those methods (True: the host answers
it, the client never sees it), runs it on a thread of its own (a terminal's wait may last) with the kit's ACP
client handlers (acp.client.files and acp.client.terminals: paths must lie inside the workspace, symlinks
followed; terminals start inside it, under the agent's sandbox when it has one) and hands the JSON-RPC answer
to `reply`. Anything else is not touched. `close()` ends every terminal. Rules: no HTTP, no routing; at most
MAX_AT_ONCE requests run at once (one more is refused with an error answer, never queued).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.acp.client import files
from mcp_agent_kit.acp.client.files import Roots
from mcp_agent_kit.acp.client.terminals import Terminals
from mcp_agent_kit.hosts.config import HostedAgent
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError
from mcp_agent_kit.wire.peer import answer

__all__ = ["MAX_AT_ONCE", "Confined"]

MAX_AT_ONCE = 32


class Confined:
    """The fs and terminal side of one workspace-bound connection (see the module's doc)."""

    def __init__(self, path: str, agent: HostedAgent, reply: Callable[[dict[str, Any]], object]) -> None:
        self.path, self.reply = path, reply
        self.roots = Roots(path)
        sandbox, env = agent.spec.sandbox, agent.spec.env
        wrap = None if sandbox is None else (
            lambda argv, cwd: sandbox.wrap(argv, workspace=path, cwd=cwd, env=env))
        self.terminals = Terminals(wrap=wrap)
        self._slots = threading.BoundedSemaphore(MAX_AT_ONCE)
        self.handlers: dict[str, Callable[[Any], Any]] = {
            wire.FS_READ_TEXT_FILE: lambda p: files.read_text_file(self.roots, p),
            wire.FS_WRITE_TEXT_FILE: self._write,
            wire.TERMINAL_CREATE: lambda p: self.terminals.create(self.roots, p),
            wire.TERMINAL_OUTPUT: self.terminals.output,
            wire.TERMINAL_WAIT_FOR_EXIT: self.terminals.wait_for_exit,
            wire.TERMINAL_KILL: self.terminals.kill,
            wire.TERMINAL_RELEASE: self.terminals.release,
        }

    def initialize(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The client's message with fs and terminal advertised when it is `initialize`; None for any other."""
        if message.get("method") != wire.INITIALIZE:
            return None
        params = message.get("params")
        params = dict(params) if isinstance(params, dict) else {}
        caps = params.get("clientCapabilities")
        caps = dict(caps) if isinstance(caps, dict) else {}
        fs = caps.get("fs")
        caps["fs"] = {**(fs if isinstance(fs, dict) else {}), "readTextFile": True, "writeTextFile": True}
        caps["terminal"] = True
        params["clientCapabilities"] = caps
        return {**message, "params": params}

    def intercept(self, message: dict[str, Any]) -> bool:
        """Whether the agent's `message` is a request the host answers (then it is answered, later, via `reply`)."""
        handler = self.handlers.get(message.get("method"))  # type: ignore[arg-type]
        if handler is None or "id" not in message:
            return False
        if not self._slots.acquire(blocking=False):
            self.reply(answer(message["id"], error=RpcError(wire.INTERNAL_ERROR, f"over {MAX_AT_ONCE} fs and "
                                                                                "terminal requests at once: retry")))
            return True
        threading.Thread(target=self._run, args=(handler, message), name="host-confined", daemon=True).start()
        return True

    def _run(self, handler: Callable[[Any], Any], message: dict[str, Any]) -> None:
        try:
            try:
                result = handler(message.get("params"))
                reply = answer(message["id"], {} if result is None else result)
            except RpcError as exc:
                reply = answer(message["id"], error=exc)
            except Exception as exc:  # an answer, never a dead thread the agent waits on
                reply = answer(message["id"], error=RpcError(wire.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
            self.reply(reply)
        finally:
            self._slots.release()

    def _write(self, params: Any) -> None:
        files.write_text_file(self.roots, params)

    def close(self) -> None:
        """End every terminal the agent left running."""
        self.terminals.close_all()
