"""head: parse one HTTP/1.1 request head (request line and header fields) from bytes.

Pure functions over bytes; no sockets. A head that cannot be served is a HeadError carrying the
status to answer with (400 bad syntax, 414 request line too long, 431 too many or too large
headers). Rules: no email package (it dominates per-request cost); header names are matched
lower-case; fields that must not repeat (framing, Host, credentials) are refused when repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_LINE = 65536
SINGLE = frozenset({"content-length", "host", "transfer-encoding", "authorization"})


class Headers(dict[str, str]):
    """Request headers by lower-case name; repeated fields are joined with ", "."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name.lower() if isinstance(name, str) else name)


class HeadError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(slots=True)
class Head:
    method: str
    target: str
    version: str
    headers: Headers
    requestline: str

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.1":
            return "close" not in connection
        return "keep-alive" in connection


def head_end(buf: bytes | bytearray) -> int:
    """Index just past the blank line that ends a head, or -1 while it is incomplete."""
    crlf = buf.find(b"\r\n\r\n")
    lf = buf.find(b"\n\n")
    if crlf < 0 and lf < 0:
        return -1
    if lf < 0 or (0 <= crlf < lf):
        return crlf + 4
    return lf + 2


def parse(raw: bytes, single: frozenset[str] = SINGLE, max_headers: int = 100) -> Head:
    """The head in `raw` (its bytes up to and including the blank line)."""
    lines = raw.split(b"\n")
    first = lines[0]
    if len(first) > MAX_LINE:
        raise HeadError(414, "Request-URI Too Long")
    requestline = str(first, "iso-8859-1").rstrip("\r")
    words = requestline.split()
    if len(words) != 3 or not words[2].startswith("HTTP/1."):
        raise HeadError(400, "Bad request line")
    method, target, version = words
    fields = lines[1:]
    while fields and fields[-1] in (b"", b"\r"):
        fields.pop()
    if len(fields) > max_headers:
        raise HeadError(431, "Too many headers")
    headers = Headers()
    for line in fields:
        name, sep, value = str(line, "iso-8859-1").rstrip("\r").partition(":")
        key = name.lower()
        if not sep or not name or name != name.strip() or (key in single and dict.__contains__(headers, key)):
            raise HeadError(400, "Bad header")
        value = value.strip()
        headers[key] = f"{dict.__getitem__(headers, key)}, {value}" if dict.__contains__(headers, key) else value
    return Head(method, target, version, headers, requestline)


def status_reply(status: int, reason: str) -> bytes:
    """A complete plain-text error response that closes the connection."""
    body = f"{status} {reason}\n".encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
