"""watch: follow a server's list changes (tools, prompts, resources) in both eras.

A handshake-era server announces a change with `notifications/<kind>/list_changed` on its own
(over stdio on its stdout; over Streamable HTTP on the session's GET stream, which the watcher
has the channel open). A 2026-07-28 server sends them only on a `subscriptions/listen` request, which
a ListWatcher keeps open on a background thread and opens again whenever it ends. Rules: the
callback gets "tools", "prompts" or "resources" on a transport thread, so it must return
quickly (hand real work to another thread); a modern server is asked only for the kinds whose
capability says `listChanged`, a legacy server's announcements are all taken.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.peer import Peer
from mcp_agent_kit.wire import mcp
from mcp_agent_kit.wire.jsonrpc import RpcError

log = logging.getLogger("mcp_agent_kit.client")

LIST_CHANGED = {notification: kind for kind, notification in mcp.LIST_CHANGED.items() if kind != "resourceTemplates"}
"""list_changed notification -> the kind of list it announces."""
_LISTEN_FLAGS = {"tools": "toolsListChanged", "prompts": "promptsListChanged", "resources": "resourcesListChanged"}


def _announces(capability: object) -> bool:
    return isinstance(capability, dict) and bool(capability.get("listChanged"))


class ListWatcher:
    """Calls back with the kind of list that changed, until stopped or the client closes."""

    def __init__(self, client: Peer, callback: Callable[[str], None], *, reopen_s: float = 3600.0) -> None:
        self.client = client
        self.callback = callback
        self.reopen_s = reopen_s
        self.kinds: list[str] = []
        self._stop = threading.Event()
        self._unlisten: Callable[[], None] | None = None

    def start(self) -> bool:
        """Begin watching; False when the server announces no list changes at all."""
        verdict = self.client.verdict or self.client.connect()
        self._stop.clear()
        if verdict.era != "modern":  # whatever it announces, even without declaring listChanged
            self.kinds = list(_LISTEN_FLAGS)
            self._listen_once()
            listen = getattr(self.client.channel, "listen_standalone", None)
            if callable(listen):  # Streamable HTTP: announcements ride the session's GET stream
                listen()
            return True
        self.kinds = [kind for kind in _LISTEN_FLAGS if _announces(verdict.capabilities.get(kind))]
        if not self.kinds:
            return False
        self._listen_once()
        threading.Thread(target=self._listen, name="mcp-list-watch", daemon=True).start()
        return True

    def stop(self) -> None:
        self._stop.set()
        unlisten, self._unlisten = self._unlisten, None
        if unlisten is not None:
            unlisten()

    def _listen_once(self) -> None:
        if self._unlisten is None:
            self._unlisten = self.client.add_listener("list_changed", self._notify)

    def _notify(self, kind: str) -> None:
        if not self._stop.is_set() and kind in self.kinds:
            self.callback(kind)

    def _listen(self) -> None:
        """Keep one subscriptions/listen open (modern era); back off when the server refuses."""
        flags = {_LISTEN_FLAGS[kind]: True for kind in self.kinds}
        pause = 1.0
        while not self._stop.is_set():
            try:
                self.client.request("subscriptions/listen", {"notifications": flags}, timeout=self.reopen_s)
                pause = 1.0
            except PeerError as exc:
                if exc.kind != "timeout":
                    log.info("list watch on %s ended: %s", self.client.channel.describe(), exc)
                    if exc.kind == "exited":
                        return  # the server is gone; a new client will watch again
            except RpcError as exc:
                log.info("%s refuses subscriptions/listen: %s", self.client.channel.describe(), exc.message)
                self._stop.wait(pause)
                pause = min(pause * 2, 60.0)
