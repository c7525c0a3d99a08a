"""A misbehaving stdio "server" for probe tests: `python fake_peer.py MODE`.

Modes: silent (reads, never answers), exit-first (exits on any request before initialize, but
answers initialize like a legacy server, then tools/list and tools/call), garbage (answers
every line with text that is not JSON-RPC), legacy-error (answers server/discover with -32601
like a stateless legacy server, then speaks 2025-06-18).
"""

import json
import sys

TOOLS = [{"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def legacy(message: dict) -> None:
    method, id_ = message.get("method"), message.get("id")
    if id_ is None:
        return
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": id_,
                "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake", "version": "0"},
                },
            }
        )
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        text = message["params"]["arguments"]["text"]
        send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "Method not found"}})


def main(mode: str) -> None:
    first = True
    for line in sys.stdin:
        message = json.loads(line)
        if mode == "silent":
            continue
        if mode == "garbage":
            sys.stdout.write("Starting up... ready!\n")
            sys.stdout.flush()
            continue
        if mode == "exit-first" and first and message.get("method") != "initialize":
            sys.exit(3)
        if mode == "legacy-error" and message.get("method") == "server/discover":
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}})
            continue
        first = False
        legacy(message)


if __name__ == "__main__":
    main(sys.argv[1])
