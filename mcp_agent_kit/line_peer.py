"""line_peer: the one threaded driver of a JSON-RPC peer over newline-delimited byte streams, for every role.

It reads lines from a binary stream (at most the peer's max_line bytes each), lets the sans-IO
wire.peer.JsonRpcPeer classify them, and acts: a response settles its waiter, a notification runs on
the reading thread in arrival order, a request runs per the declared concurrency, an unusable line is
answered or skipped per the peer's LinePolicy. Writes are whole lines under one lock. Variation points
are declared, never overridden:
- Threads(limit): one reader; each request on its own thread, at most `limit` at once (the rest -32603).
- a handler may return a `Deferred` instead of its reply: its thread (or the reader) goes on at once, and the
  reply is written when the Deferred is settled, on the thread that settles it. An open Deferred counts as in
  flight; at most `max_deferred` are open at once (a request deferred beyond is answered -32603); the end of
  input or the close of our output drops every open one unanswered (a later settle is a no-op).
- Leaders(limit): the reading thread handles a request itself, so a fast call pays no thread hand-off; a
  watchdog hands reading to a fresh thread when one request has taken a couple of milliseconds, and a
  handler about to wait for the peer (expect) hands it over at once.
- observers: on_request (on the reading thread, in order with the notifications), on_bad_line,
  on_oversize, on_end, trace; `in_flight` counts the requests read and not yet answered (deferred ones too), and
  `wait_idle(timeout)` waits, without polling, for the end of input with none left in flight.
Rules: no protocol knowledge beyond JSON-RPC (it takes handlers), never spawns or signals; imports only wire.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, Generic

from mcp_agent_kit.wire import jsonrpc
from mcp_agent_kit.wire.jsonrpc import RpcError
from mcp_agent_kit.wire.peer import JsonRpcPeer, W, answer

MIB = 1 << 20
DEFAULT_MAX_DEFERRED = 1024
Message = dict[str, Any]


class ConnectionClosed(Exception):
    """The peer's output ended (or the connection was closed) before an answer came."""


class RequestTimeout(Exception):
    """No answer within the wait's deadline."""


_SETTLING = threading.Lock()  # settle and add_done_callback agree on whether the answer is in


