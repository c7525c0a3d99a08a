"""sse_replay: resumable SSE streams for handshake-era sessions (2025-11-25 resumability, SEP-1699).

A `tools/call` POST of a session that negotiated 2025-11-25 answers with an SSE stream that
opens with a priming event (an id, a `retry` hint, empty data). Every event on it carries the id
`<stream>-<n>` and is kept in the session's EventLog, so a client whose connection broke (or that
the server disconnected on purpose, `Context.close_stream()`) can GET with `Last-Event-ID` and
receive what it missed, then the rest of that stream live. Rules: events are replayed only on
the stream they belong to; the log is bounded (finished streams are forgotten first, and after a
minute in any case); a broken
connection never cancels the request (2025-11-25: disconnection is not cancellation); no protocol
logic and no socket code beyond the Sink it writes to (transports.sse.Exchange is one).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

RETRY_MS = 500  # how soon a disconnected client should come back
MAX_STREAMS = 64  # per session
MAX_BYTES = 1024 * 1024  # per session, over all kept events
KEEP_FINISHED_S = 60.0  # how long a finished stream can still be fetched again


class Sink(Protocol):
    """The live connection of a stream (transports.sse.Exchange); called with the stream's lock held."""

    def write_raw(self, frame: bytes) -> None: ...

    def end(self) -> None:
        """No more events will come through this connection: close it."""
        ...


class Stream:
    """The events of one POST's SSE stream, and where live events go now."""

    def __init__(self, log: EventLog, stream_id: str) -> None:
        self.log = log
        self.id = stream_id
        self.frames: list[bytes] = []  # frames[n - 1] is event n (0 is the priming event)
        self.dropped = 0  # events forgotten from the front to stay within the log's bounds
        self.done = False
        self.finished_at = 0.0
        self.sink: Sink | None = None
        self.cond = threading.Condition()

    def priming(self) -> bytes:
        return f"id: {self.id}-0\nretry: {RETRY_MS}\ndata: \n\n".encode()

    def emit(self, frame: bytes, last: bool = False) -> None:
        """Record one event (an empty frame records nothing) and write it to the live connection."""
        with self.cond:
            framed = b""
            if frame:
                n = self.dropped + len(self.frames) + 1
                framed = f"id: {self.id}-{n}\n".encode() + frame
                self.frames.append(framed)
            if last:
                self.done = True
                self.finished_at = self.log.clock()
            sink = self.sink
            if sink is not None:
                if framed:
                    sink.write_raw(framed)
                if last:
                    sink.end()
            self.cond.notify_all()
        self.log.grew(len(framed))  # outside our lock: the log may lock other streams to trim them

    def resume(self, after: int, sink: Sink) -> bool:
        """Replay the events after number `after` to sink and make it the live connection.

        False when those events are no longer kept (the client must start over).
        """
        with self.cond:
            if after < self.dropped or after > self.dropped + len(self.frames):
                return False
            for frame in self.frames[after - self.dropped :]:
                sink.write_raw(frame)
            old, self.sink = self.sink, sink
            if self.done:
                sink.end()
        if old is not None and old is not sink:
            old.end()  # outside our lock: its own writer takes its lock before ours
        return True

    def wait(self, timeout: float) -> bool:
        """Block until the stream ends or timeout passes; True once it has ended."""
        with self.cond:
            if not self.done:
                self.cond.wait(timeout)
            return self.done

    def forget_front(self) -> int:
        """Drop the oldest kept event; its size in bytes (0 if none)."""
        with self.cond:
            if not self.frames:
                return 0
            self.dropped += 1
            return len(self.frames.pop(0))


class EventLog:
    """The resumable streams of one session; `clock` (monotonic seconds) times how long finished ones are kept."""

    def __init__(
        self, max_streams: int = MAX_STREAMS, max_bytes: int = MAX_BYTES, keep_finished_s: float = KEEP_FINISHED_S,
        *, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_streams = max_streams
        self.max_bytes = max_bytes
        self.keep_finished_s = keep_finished_s
        self.clock = clock
        self._streams: OrderedDict[str, Stream] = OrderedDict()
        self._ids = itertools.count(1)
        self._bytes = 0
        self._lock = threading.Lock()

    def open(self) -> Stream:
        stream = Stream(self, str(next(self._ids)))
        with self._lock:
            self._expire()
            self._streams[stream.id] = stream
            while len(self._streams) > self.max_streams:
                self._evict()
        return stream

    def find(self, last_event_id: str) -> tuple[Stream, int] | None:
        """The stream an event id belongs to and the event's number, if it is still kept."""
        stream_id, _, number = last_event_id.strip().rpartition("-")
        if not number.isdigit():
            return None
        with self._lock:
            self._expire()
            stream = self._streams.get(stream_id)
        return (stream, int(number)) if stream is not None else None

    def grew(self, size: int) -> None:
        with self._lock:
            self._bytes += size
            while self._bytes > self.max_bytes and self._streams:
                self._evict()

    def _expire(self) -> None:
        """Forget streams that finished more than keep_finished_s ago (lock held)."""
        cutoff = self.clock() - self.keep_finished_s
        for stream in [s for s in self._streams.values() if s.done and s.finished_at < cutoff]:
            del self._streams[stream.id]
            self._bytes -= sum(len(frame) for frame in stream.frames)

    def _evict(self) -> None:
        """Forget a finished stream (the oldest), else the oldest event of the oldest stream."""
        finished = next((s for s in self._streams.values() if s.done), None)
        if finished is not None:
            del self._streams[finished.id]
            self._bytes -= sum(len(frame) for frame in finished.frames)
            return
        oldest = next(iter(self._streams.values()))
        freed = oldest.forget_front()
        if freed == 0:  # nothing left to forget in it: drop it whole
            del self._streams[oldest.id]
        self._bytes -= freed
