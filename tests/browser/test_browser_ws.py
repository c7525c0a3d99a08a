"""Headless Chromium's own WebSocket against ours: the hub (httpd.ws_server) behind an engine app, and a raw
endpoint on the same engine where the test writes frames itself with httpd.websocket's encoder (the hub never
fragments what it sends). The page, served from the same loopback origin, opens sockets and logs what the
browser reports (open, messages, close code). Checked: the handshake (the page's Origin reaches the app;
permessage-deflate offered and declined), text both ways, a message fragmented by the server arrives whole,
the server's ping is answered by Chromium with its payload, and the close codes the browser observes: 1009
for an oversize message from the page, 1003 for a binary one (the hub is text-only here, as on the board),
1000 for a normal close either way.
"""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from mcp_agent_kit.httpd import Channel, Request, Server, WsConnection, WsLimits, accept
from mcp_agent_kit.httpd import websocket as ws
from tests.browser.cdp import Page

LIMITS = WsLimits(max_frame=1024, max_message=1024)  # small, so an oversize message costs little
PAGE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>WebSocket</title>
<link rel="icon" href="data:,"></head><body><main><p>sockets</p></main><script>
window.sockets = [];
window.openSocket = (path) => {
  const socket = new WebSocket(`ws://${location.host}${path}`);
  const log = [];
  socket.onopen = () => log.push(['open', socket.extensions]);
  socket.onmessage = (event) => log.push(['message', typeof event.data === 'string' ? event.data : 'binary']);
  socket.onclose = (event) => log.push(['close', event.code, event.reason]);
  window.sockets.push({socket, log});
  return window.sockets.length - 1;
};
</script></body></html>"""
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(PAGE), PAGE))


class Echo:
    """The hub's handler: echoes text; "bye" makes the server close normally."""

    def __init__(self, closes: queue.Queue[tuple[int, str]]) -> None:
        self.closes = closes

    def opened(self, conn: WsConnection) -> None:
        pass

    def received(self, conn: WsConnection, message: str | bytes) -> None:
        if message == "bye":
            conn.close(1000, "bye")
        else:
            conn.send(message)

    def closed(self, conn: WsConnection, code: int, reason: str) -> None:
        self.closes.put((code, reason))


class Hub:
    """The engine app: GET / is the page; /hub upgrades into the hub; /raw hands the socket to the test."""

    def __init__(self) -> None:
        self.closes: queue.Queue[tuple[int, str]] = queue.Queue()
        self.raw: queue.Queue[tuple[socket.socket, bytes]] = queue.Queue()
        self.origins: list[str | None] = []
        self.server = Server(("127.0.0.1", 0), self)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __call__(self, request: Request, channel: Channel) -> bool:
        if request.headers.get("upgrade") is None:
            channel.write(RESPONSE)
            return False
        self.origins.append(request.headers.get("origin"))
        if urlsplit(request.target).path == "/raw":
            refused = ws.upgrade_refusal(request)
            assert refused is None, refused
            channel.write(ws.accept_head(request.headers.get("sec-websocket-key")))
            self.server.take_over(channel, lambda sock, rest: self.raw.put((sock, rest)))
            return False
        return accept(self.server, request, channel, Echo(self.closes), principal=None, limits=LIMITS)


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    made = Hub()
    thread = threading.Thread(target=made.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        made.server.shutdown()
        made.server.server_close()
        thread.join(10)


def opened(page: Page, path: str) -> int:
    """A new socket from the page, once open: its index in window.sockets."""
    index = int(page.evaluate(f"openSocket({path!r})"))
    page.wait_for(f"sockets[{index}].log.some(entry => entry[0] === 'open')")
    return index


def closed(page: Page, index: int) -> list[object]:
    """The close event the browser reported: ['close', code, reason]."""
    found: list[object] = page.wait_for(f"sockets[{index}].log.find(entry => entry[0] === 'close')")
    return found


def test_handshake_text_both_ways_and_the_close_codes_chromium_sees(page: Page, hub: Hub) -> None:
    page.navigate(hub.base + "/")
    first = opened(page, "/hub")
    assert page.evaluate(f"sockets[{first}].log[0]") == ["open", ""]  # permessage-deflate declined
    assert hub.origins[-1] == hub.base  # the browser names the page's origin: what a gate checks
    page.evaluate(f"sockets[{first}].socket.send('héllo, hub')")
    page.wait_for(f"sockets[{first}].log.some(entry => entry[1] === 'héllo, hub')")
    page.evaluate(f"sockets[{first}].socket.send('bye')")  # the server closes normally
    assert closed(page, first) == ["close", 1000, "bye"]
    assert hub.closes.get(timeout=10) == (1000, "bye")
    cases = (("'x'.repeat(2000)", 1009), ("new Uint8Array([1, 2, 3])", 1003))
    for message, code in cases:
        index = opened(page, "/hub")
        page.evaluate(f"sockets[{index}].socket.send({message})")
        assert closed(page, index)[:2] == ["close", code]
        assert hub.closes.get(timeout=10)[0] == code
    index = opened(page, "/hub")
    page.evaluate(f"sockets[{index}].socket.close(1000, 'page done')")  # the page closes
    assert closed(page, index) == ["close", 1000, "page done"]
    assert hub.closes.get(timeout=10) == (1000, "page done")


def test_fragments_and_ping_from_the_server(page: Page, hub: Hub) -> None:
    page.navigate(hub.base + "/")
    index = int(page.evaluate("openSocket('/raw')"))
    sock, rest = hub.raw.get(timeout=10)
    with sock:
        sock.setblocking(True)
        sock.settimeout(10)
        decoder = ws.Decoder(server=True)
        seen: list[ws.Event] = decoder.feed(rest) if rest else []

        def next_event() -> ws.Event:
            while not seen:
                data = sock.recv(65536)
                assert data, "Chromium closed the connection"
                seen.extend(decoder.feed(data))
            return seen.pop(0)

        page.wait_for(f"sockets[{index}].log.some(entry => entry[0] === 'open')")
        sock.sendall(ws.frame(ws.TEXT, b"frag", fin=False) + ws.frame(ws.CONT, b"men", fin=False)
                     + ws.frame(ws.PING, b"mid-message") + ws.frame(ws.CONT, "ted é".encode()))
        page.wait_for(f"sockets[{index}].log.some(entry => entry[0] === 'message')")
        assert page.evaluate(f"sockets[{index}].log.filter(entry => entry[0] === 'message')") == [
            ["message", "fragmented é"]]  # one message, whole
        pong = next_event()
        assert isinstance(pong, ws.Pong) and pong.data == b"mid-message"  # answered, with its payload
        sock.sendall(ws.frame(ws.PING, b"are you there"))
        pong = next_event()
        assert isinstance(pong, ws.Pong) and pong.data == b"are you there"
        page.evaluate(f"sockets[{index}].socket.send('from the page')")
        message = next_event()
        assert isinstance(message, ws.WsMessage) and message.data == "from the page"
        sock.sendall(ws.close_frame(1000, "done"))
        echoed = next_event()
        assert isinstance(echoed, ws.Close) and echoed.code == 1000
    # the server ends the TCP connection once the handshake is done (RFC 6455 7.1.1): the page hears of it
    assert closed(page, index) == ["close", 1000, "done"]
