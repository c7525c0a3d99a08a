"""A small round-robin TCP proxy: each new connection goes to the next backend port, as a load balancer would.

`RoundRobinProxy([p1, p2, p3])` listens on 127.0.0.1 and a free port (`.port`); connection n goes
to backend n mod N. A backend that refuses the connection (a killed replica) is skipped for the
next one, as a load balancer's health check would; when all refuse, the client is closed.
`.picks` counts the connections each backend took. Bytes are copied both ways by two threads per
connection, with half-closes passed on. Close it (or use `with`) to stop listening and drop every
connection.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
from types import TracebackType


class RoundRobinProxy:
    def __init__(self, backends: list[int], host: str = "127.0.0.1") -> None:
        if not backends:
            raise ValueError("a proxy needs at least one backend port")
        self.backends, self.host = list(backends), host
        self.picks = [0] * len(backends)
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener = socket.create_server((host, 0))
        self.port = int(self._listener.getsockname()[1])
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True, name="rr-proxy")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        start = next(self._turn)
        for step in range(len(self.backends)):
            index = (start + step) % len(self.backends)
            try:
                upstream = socket.create_connection((self.host, self.backends[index]), timeout=5)
            except OSError:
                continue
            upstream.settimeout(None)
            with self._lock:
                self.picks[index] += 1
                if self._closed:
                    upstream.close()
                    break
                self._open.update((client, upstream))
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()
            self._pump(client, upstream)
            return
        client.close()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
            target.shutdown(socket.SHUT_WR)
        except OSError:
            for sock in (source, target):  # one side broke: end both, as a proxy does
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        finally:
            with self._lock:
                if target not in self._open:  # the other direction has finished: close both
                    source.close()
                    target.close()
                self._open.discard(source)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets = list(self._open)
            self._open.clear()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone would not)
        self._listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._thread.join(timeout=5)

    def __enter__(self) -> RoundRobinProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
