"""Fuzz the stdio server with >= 10,000 hostile inputs: it never dies, never writes a non-JSON
line, and answers every request id exactly once."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from tests.fuzzing import fuzz_seed, replayable
from tests.fuzzing import random_json as any_json
from tests.stdio_peer import MODERN_META, ROOT


def random_json(rng: random.Random) -> Any:
    return any_json(rng, small_ints=False)  # ids must stay unique: each is answered exactly once

SEED = 20261129
COUNT = 12_000
METHODS = [
    "server/discover", "tools/list", "tools/call", "resources/list", "resources/read",
    "resources/templates/list", "prompts/list", "prompts/get", "completion/complete",
    "initialize", "ping", "nope", "",
]
TOOLS = ["echo", "add", "async_add", "boom", "picture", "with_progress", "ask_name", "missing"]


def valid_request(rng: random.Random, id_: Any) -> dict[str, Any]:
    method = rng.choice(METHODS)
    params: dict[str, Any] = {"_meta": dict(MODERN_META)}
    if method == "tools/call":
        params.update(name=rng.choice(TOOLS), arguments={"text": "hi", "a": 1, "b": 2, "steps": 1})
    elif method in ("resources/read",):
        params["uri"] = rng.choice(["kitchen://menu", "kitchen://items/7", "kitchen://items/missing", "x:"])
    elif method == "prompts/get":
        params.update(name="greet", arguments={"name": "x"})
    elif method == "completion/complete":
        params.update(ref={"type": "ref/prompt", "name": "greet"}, argument={"name": "style", "value": ""})
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def mutate(rng: random.Random, message: dict[str, Any]) -> Any:
    choice = rng.randrange(10)
    clone = json.loads(json.dumps(message))
    if choice == 0:
        del clone[rng.choice(list(clone))]
    elif choice == 1:
        clone[rng.choice(list(clone))] = random_json(rng)
    elif choice == 2:
        clone["params"][rng.choice(list(clone["params"]))] = random_json(rng)
    elif choice == 3:
        meta = clone["params"]["_meta"]
        meta[rng.choice(list(meta))] = random_json(rng)
    elif choice == 4:
        clone["params"]["_meta"] = random_json(rng)
    elif choice == 5:
        clone["params"]["arguments"] = random_json(rng)
    elif choice == 6:
        return [clone]
    elif choice == 7:
        clone["result"] = {}
    elif choice == 8:
        clone.pop("id")  # a notification: must not be answered
    return clone


def build_inputs(seed: int = SEED) -> tuple[list[bytes], set[Any]]:
    rng = random.Random(seed)
    lines: list[bytes] = []
    expected: set[Any] = set()
    for n in range(COUNT):
        kind = n % 4
        id_: Any = f"f{n}" if n % 3 else n + 1_000_000
        if kind == 0:
            raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))).replace(b"\n", b" ")
            lines.append(raw)
            continue
        if kind == 1:
            value = random_json(rng)
            lines.append(json.dumps(value).encode())
            if must_answer(value):
                expected.add(value["id"])
            continue
        message = valid_request(rng, id_) if kind == 2 else mutate(rng, valid_request(rng, id_))
        lines.append(json.dumps(message).encode())
        if must_answer(message):
            expected.add(message["id"])
    return lines, expected


def must_answer(message: Any) -> bool:
    """JSON-RPC: anything with a readable id that is not a response gets exactly one reply."""
    if not isinstance(message, dict):
        return False
    id_ = message.get("id")
    if not isinstance(id_, str | int) or isinstance(id_, bool):
        return False
    is_response = "method" not in message and ("result" in message) != ("error" in message)
    return not is_response


def serve_lines(script: Path, lines: list[bytes]) -> list[dict[str, Any]]:
    """Feed the lines to a stdio server until EOF: it must exit 0 and write only JSON lines."""
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    output: list[bytes] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout or []), daemon=True)
    reader.start()
    assert proc.stdin is not None
    proc.stdin.write(b"".join(line + b"\n" for line in lines))
    proc.stdin.close()
    assert proc.wait(timeout=240) == 0
    reader.join(10)
    return [json.loads(raw) for raw in output]  # every line is JSON


def replies(messages: list[dict[str, Any]]) -> Counter[Any]:
    """How often each id was answered (responses only, not server requests)."""
    return Counter(message["id"] for message in messages if "id" in message and "method" not in message)


def test_fuzz_never_dies_and_answers_each_request_once() -> None:
    seed = fuzz_seed(SEED)
    with replayable(seed):
        modern_stream(seed)


def modern_stream(seed: int) -> None:
    lines, expected = build_inputs(seed)
    assert len(lines) >= 10_000
    last = {"jsonrpc": "2.0", "id": "last", "method": "tools/list", "params": {"_meta": MODERN_META}}
    messages = serve_lines(ROOT / "tests/fixtures/kitchen_server.py", [*lines, json.dumps(last).encode()])
    assert all(message.get("jsonrpc") == "2.0" for message in messages)
    answered = replies(messages)
    assert answered["last"] == 1
    del answered["last"]
    twice = [key for key, count in answered.items() if count > 1]
    assert not twice
    missing = expected - set(answered)
    assert not missing, sorted(map(str, missing))[:10]
    unexpected = set(answered) - expected
    assert not unexpected, sorted(map(str, unexpected))[:10]


# ---- the handshake era, 2025-11-25 tasks included ---------------------------------------------------
LEGACY_COUNT = 4_000
LEGACY_METHODS = [
    "tools/list", "tools/call", "tools/call", "tools/call", "tasks/get", "tasks/result", "tasks/list",
    "tasks/cancel", "resources/list",
    "resources/read", "prompts/list", "ping", "logging/setLevel", "resources/subscribe", "initialize", "nope",
]
LEGACY_TOOLS = ["greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input",
                "test_tool_with_task", "test_simple_text", "missing"]


LEGACY_ARGUMENTS = {"greet": {"name": "x"}, "slow_compute": {"seconds": 0.01}, "confirm_delete": {"filename": "f"}}


def legacy_request(rng: random.Random, id_: Any) -> dict[str, Any]:
    method = rng.choice(LEGACY_METHODS)
    params: dict[str, Any] = {}
    if method == "tools/call":
        name = rng.choice(LEGACY_TOOLS)
        params.update(name=name, arguments=LEGACY_ARGUMENTS.get(name, {}))
        if rng.random() < 0.6:
            params["task"] = rng.choice([{"ttl": 5000}, {}, {"ttl": -1}, {"ttl": "soon"}, None, [], {"ttl": 10**12}])
    elif method.startswith("tasks/") and method != "tasks/list":
        params["taskId"] = rng.choice(["nope", "", 7, None, "00000000-0000-0000-0000-000000000000"])
    elif method == "tasks/list":
        params["cursor"] = rng.choice([None, "bogus", 3, "dGFza3M6MA=="])
    elif method == "resources/read":
        params["uri"] = rng.choice(["test://static-text", "x:"])
    elif method == "logging/setLevel":
        params["level"] = rng.choice(["info", "loud"])
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def test_fuzz_a_legacy_session_never_dies_and_answers_each_request_once() -> None:
    seed = fuzz_seed(SEED + 1)
    with replayable(seed):
        legacy_stream(seed)


def legacy_stream(seed: int) -> None:
    rng = random.Random(seed)
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "f", "version": "0"}}
    init = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": hello}
    lines = [json.dumps(init).encode(), b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
    expected: set[Any] = set()
    for n in range(LEGACY_COUNT):
        id_: Any = f"l{n}"
        kind = n % 4
        if kind == 0:
            lines.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60))).replace(b"\n", b" "))
            continue
        message: Any = legacy_request(rng, id_) if kind in (1, 2) else mutate_legacy(rng, legacy_request(rng, id_))
        lines.append(json.dumps(message).encode())
        if must_answer(message):
            expected.add(message["id"])
    messages = serve_lines(ROOT / "examples/everything_server.py", lines)
    answered = replies(messages)
    created = sum(
        isinstance(message.get("result"), dict) and "task" in message["result"]
        for message in messages if "id" in message and "method" not in message
    )
    assert created > 20, created  # the fuzz really made tasks
    assert answered.pop("init") == 1
    assert not [key for key, count in answered.items() if count > 1]
    assert set(answered) == expected


def mutate_legacy(rng: random.Random, message: dict[str, Any]) -> Any:
    clone = json.loads(json.dumps(message))
    choice = rng.randrange(5)
    if choice == 0:
        clone["params"] = random_json(rng)
    elif choice == 1:
        clone["params"]["_meta"] = dict(MODERN_META)  # an envelope on a handshake-era connection
    elif choice == 2:
        clone["params"][rng.choice(["task", "taskId", "name", "arguments"])] = random_json(rng)
    elif choice == 3:
        clone.pop("id")
    else:
        clone["id"] = rng.choice([True, 1.5, None, [], {"n": 1}])  # unreadable: the error carries no id
    return clone
