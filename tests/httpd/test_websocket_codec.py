"""The sans-IO RFC 6455 codec: the handshake's checks and keys, frames out, frames in, and the close
code for every way a peer can break the protocol."""

from __future__ import annotations

import os
import struct

import pytest

from mcp_agent_kit.httpd import Headers, Request
from mcp_agent_kit.httpd import websocket as ws

KEY = "dGhlIHNhbXBsZSBub25jZQ=="
GOOD = {"host": "x", "upgrade": "websocket", "connection": "keep-alive, Upgrade", "sec-websocket-version": "13",
        "sec-websocket-key": KEY}


def request(method: str = "GET", version: str = "HTTP/1.1", **changes: str | None) -> Request:
    fields = {**GOOD, **{name.replace("_", "-"): value for name, value in changes.items()}}
    headers = Headers({name: value for name, value in fields.items() if value is not None})
    return Request(method, "/ws", version, headers, b"", f"{method} /ws {version}", True)


def test_accept_key_of_rfc_6455_section_1_3() -> None:
    assert ws.accept_key(KEY) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    head = ws.accept_head(KEY, "chat")
    assert head.startswith(b"HTTP/1.1 101 ") and b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in head
    assert b"Sec-WebSocket-Protocol: chat\r\n" in head and head.endswith(b"\r\n\r\n")


@pytest.mark.parametrize(("made", "status"), [
    (request(), None),
    (request(upgrade="WebSocket", connection="Upgrade"), None),
    (request("POST"), 400),
    (request(version="HTTP/1.0"), 400),
    (request(upgrade=None), 426),
    (request(upgrade="h2c"), 426),
    (request(connection="keep-alive"), 426),
    (request(sec_websocket_version="8"), 426),
    (request(sec_websocket_version=None), 426),
    (request(sec_websocket_key=None), 400),
    (request(sec_websocket_key="c2hvcnQ="), 400),  # 5 bytes
    (request(sec_websocket_key="not base64!!"), 400),
])
def test_upgrade_refusal(made: Request, status: int | None) -> None:
    refusal = ws.upgrade_refusal(made)
    assert (refusal[0] if refusal else None) == status
    if refusal:
        reply = ws.refusal_head(*refusal)
        assert reply.startswith(f"HTTP/1.1 {status} ".encode())
        assert (b"Sec-WebSocket-Version: 13\r\n" in reply) == (status == 426)


def test_offered_subprotocols() -> None:
    assert ws.offered_subprotocols(request(sec_websocket_protocol="chat, v2.board ,")) == ["chat", "v2.board"]


@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 125, 126, 65535, 65536, 100_003])
def test_mask_is_bytewise_xor_and_frames_round_trip(size: int) -> None:
    data, key = os.urandom(size), os.urandom(4)
    assert ws.mask(data, key) == bytes(b ^ key[i % 4] for i, b in enumerate(data))
    decoder = ws.Decoder(server=True, max_frame=1 << 20)
    framed = ws.frame(ws.BINARY, data, masked=True)
    events = [e for i in range(0, len(framed), 7000) for e in decoder.feed(framed[i : i + 7000])]
    assert events == [ws.WsMessage(data)]


def test_text_split_inside_a_character_and_control_frames_between_fragments() -> None:
    decoder = ws.Decoder(server=False)
    euro = "€".encode()
    wire = (ws.frame(ws.TEXT, euro[:1], fin=False) + ws.frame(ws.PING, b"1") + ws.frame(ws.CONT, euro[1:], fin=False)
            + ws.frame(ws.PONG, b"2") + ws.frame(ws.CONT, b"!") + ws.close_frame(4000, "é bye") + b"ignored")
    events = [e for byte in range(len(wire)) for e in decoder.feed(wire[byte : byte + 1])]  # one byte at a time
    assert events == [ws.Ping(b"1"), ws.Pong(b"2"), ws.WsMessage("€!"), ws.Close(4000, "é bye")]
    assert decoder.closed and decoder.feed(ws.frame(ws.TEXT, b"after close")) == []