@dataclass
class Pending:
    """One outgoing request awaiting its answer (a wire.peer Waiter)."""

    id: Any
    method: str
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _result: Any = field(default=None, repr=False)
    _error: BaseException | None = field(default=None, repr=False)
    _callbacks: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        with _SETTLING:
            if self._done.is_set():
                return
            self._result, self._error = result, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback()` once the answer is in (at once when it is already): on the thread that settles it."""
        with _SETTLING:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float) -> Any:
        """The result; the error it was settled with, or RequestTimeout after `timeout` s."""
        if not self._done.wait(timeout):
            raise RequestTimeout(f"{self.method} (id {self.id}) got no answer within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self._result


Outcome = tuple[Any, RpcError | None]
_DROPPED: Outcome = (None, RpcError(jsonrpc.INTERNAL_ERROR, "the connection closed"))  # settled unanswered


class Deferred:
    """A reply to come: a request handler returns one, then settles it once, from any thread (see the module
    docstring). `resolve(result)` answers with a result, `reject(error)` with an RpcError; each returns whether
    it settled it (False when it was settled already, or dropped with its connection)."""

    __slots__ = ("_deliver", "_lock", "_outcome")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outcome: Outcome | None = None
        self._deliver: Callable[[Any, RpcError | None], None] | None = None

    def resolve(self, result: Any = None) -> bool:
        return self._settle((result, None))

    def reject(self, error: RpcError) -> bool:
        return self._settle((None, error))

    @property
    def settled(self) -> bool:
        """Whether it was settled (or dropped)."""
        return self._outcome is not None

    def _settle(self, outcome: Outcome) -> bool:
        with self._lock:
            if self._outcome is not None:
                return False
            self._outcome, deliver = outcome, self._deliver
        if deliver is not None:
            deliver(*outcome)
        return True

    def _bind(self, deliver: Callable[[Any, RpcError | None], None]) -> None:
        """The driver's side: write the reply through `deliver` once settled (at once when it is already)."""
        with self._lock:
            self._deliver, outcome = deliver, self._outcome
        if outcome is not None and outcome is not _DROPPED:
            deliver(*outcome)

    def _drop(self) -> Outcome | None:
        """Settle it unanswered (its connection is gone, or it was refused); the outcome it had already, if any."""
        with self._lock:
            outcome, self._outcome = self._outcome, self._outcome or _DROPPED
        return None if outcome is _DROPPED else outcome


@dataclass(frozen=True)
class Threads:
    """Each request on its own thread, at most `limit` at once (None: no limit)."""

    limit: int | None = None


@dataclass(frozen=True)
class Leaders:
    """Requests handled by the reading thread; reading handed over when one takes `promote_after` s."""

    limit: int = 64
    promote_after: float = 0.002
    idle_tick: float = 0.05


class _Worker:
    """One leader-capable thread and what it is working on."""

    __slots__ = ("busy", "seq", "thread")

    def __init__(self) -> None:
        self.seq = 0
        self.busy = False
        self.thread: threading.Thread | None = None


def _ignore(message: Message) -> None:
    return None


class LinePeer(Generic[W]):
    """A JSON-RPC peer over `reader` (the other side's output) and `writer` (its input)."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes], peer: JsonRpcPeer[W], *,
                 handle: Callable[[Message], Message | Deferred | None], notify: Callable[[Message], None] = _ignore,
                 encode: Callable[[Message], bytes] = jsonrpc.encode, concurrency: Threads | Leaders = Threads(),
                 on_request: Callable[[Message], None] | None = None,
                 on_bad_line: Callable[[bytes, Message | None], None] | None = None,
                 on_oversize: Callable[[int], None] | None = None, on_end: Callable[[], None] | None = None,
                 trace: Callable[[str, Message], None] | None = None, log: Callable[[str], None] | None = None,
                 name: str = "peer", thread_name: str | None = None,
                 max_deferred: int = DEFAULT_MAX_DEFERRED) -> None:
        # readline on a raw stream reads byte by byte: buffer it
        self._reader: IO[bytes] = reader if isinstance(reader, io.BufferedIOBase) else io.BufferedReader(
            reader, 1 << 16)  # type: ignore[type-var]
        self._writer, self.peer, self._handle, self._notify, self._encode = writer, peer, handle, notify, encode
        self._on_request, self._on_bad_line = on_request, on_bad_line
        self._on_oversize, self._on_end = on_oversize, on_end
        self.trace, self._log = trace, log or (lambda text: None)
        self.name, self._thread_name = name, thread_name or name
        self._classify, self._limit = peer.classify, peer.max_line
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._changed = threading.Condition()  # guards the peer's table and the state below
        self._eof = False  # input ended or reading stopped: no new waiters
        self._done = False  # input ended and on_end has run
        self._stopped = False  # stop_reading() was called
        self.ended = threading.Event()
        self.oversize_lines = 0
        self._leaders = concurrency if isinstance(concurrency, Leaders) else None
        self._slots = threading.BoundedSemaphore(concurrency.limit) if isinstance(
            concurrency, Threads) and concurrency.limit else None
        self._count = 0
        self._max_deferred = max_deferred
        self._open: set[Deferred] = set()  # the deferred requests not yet answered
        self._gone = False  # input ended or our output closed: no deferred reply is written any more
        self._workers: set[_Worker] = set()
        self._leader: _Worker | None = None
        self._stop_watch = threading.Event()
        self._reader_thread: threading.Thread | None = None

    # -- life cycle ----------------------------------------------------------------------------
    def start(self) -> LinePeer[W]:
        """Start reading (once); returns self."""
        if self._leaders is not None:
            if self._leader is None:
                with self._changed:
                    self._promote()
                threading.Thread(target=self._watch, name=f"{self._thread_name}-watch", daemon=True).start()
        elif self._reader_thread is None:
            self._reader_thread = threading.Thread(target=self._read_loop, name=f"{self._thread_name}-reader",
                                                   daemon=True)
            self._reader_thread.start()
        return self

    def join(self, timeout: float) -> bool:
        """Wait at most `timeout` s for the end of input (and on_end); whether it came."""
        return self.ended.wait(timeout)

    def stop_reading(self) -> None:
        """Read no further line (the one being read is still handled); new waiters are refused."""
        with self._changed:
            self._eof = self._stopped = True
            self._changed.notify_all()
        self._stop_watch.set()

    def drain(self, stop: Callable[[], bool] | None = None, poll: float = 0.1) -> bool:
        """Wait until input ended (or reading stopped) and no request is in flight: True; or until
        stop() turns true (looked at every `poll` s): False."""
        with self._changed:
            while not ((self._done or self._stopped) and not self.in_flight):
                if stop is not None and stop():
                    return False
                self._changed.wait(poll)
        return True

    def wait_idle(self, timeout: float) -> bool:
        """Wait at most `timeout` s until input ended (or reading stopped) and no request is in flight;
        whether that came. Each answer written after the end of input notifies the condition, so
        this wakes at the last one (no polling)."""
        with self._changed:
            return self._changed.wait_for(lambda: (self._done or self._stopped) and not self.in_flight, timeout)

    def close_output(self) -> None:
        """Close our output (the peer sees end of input; every open Deferred is dropped); a write blocked on a
        full pipe is not waited for."""
        self._drop_deferred()
        if self._write_lock.acquire(timeout=1.0):
            try:
                with contextlib.suppress(OSError, ValueError):
                    self._writer.close()
            finally:
                self._write_lock.release()

    @property
    def in_flight(self) -> int:
        """Requests read whose answer is not yet written (deferred ones included)."""
        if self._leaders is not None:
            return sum(worker.busy for worker in list(self._workers)) + len(self._open)
        return self._count + len(self._open)

    def reading(self) -> bool:
        """Is a thread still reading (or blocked reading) the input?"""
        if self._leaders is None:
            return self._reader_thread is not None and self._reader_thread.is_alive()
        return any(worker.thread is not None and worker.thread.is_alive() for worker in list(self._workers))

    # -- our requests --------------------------------------------------------------------------
    def expect(self, id_: jsonrpc.Id, waiter: W) -> bool:
        """Await the answer to our request `id_` (sent next); False once input has ended. A leader
        about to wait for the peer hands reading over first."""
        with self._changed:
            if self._eof:
                return False
            self.peer.expect(id_, waiter)
            if self._leaders is not None and self._leader is not None \
                    and self._leader.thread is threading.current_thread():
                self._promote()
        return True

    def forget(self, id_: jsonrpc.Id) -> None:
        with self._changed:
            self.peer.forget(id_)

    def take_all(self) -> list[W]:
        """Every waiter, taken from the table (for the caller to fail)."""
        with self._changed:
            return self.peer.take_all()

    # -- output --------------------------------------------------------------------------------
    def send(self, message: Message) -> None:
        """Write one message as one line (OSError or ValueError when the stream is gone)."""
        data = self._encode(message) + b"\n"
        if self.trace is not None:
            self.trace("out", message)
        with self._write_lock:
            self._writer.write(data)
            self._writer.flush()

    def _reply(self, message: Message) -> None:
        try:
            self.send(message)
        except (OSError, ValueError) as exc:
            self._log(f"{self.name}: could not answer {message.get('id')!r}: cannot write to {self.name}: {exc}")

    # -- input ---------------------------------------------------------------------------------
    def _next_line(self) -> bytes | None:
        """One line without its newline (b"" for one to skip); None at the end of input."""
        try:
            line = self._reader.readline(self._limit + 1)
            if not line:
                return None
            if len(line) > self._limit and not line.endswith(b"\n"):
                size = len(line)
                while line and not line.endswith(b"\n"):
                    line = self._reader.readline(MIB)
                    size += len(line)
                return self._oversize(size)
        except (OSError, ValueError) as exc:
            self._log(f"{self.name}: reading its output failed: {exc}")
            return None
        line = line.rstrip(b"\r\n")
        return line if line.strip() else b""

    def _oversize(self, size: int) -> bytes | None:
        self.oversize_lines += 1
        if self._on_oversize is not None:
            self._on_oversize(size)
        reply = self.peer.too_long()
        if reply is not None:
            self._reply(reply)
        return None if self.peer.policy.oversize == "end" else b""

    def _line(self, line: bytes) -> bool:
        """Act on one line; False when reading must stop (past the junk cap)."""
        incoming = self._classify(line)
        kind, message = incoming.kind, incoming.message
        if kind == "request":
            if self.trace is not None:
                self.trace("in", message)
            if self._on_request is not None:
                self._on_request(message)
            if self._leaders is not None:
                reply = self._handle(message)
                if isinstance(reply, Deferred):
                    self._defer(message.get("id"), reply)
                elif reply is not None:
                    self.send(reply)
            else:
                self._spawn(message)
        elif kind == "notification":
            if self.trace is not None:
                self.trace("in", message)
            self._notify(message)
        elif kind == "response":
            if self.trace is not None:
                self.trace("in", message)
            with self._changed:
                routed = self.peer.route(message)
            if not routed:
                self._log(f"{self.name}: a response to no pending request of ours (id {message.get('id')!r}) "
                          "was ignored")
        else:
            reply, give_up = self.peer.bad_line(incoming)
            if self._on_bad_line is not None:
                self._on_bad_line(line, reply)
            if reply is not None:
                self._reply(reply)
            return not give_up
        return True

    def _spawn(self, message: Message) -> None:
        if self._slots is not None and not self._slots.acquire(blocking=False):
            self._reply({"jsonrpc": "2.0", "id": message.get("id"),
                         "error": {"code": jsonrpc.INTERNAL_ERROR, "message": "too many requests at once"}})
            return
        with self._changed:
            self._count += 1
        threading.Thread(target=self._answer, args=(message,), name=f"{self._thread_name}-{message['method']}",
                         daemon=True).start()

    def _answer(self, message: Message) -> None:
        try:
            reply = self._handle(message)
            if isinstance(reply, Deferred):
                self._defer(message.get("id"), reply)
            elif reply is not None:
                self._reply(reply)
        except Exception as exc:
            self._log(f"{self.name}: handling {message['method']} failed: {type(exc).__name__}: {exc}")
        finally:
            if self._slots is not None:
                self._slots.release()
            with self._changed:
                self._count -= 1
                self._changed.notify_all()

    # -- deferred replies ----------------------------------------------------------------------
    def _defer(self, id_: Any, deferred: Deferred) -> None:
        """A handler returned `deferred` for request `id_`: count it in flight and answer when it is settled."""
        with self._changed:
            admitted = not self._gone and len(self._open) < self._max_deferred
            if admitted:
                self._open.add(deferred)  # before the handler's own count drops: in_flight never dips to 0
        if admitted:
            deferred._bind(lambda result, error: self._settled(deferred, id_, result, error))
            return
        outcome = deferred._drop()  # refused: it may have been settled already (then that is the answer)
        if self._gone:
            return
        self._reply(answer(id_, *outcome) if outcome is not None else {
            "jsonrpc": "2.0", "id": id_,
            "error": {"code": jsonrpc.INTERNAL_ERROR, "message": "too many deferred requests at once"}})

    def _settled(self, deferred: Deferred, id_: Any, result: Any, error: RpcError | None) -> None:
        """Write the answer of a settled Deferred (on the settling thread), unless it was dropped meanwhile."""
        with self._changed:
            if deferred not in self._open:
                return
        try:
            self._reply(answer(id_, result, error))
        finally:
            with self._changed:
                self._open.discard(deferred)
                self._changed.notify_all()

    def _drop_deferred(self) -> None:
        """The connection is gone: every open Deferred is settled unanswered (nothing leaks, nothing is written)."""
        with self._changed:
            self._gone = True
            dropped, self._open = self._open, set()
            self._changed.notify_all()
        for deferred in dropped:
            deferred._drop()

    def _read_loop(self) -> None:
        try:
            while True:
                line = self._next_line()
                if line is None:
                    break
                if line:
                    try:
                        if not self._line(line):
                            break
                    except Exception as exc:  # an observer or handler must not stop the reader
                        self._log(f"{self.name}: handling a line failed: {type(exc).__name__}: {exc}")
        finally:
            self._end()

    def _end(self) -> None:
        with self._changed:
            self._eof = True
        self._stop_watch.set()
        self._drop_deferred()  # the peer that asked has gone: no deferred answer is written after its end
        try:
            if self._on_end is not None:
                self._on_end()
        except Exception as exc:
            self._log(f"{self.name}: on_end failed: {exc}")
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()
            self.ended.set()

    # -- leaders -------------------------------------------------------------------------------
    def _lead(self, worker: _Worker) -> None:
        """Read and handle lines while this worker is the leader.

        Only the leader reads, and it marks itself busy before it lets go of the read lock, so the
        watchdog and the drain see every line being handled. The busy flag and counter are this
        worker's own (plain attribute writes, no lock per line).
        """
        while True:
            with self._read_lock:
                if self._leader is not worker or self._eof:
                    return
                line = self._next_line()
                if line is not None:
                    worker.seq += 1
                    worker.busy = True
            if line is None:
                self._end()
                return
            try:
                if line:
                    self._line(line)
            except Exception as exc:
                self._log(f"{self.name}: handling a line failed: {type(exc).__name__}: {exc}")
            finally:
                worker.busy = False
            if self._eof or self._leader is not worker:  # shutting down, or promoted away: retire
                with self._changed:
                    if self._leader is not worker:
                        self._workers.discard(worker)
                        self._changed.notify_all()  # one fewer in flight: drain and wait_idle look again
                        return
                    self._changed.notify_all()

    def _promote(self) -> None:
        """Make a new leader (call with the lock held)."""
        assert self._leaders is not None
        if self._eof or len(self._workers) >= self._leaders.limit:
            return
        worker = _Worker()
        self._workers.add(worker)
        self._leader = worker
        worker.thread = threading.Thread(target=self._lead, args=(worker,), name=self._thread_name, daemon=True)
        worker.thread.start()

    def _watch(self) -> None:
        """Promote a new leader when the current one has been on one message for a whole tick.

        It polls on its own clock (fast while lines flow, slow when idle) so the request path never
        has to wake it.
        """
        assert self._leaders is not None
        fast, idle = self._leaders.promote_after, self._leaders.idle_tick
        seen: tuple[_Worker | None, int, bool] = (None, -1, False)
        last_seq = -1
        while not self._stop_watch.wait(fast if last_seq >= 0 else idle):
            with self._changed:
                leader = self._leader
                seq, started = (leader.seq, leader.busy) if leader else (0, False)
                if started and seen == (leader, seq, started):
                    self._promote()
            seen = (leader, seq, started)
            last_seq = seq if (seq != last_seq or started) else -1
