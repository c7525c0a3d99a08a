"""docs/acp.md "## Writing an ACP agent" stays true: its sample agent runs as a real stdio subprocess and
the wire transcript of one turn replays against it line by line (blocks captioned "client → agent" are
sent, blocks captioned "agent → client" must come back; the random sessionId and messageId are matched
by position, not value); its socket-server sample ("### Several clients at once") serves two clients at
once. The samples are fenced ```py so the client section's own sample test (tests/acp/test_docs_acp.py,
which takes every ```python block of the file) does not pick them up."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
RANDOM_KEYS = ("sessionId", "messageId")
DIRECTIONS = {"client → agent": "→", "agent → client": "←"}


def section() -> str:
    text = (ROOT / "docs" / "acp.md").read_text(encoding="utf-8")
    start = text.index("## Writing an ACP agent")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def fenced(text: str) -> list[tuple[str, str, str]]:
    """(language, body, caption: the nearest non-blank line above) per fenced block."""
    found = []
    for match in FENCE.finditer(text):
        above = [line for line in text[: match.start()].splitlines() if line.strip()]
        found.append((match.group(1), match.group(2).strip("\n"), above[-1].strip() if above else ""))
    return found


class Names:
    """Random ids in the docs ↔ the ones the agent chose, learnt in order."""

    def __init__(self) -> None:
        self.real: dict[str, str] = {}

    def match(self, documented: Any, got: Any, where: str = "") -> None:
        if isinstance(documented, dict) and isinstance(got, dict):
            assert documented.keys() == got.keys(), f"{where}: keys {sorted(documented)} != {sorted(got)}"
            for key in documented:
                if key in RANDOM_KEYS and isinstance(documented[key], str):
                    assert self.real.setdefault(documented[key], got[key]) == got[key], f"{where}.{key}"
                else:
                    self.match(documented[key], got[key], f"{where}.{key}")
        elif isinstance(documented, list) and isinstance(got, list):
            assert len(documented) == len(got), f"{where}: {documented} != {got}"
            for n, (a, b) in enumerate(zip(documented, got, strict=True)):
                self.match(a, b, f"{where}[{n}]")
        else:
            assert documented == got, f"{where}: documented {documented!r}, got {got!r}"

    def fill(self, text: str) -> str:
        for documented, real in self.real.items():
            text = text.replace(documented, real)
        return text


def test_the_agent_sample_runs_and_its_transcript_replays(tmp_path: Path) -> None:
    blocks = fenced(section())
    samples = [body for lang, body, _ in blocks if lang in ("py", "python")]
    steps = [(DIRECTIONS[caption], body) for lang, body, caption in blocks if lang == "json" and caption in DIRECTIONS]
    assert samples and len(steps) >= 10, "the section lost its sample or its transcript"
    script = tmp_path / "shout.py"
    script.write_text(samples[0] + "\n", encoding="utf-8")
    process = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines: queue.Queue[bytes] = queue.Queue()
    assert process.stdin is not None and process.stdout is not None
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or []], daemon=True).start()
    names = Names()
    try:
        for number, (direction, body) in enumerate(steps):
            json.loads(body)  # every block is JSON
            if direction == "→":
                process.stdin.write(names.fill(body).encode() + b"\n")
                process.stdin.flush()
                continue
            try:
                got = json.loads(lines.get(timeout=20))
            except queue.Empty:
                pytest.fail(f"step {number}: the agent sent nothing where the docs show {body[:80]}")
            names.match(json.loads(body), got, f"step {number}")
        process.stdin.close()
        assert process.wait(20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)


def test_the_several_clients_sample_serves_two_clients_at_once() -> None:
    """The socket-server sample of "### Several clients at once", on a free port, with two raw clients
    whose prompts are in flight together: each gets its own session's echo and nothing else."""
    import socket
    import socketserver

    (sample,) = [body for lang, body, _ in fenced(section()) if lang == "py" and "socketserver" in body]
    namespace: dict[str, Any] = {"__name__": "docs_several_clients"}
    exec(compile(sample, "docs/acp.md", "exec"), namespace)
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), namespace["OneClient"])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    clients = [socket.create_connection(server.server_address[:2], timeout=20) for _ in range(2)]
    streams = [client.makefile("rwb") for client in clients]
    try:

        def call(stream: Any, message: dict[str, Any]) -> None:
            stream.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
            stream.flush()

        sids = []
        for stream in streams:
            call(stream, {"id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
            call(stream, {"id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}})
            assert json.loads(stream.readline())["id"] == 0
            sids.append(json.loads(stream.readline())["result"]["sessionId"])
        for n, (stream, sid) in enumerate(zip(streams, sids, strict=True)):
            call(stream, {"id": 2, "method": "session/prompt",
                          "params": {"sessionId": sid, "prompt": [{"type": "text", "text": f"client {n}"}]}})
        for n, (stream, sid) in enumerate(zip(streams, sids, strict=True)):
            update = json.loads(stream.readline())["params"]
            assert update["sessionId"] == sid and update["update"]["content"]["text"] == f"client {n}"
            assert json.loads(stream.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
    finally:
        for stream, client in zip(streams, clients, strict=True):
            stream.close()
            client.close()  # the agent sees the end of input: its serve returns
        server.shutdown()
        server.server_close()