def _raw(first: int, payload: bytes = b"", *, masked: bool = True) -> bytes:
    """A frame with a hand-made first byte (FIN, RSV bits, opcode)."""
    frame = bytearray(ws.frame(first & 0x0F, payload, masked=masked))
    frame[0] = first
    return bytes(frame)


FAILURES: dict[str, tuple[bytes, int, bool, bool]] = {  # name: (wire, code, decoding as a server, text only)
    "unmasked from a client": (ws.frame(ws.TEXT, b"x"), 1002, True, False),
    "masked from a server": (ws.frame(ws.TEXT, b"x", masked=True), 1002, False, False),
    "RSV1": (_raw(0x80 | 0x40 | ws.TEXT, b"x"), 1002, True, False),
    "RSV3": (_raw(0x80 | 0x10 | ws.TEXT, b"x"), 1002, True, False),
    "opcode 3": (_raw(0x83), 1002, True, False),
    "opcode 0xF": (_raw(0x8F), 1002, True, False),
    "FIN clear on a ping": (_raw(ws.PING, b"x"), 1002, True, False),
    "126-byte ping": (ws.frame(ws.PING, b"x" * 126, masked=True), 1002, True, False),
    "continuation first": (ws.frame(ws.CONT, b"x", masked=True), 1002, True, False),
    "binary inside a fragmented text": (ws.frame(ws.TEXT, b"a", fin=False, masked=True)
                                        + ws.frame(ws.BINARY, b"b", masked=True), 1002, True, False),
    "one-byte close": (ws.frame(ws.CLOSE, b"\x03", masked=True), 1002, True, False),
    **{f"close code {c}": (ws.frame(ws.CLOSE, struct.pack("!H", c), masked=True), 1002, True, False)
       for c in (0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000)},
    "close reason cut inside a character": (ws.frame(ws.CLOSE, b"\x03\xe8\xc3", masked=True), 1007, True, False),
    "a UTF-16 surrogate": (ws.frame(ws.TEXT, b"\xed\xa0\x80", masked=True), 1007, True, False),
    "bad UTF-8 across fragments": (ws.frame(ws.TEXT, b"a\xe2\x82", fin=False, masked=True)
                                   + ws.frame(ws.CONT, b"(", masked=True), 1007, True, False),
    "a message ending mid-character": (ws.frame(ws.TEXT, b"\xc3", masked=True), 1007, True, False),
    "binary on text only": (ws.frame(ws.BINARY, b"\x00", masked=True), 1003, True, True),
    "top bit of a 64-bit length": (b"\x82\xff" + struct.pack("!Q", 1 << 63), 1002, True, False),
    "over max_frame, header alone": (b"\x82\xff" + struct.pack("!Q", 1 << 21), 1009, True, False),
    "over max_frame=1000": (b"\x82\xfe" + struct.pack("!H", 1001), 1009, True, False),
    "fragments over max_message": (ws.frame(ws.TEXT, b"x" * 600, fin=False, masked=True) + b"\x80\xfe"
                                   + struct.pack("!H", 600), 1009, True, False),
}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_protocol_failures_carry_their_close_code(name: str) -> None:
    wire, code, server, text_only = FAILURES[name]
    decoder = ws.Decoder(server=server, max_frame=1000, max_message=1000, text_only=text_only)
    with pytest.raises(ws.WsFailure) as failed:
        decoder.feed(wire)
    assert failed.value.code == code


def test_close_frames() -> None:
    assert ws.parse_close(b"") == ws.Close(ws.NO_STATUS, "")
    assert ws.parse_close(ws.close_payload(1001, "going")) == ws.Close(1001, "going")
    assert len(ws.close_payload(1000, "é" * 100)) == 2 + 122  # cut to 123 bytes on a character boundary
    assert ws.echo_payload(ws.Close(ws.NO_STATUS, "")) == b""
    for code in (1005, 1006, 1015, 999, 2000):
        with pytest.raises(ValueError, match="may not be sent"):
            ws.close_payload(code)
