"""websocket: the RFC 6455 codec, sans-IO — the upgrade handshake, frames in and frames out.

No sockets and no threads: the hub (ws_server) and the client (ws_client) feed bytes to a Decoder
and write what the encoder returns. Rules: a peer that breaks the protocol gets a WsFailure carrying
the close code to send (1002 framing and masking, 1007 bad UTF-8, 1009 too big — judged from the
frame header, before any payload is read — 1003 a binary message on a text-only endpoint); limits
are enforced on frames and on whole messages; text is checked incrementally across fragments;
unmasking XORs whole integers, never byte by byte; no extension is negotiated (permessage-deflate
is declined by not answering it).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import hashlib
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_agent_kit.httpd.exchange import Request

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
DATA_OPCODES = frozenset({CONT, TEXT, BINARY})
CONTROL_OPCODES = frozenset({CLOSE, PING, PONG})
NO_STATUS, ABNORMAL = 1005, 1006  # reported locally, never sent
MAX_CONTROL = 125
MAX_REASON = 123


class WsFailure(Exception):
    """The peer broke the protocol: fail the connection with close `code` (RFC 6455 7.1.7)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason
        self.events: list[Event] = []  # what the same feed decoded before the failure, in order


@dataclass(frozen=True, slots=True)
class WsMessage:
    data: str | bytes


@dataclass(frozen=True, slots=True)
class Ping:
    data: bytes


@dataclass(frozen=True, slots=True)
class Pong:
    data: bytes


@dataclass(frozen=True, slots=True)
class Close:
    code: int  # NO_STATUS when the frame had no payload
    reason: str


Event = WsMessage | Ping | Pong | Close


def sendable(code: int) -> bool:
    """May this close code appear on the wire (RFC 6455 7.4, the IANA registry)?"""
    return 1000 <= code <= 1003 or 1007 <= code <= 1014 or 3000 <= code <= 4999


# ---- the handshake -----------------------------------------------------------------------------


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for a Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode("ascii")).digest()).decode("ascii")


def new_key() -> str:
    return base64.b64encode(os.urandom(16)).decode("ascii")


def tokens(value: str | None) -> set[str]:
    """The comma-separated tokens of a header value, lower case."""
    return {part.strip().lower() for part in (value or "").split(",") if part.strip()}


def _key_ok(key: str | None) -> bool:
    try:
        return key is not None and len(base64.b64decode(key.strip(), validate=True)) == 16
    except (binascii.Error, ValueError):
        return False


def upgrade_refusal(request: Request) -> tuple[int, str] | None:
    """None for a valid RFC 6455 opening handshake; else (400 or 426, why) to refuse it with."""
    headers = request.headers
    checks: tuple[tuple[bool, int, str], ...] = (
        (request.method == "GET", 400, "a WebSocket upgrade is a GET"),
        (request.version == "HTTP/1.1", 400, "a WebSocket upgrade needs HTTP/1.1"),
        ("websocket" in tokens(headers.get("upgrade")), 426, "send Upgrade: websocket"),
        ("upgrade" in tokens(headers.get("connection")), 426, "send Connection: Upgrade"),
        ((headers.get("sec-websocket-version") or "").strip() == "13", 426, "send Sec-WebSocket-Version: 13"),
        (_key_ok(headers.get("sec-websocket-key")), 400, "send a Sec-WebSocket-Key of 16 base64 bytes"),
    )
    for passed, status, why in checks:
        if not passed:
            return status, why
    return None


def offered_subprotocols(request: Request) -> list[str]:
    """The subprotocols the client offers, in its order of preference."""
    value = request.headers.get("sec-websocket-protocol") or ""
    return [part.strip() for part in value.split(",") if part.strip()]


