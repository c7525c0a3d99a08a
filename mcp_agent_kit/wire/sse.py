"""wire.sse: the one Server-Sent Events reader of the kit, parsing as the WHATWG HTML standard says.

Every client that reads `text/event-stream` (MCP Streamable HTTP and HTTP+SSE in client/, the A2A
client in a2a/client.py) uses `iter_sse`, so the parsing lives in one place, in the lowest layer
both may import. The rules it follows: lines end with CRLF, LF or CR (a CR at the end of one read
and the LF at the start of the next are one line end); a leading byte-order mark is dropped; a line
starting with `:` is a comment; `field: value` loses exactly one space after the colon and nothing
else (no strip), a line without a colon is a field with an empty value; `data` lines of one event
join with "\\n"; `event` names the event (default "message"); `id` (unless it holds NUL) and
`retry` (ASCII digits only) are remembered across events; an empty line dispatches the event when
it has data; unknown fields are ignored. One deliberate leniency: an event the stream ends in, without
its closing empty line, is still handed over. Rules: no I/O beyond the stream it is given; an
over-long line or event is a ValueError, never an unbounded buffer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_EVENT = 16 * 1024 * 1024
CHUNK = 64 * 1024
BOM = "\ufeff"


def _lines(stream: Any, limit: int) -> Iterator[str]:
    """The lines of a binary stream, split at CRLF, LF or CR, decoded as UTF-8 (bad bytes replaced).

    Reads with read1 where the stream has it (a line arrives as soon as its bytes do, CR-only
    streams included), else with readline."""
    read = getattr(stream, "read1", None)
    pending = b""
    after_cr = False  # the last line ended in CR: an LF opening the next read belongs to it
    while True:
        chunk = read(CHUNK) if read is not None else stream.readline(limit + 1)
        if not chunk:
            if pending:
                yield pending.decode("utf-8", "replace")
            return
        if after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        after_cr = False
        pending += chunk
        start = 0
        while True:
            cr, lf = pending.find(b"\r", start), pending.find(b"\n", start)
            ends = [at for at in (cr, lf) if at >= 0]
            if not ends:
                break
            end = min(ends)
            yield pending[start:end].decode("utf-8", "replace")
            if pending[end:end + 1] == b"\r":
                if end + 1 == len(pending):
                    after_cr = True
                elif pending[end + 1:end + 2] == b"\n":
                    end += 1
            start = end + 1
        pending = pending[start:]
        if len(pending) > limit:
            raise ValueError("an SSE line exceeds the size limit")


def iter_sse(stream: Any, limit: int = MAX_EVENT, seen: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """(event name, data) for each SSE event on a binary stream, in order.

    seen, when given, is kept up to date with the last `id` and `retry` fields (for resuming).
    """
    name, size, first = "message", 0, True
    data: list[str] = []
    for line in _lines(stream, limit):
        if first:
            line, first = line.removeprefix(BOM), False
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data, size = "message", [], 0
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            size += len(value) + 1
            if size > limit:
                raise ValueError("an SSE event exceeds the size limit")
            data.append(value)
        elif field == "event":
            name = value or "message"
        elif seen is not None and ((field == "id" and "\0" not in value) or (field == "retry" and value.isascii()
                                                                               and value.isdigit())):
            seen[field] = value
    if data:
        yield name, "\n".join(data)
