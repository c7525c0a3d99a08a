"""Hold N idle WebSocket subscribers on a board's /ws, in a process of their own (bench/board_live_bench.py).

    python bench/live_holders.py WS_URL COUNT TASK_ID

Opens COUNT connections with the kit's blocking client (httpd.ws_client: one socket each, no thread), one
after another: the even ones `task.subscribe {task_id: TASK_ID}`, the odd ones `board.subscribe`, each
answered before the next opens. Then prints `held COUNT` on stdout and holds them all, as idle clients do (what
arrives is read and dropped, pings are answered: the server's keep-alive never closes them), until stdin closes
or says anything; then drops every socket and exits 0. Any failure: one stderr line, exit 1.
The clients live here so that the bench's own process measures the server's memory and threads alone.
Rules: loopback only, every wait bounded (the client's timeouts), nothing read after the answers.
"""

from __future__ import annotations

import json
import resource
import selectors
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_agent_kit.httpd.ws_client import WsClient, WsClientError, WsTimeout, connect  # noqa: E402

TIMEOUT_S = 30.0


def subscribe(client: WsClient, index: int, task_id: str) -> None:
    """Send this holder's subscription and read up to its answer (a replayed event may come after it)."""
    action, payload = (("task.subscribe", {"task_id": task_id, "after": 0}) if index % 2 == 0
                       else ("board.subscribe", {}))
    client.send(json.dumps({"id": f"h{index}", "type": "request", "action": action, "payload": payload}))
    while True:
        message = json.loads(client.recv(TIMEOUT_S))
        if message.get("id") == f"h{index}":
            if message.get("type") != "response":
                raise WsClientError(f"{action} refused: {message.get('payload')}")
            return


def hold(clients: list[WsClient]) -> None:
    """Keep the clients idle until stdin says anything or closes: read what arrives (pings answered by recv)."""
    with selectors.DefaultSelector() as selector:
        selector.register(sys.stdin, selectors.EVENT_READ, None)
        for client in clients:
            selector.register(client.sock, selectors.EVENT_READ, client)
        while True:
            for key, _ in selector.select():
                if key.data is None:
                    return
                try:
                    while True:
                        key.data.recv(0.001)
                except WsTimeout:
                    continue
                except WsClientError:  # the server closed it: no longer held
                    selector.unregister(key.fileobj)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[1].isdigit():
        print("usage: live_holders.py WS_URL COUNT TASK_ID", file=sys.stderr)
        return 2
    url, count, task_id = argv[0], int(argv[1]), argv[2]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < count + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 256), hard))
    clients: list[WsClient] = []
    try:
        for index in range(count):
            client = connect(url, timeout=TIMEOUT_S)
            clients.append(client)
            subscribe(client, index, task_id)
        print(f"held {len(clients)}", flush=True)
        hold(clients)
    except (OSError, WsClientError, ValueError) as exc:
        print(f"live_holders: connection {len(clients)} of {count}: {exc}", file=sys.stderr)
        return 1
    finally:
        for client in clients:
            client.sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