def accept_head(key: str, subprotocol: str | None = None, headers: Mapping[str, str] | None = None) -> bytes:
    """The 101 response that completes the handshake for this Sec-WebSocket-Key (plus the app's `headers`)."""
    lines = [
        "HTTP/1.1 101 Switching Protocols",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Accept: {accept_key(key.strip())}",
    ]
    if subprotocol:
        lines.append(f"Sec-WebSocket-Protocol: {subprotocol}")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def refusal_head(status: int, why: str) -> bytes:
    """A complete plain-text refusal of an upgrade; a 426 names the version and protocol we speak."""
    phrases = {400: "Bad Request", 426: "Upgrade Required", 503: "Service Unavailable"}
    body = f"{status} {why}\n".encode()
    extra = "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" if status == 426 else ""
    return (
        f"HTTP/1.1 {status} {phrases.get(status, 'Refused')}\r\n{extra}Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


# ---- frames out ----------------------------------------------------------------------------------


def mask(data: bytes | bytearray | memoryview, key: bytes) -> bytes:
    """XOR `data` with the 4-byte masking key (its own inverse), as one big-integer operation."""
    size = len(data)
    if not size:
        return b""
    repeated = (key * (size // 4 + 1))[:size]
    return (int.from_bytes(data, "little") ^ int.from_bytes(repeated, "little")).to_bytes(size, "little")


def frame(opcode: int, payload: bytes = b"", *, fin: bool = True, masked: bool = False) -> bytes:
    """One frame; `masked` (a client) masks the payload with a fresh random key."""
    size = len(payload)
    first = (0x80 if fin else 0) | opcode
    mask_bit = 0x80 if masked else 0
    if size < 126:
        header = struct.pack("!BB", first, mask_bit | size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", first, mask_bit | 126, size)
    else:
        header = struct.pack("!BBQ", first, mask_bit | 127, size)
    if not masked:
        return header + payload
    key = os.urandom(4)
    return header + key + mask(payload, key)


def message_frame(message: str | bytes, *, masked: bool = False) -> bytes:
    if isinstance(message, str):
        return frame(TEXT, message.encode("utf-8"), masked=masked)
    return frame(BINARY, bytes(message), masked=masked)


def close_payload(code: int = 1000, reason: str = "") -> bytes:
    """A close frame's payload: the code, then the reason cut to 123 bytes on a character boundary."""
    if not sendable(code):
        raise ValueError(f"close code {code} may not be sent: use 1000-1003, 1007-1014 or 3000-4999")
    raw = reason.encode("utf-8")[:MAX_REASON].decode("utf-8", "ignore").encode("utf-8")
    return struct.pack("!H", code) + raw


def echo_payload(close: Close) -> bytes:
    """The payload that answers a peer's close: its code echoed (none when it named none)."""
    return b"" if close.code == NO_STATUS else close_payload(close.code, close.reason)


def close_frame(code: int = 1000, reason: str = "", *, masked: bool = False) -> bytes:
    return frame(CLOSE, close_payload(code, reason), masked=masked)


def parse_close(payload: bytes) -> Close:
    """The close a frame's payload carries; WsFailure 1002 for a bad code or length, 1007 for a bad reason."""
    if not payload:
        return Close(NO_STATUS, "")
    if len(payload) == 1:
        raise WsFailure(1002, "a close payload of one byte")
    code = struct.unpack("!H", payload[:2])[0]
    if not sendable(code):
        raise WsFailure(1002, f"close code {code} may not be sent")
    try:
        reason = payload[2:].decode("utf-8")
    except UnicodeDecodeError:
        raise WsFailure(1007, "close reason is not UTF-8") from None
    return Close(code, reason)


# ---- frames in -----------------------------------------------------------------------------------

_UTF8 = codecs.getincrementaldecoder("utf-8")


class Decoder:
    """Bytes in, events out. `server=True` expects masked frames (from a client), else unmasked."""

    __slots__ = ("_buf", "_opcode", "_parts", "_size", "_text", "_utf8", "closed", "max_frame", "max_message",
                 "server", "text_only")

    def __init__(self, *, server: bool, max_frame: int = 1 << 20, max_message: int = 1 << 20,
                 text_only: bool = False) -> None:
        self.server = server
        self.max_frame = max_frame
        self.max_message = max_message
        self.text_only = text_only
        self.closed = False  # a close frame arrived: everything after it is ignored
        self._buf = bytearray()
        self._opcode: int | None = None  # the data message being assembled (TEXT or BINARY)
        self._parts: list[bytes] = []
        self._text: list[str] = []
        self._size = 0
        self._utf8 = _UTF8()

    def feed(self, data: bytes | bytearray) -> list[Event]:
        """The events `data` completes; WsFailure when the peer broke the protocol."""
        if self.closed:
            return []
        buf = self._buf
        buf += data
        events: list[Event] = []
        start = 0
        try:
            while not self.closed:
                used = self._one(buf, start, events)
                if not used:
                    break
                start += used
        except WsFailure as failure:
            failure.events = events
            raise
        del buf[:start]
        return events

    def _one(self, buf: bytearray, start: int, events: list[Event]) -> int:
        """Decode the frame at `start`; the bytes it took, 0 while it is incomplete."""
        have = len(buf) - start
        if have < 2:
            return 0
        first, second = buf[start], buf[start + 1]
        fin, opcode, masked, size = first & 0x80, first & 0x0F, second & 0x80, second & 0x7F
        head = 2
        if size == 126:
            head = 4
            if have < head:
                return 0
            size = struct.unpack_from("!H", buf, start + 2)[0]
        elif size == 127:
            head = 10
            if have < head:
                return 0
            size = struct.unpack_from("!Q", buf, start + 2)[0]
            if size >> 63:
                raise WsFailure(1002, "frame length with its top bit set")
        self._check(first, opcode, bool(fin), bool(masked), size)
        total = head + (4 if masked else 0) + size
        if have < total:
            return 0
        body = start + head
        if masked:
            payload = mask(memoryview(buf)[body + 4 : body + 4 + size], bytes(buf[body : body + 4]))
        else:
            payload = bytes(buf[body : body + size])
        self._deliver(opcode, bool(fin), payload, events)
        return total

    def _check(self, first: int, opcode: int, fin: bool, masked: bool, size: int) -> None:
        """Everything the header alone decides, before the payload is waited for."""
        if first & 0x70:
            raise WsFailure(1002, "reserved bits set without an extension")
        if opcode not in DATA_OPCODES and opcode not in CONTROL_OPCODES:
            raise WsFailure(1002, f"reserved opcode {opcode:#x}")
        if masked != self.server:
            raise WsFailure(1002, "client frames must be masked" if self.server else "server frames must not be masked")
        if opcode in CONTROL_OPCODES:
            if not fin:
                raise WsFailure(1002, "a fragmented control frame")
            if size > MAX_CONTROL:
                raise WsFailure(1002, "a control frame over 125 bytes")
            return
        if opcode == CONT and self._opcode is None:
            raise WsFailure(1002, "a continuation frame with no message to continue")
        if opcode != CONT and self._opcode is not None:
            raise WsFailure(1002, "a new data frame inside a fragmented message")
        if opcode == BINARY and self.text_only:
            raise WsFailure(1003, "this endpoint takes text messages only")
        if size > self.max_frame:
            raise WsFailure(1009, f"frame of {size} bytes, over the limit of {self.max_frame}")
        if self._size + size > self.max_message:
            raise WsFailure(1009, f"message over the limit of {self.max_message} bytes")

    def _deliver(self, opcode: int, fin: bool, payload: bytes, events: list[Event]) -> None:
        if opcode == PING:
            events.append(Ping(payload))
        elif opcode == PONG:
            events.append(Pong(payload))
        elif opcode == CLOSE:
            events.append(parse_close(payload))
            self.closed = True
        else:
            if opcode != CONT:
                self._opcode = opcode
            self._size += len(payload)
            if self._opcode == TEXT:
                try:
                    self._text.append(self._utf8.decode(payload, fin))
                except UnicodeDecodeError:
                    raise WsFailure(1007, "text message is not UTF-8") from None
            else:
                self._parts.append(payload)
            if fin:
                data: str | bytes = "".join(self._text) if self._opcode == TEXT else b"".join(self._parts)
                events.append(WsMessage(data))
                self._opcode, self._parts, self._text, self._size = None, [], [], 0
                self._utf8.reset()
