"""The scale-out test fixtures themselves: the PostgreSQL server, the round-robin proxy, the replica launcher."""

from __future__ import annotations

import socket
import sys
import threading

import psycopg

from tests.store.replicas import Replicas
from tests.store.rr_proxy import RoundRobinProxy


def test_each_test_gets_a_fresh_postgresql_database(pg_url: str, pg_server: object) -> None:
    with psycopg.connect(pg_url, connect_timeout=10) as conn:
        assert conn.execute("SELECT current_setting('fsync'), count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone() == ("off", 0)
        conn.execute("CREATE TABLE mine (x int)")
    assert pg_server.new_database() != pg_url  # type: ignore[attr-defined]


def echo_server(tag: bytes) -> tuple[socket.socket, int]:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(1024)
                conn.sendall(tag + data)
    threading.Thread(target=serve, daemon=True).start()
    return listener, int(listener.getsockname()[1])


def ask(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(1024):
            chunks.append(chunk)
        return b"".join(chunks)


def test_the_proxy_sends_each_connection_to_the_next_backend_and_skips_a_dead_one() -> None:
    servers = [echo_server(tag) for tag in (b"a:", b"b:", b"c:")]
    with RoundRobinProxy([port for _, port in servers]) as proxy:
        assert [ask(proxy.port, b"x") for _ in range(6)] == [b"a:x", b"b:x", b"c:x"] * 2
        servers[1][0].shutdown(socket.SHUT_RDWR)  # wakes its accept(): the port stops listening
        servers[1][0].close()  # backend b goes away: its turns go to the next one
        assert [ask(proxy.port, b"y") for _ in range(3)] == [b"a:y", b"c:y", b"c:y"]
        assert proxy.picks == [3, 2, 4]
    for listener, _ in servers:
        listener.close()


def test_replicas_listen_on_their_own_ports_share_the_secret_and_die_by_kill_9() -> None:
    script = ("import os, socket, sys\ns = socket.create_server(('127.0.0.1', int(sys.argv[1])))\n"
              "while True:\n c, _ = s.accept()\n"
              " c.sendall((os.environ['MCP_AGENT_KIT_SECRET'] + ' ' + ' '.join(sys.argv[2:])).encode())\n"
              " c.close()\n")
    with Replicas(["-c", script, "{port}"], n=3, store_url="sqlite:///x.db", lease_s=2) as replicas:
        answers = {ask(port, b"") for port in replicas.ports}
        assert answers == {f"{replicas.secret} --store sqlite:///x.db --store-lease 2".encode()}
        assert len(set(replicas.ports)) == 3
        replicas.kill(1)
        assert not replicas.alive(1) and replicas.procs[1].returncode == -9
        assert replicas.alive(0) and replicas.index_of_pid(replicas.procs[2].pid) == 2
    assert not any(replicas.alive(i) for i in range(3))
    assert sys.executable == replicas.command(1)[0]


def test_the_store_bench_runs_and_prints_every_cell(pg_url: str) -> None:
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(root / "bench" / "store_bench.py"), "--tasks", "20", "--polls", "1",
                           "--runs", "1", "--postgres", pg_url], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()[2:5]}
    assert list(rows) == ["memory", "sqlite", "postgresql"]
    assert all(len(cells) == 8 and all(float(cell) > 0 for cell in cells) for cells in rows.values())


def test_the_store_bench_through_servers_runs_and_prints_every_cell(pg_url: str) -> None:
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(root / "bench" / "store_bench.py"), "--servers", "--tasks", "4",
                           "--polls", "2", "--runs", "1", "--clients", "2", "--postgres", pg_url],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("MCP tasks through examples/everything_server.py")
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:5]}
    assert list(rows) == ["memory", "sqlite", "postgresql"]
    assert all(len(cells) == 8 and all(float(cell) > 0 for cell in cells) for cells in rows.values())
    assert "polled through the next one" in lines[5]


def test_replicas_without_a_store_url_get_no_store_options() -> None:
    replicas = Replicas(["server.py", "--http", "127.0.0.1:{port}"], n=1, store_url=None, lease_s=2)
    try:
        assert replicas.command(5) == [sys.executable, "server.py", "--http", "127.0.0.1:5"]
    finally:
        replicas.cleanup()
