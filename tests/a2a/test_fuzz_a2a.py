"""Fuzz the A2A server with ~4,000 hostile requests over raw sockets (JSON-RPC, HTTP+JSON, the card):
no 5xx, no hung connection, every JSON-RPC body answers the request's id (refusals before parsing
may carry a null id), every REST error is an AIP-193 body, and at the end no worker is left behind
and the agent still completes a task.

Seeded and reproducible: the seed alone fixes the stream (FUZZ_SEED=<n> replays another one; a
failure prints the seed). Task ids the server invents fill slots the seed chose, and drawing them
consumes the same randomness whatever the server said, so the server's answers never shift the
rest of the stream. Subscriptions only target finished or unknown tasks: a subscription to an
interrupted task is an open stream by design.
"""

from __future__ import annotations

import json
import random
import threading
import urllib.parse
from collections import Counter
from typing import Any

import pytest

from mcp_agent_kit.loader import load_target
from tests.a2a.conftest import METRICS, Live, start
from tests.fuzzing import fuzz_seed as seed_from_environment
from tests.http.test_fuzz_http import TIMEOUT, Conn, Pool, Response, http_request, random_json, sse_messages
from tests.net import wait_until

SEED = 20261208


def fuzz_seed() -> int:
    """FUZZ_SEED from the environment, else the fixed default."""
    return seed_from_environment(SEED)


COUNT = 4_000
MAX_BODY = 64 * 1024
TERMINAL = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"})
RPC_METHODS = [
    "SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
    "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "GetExtendedAgentCard",
    "message/send", "tasks/get", "", "Nope",
]
ROLES = ["ROLE_USER", "ROLE_USER", "ROLE_USER", 1, "user", "USER", "ROLE_AGENT", 2, 0, None, "ROLE_UNSPECIFIED"]


class Tasks:
    """What the fuzz has learned about task ids: known ids, and which of them are finished."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}

    def learn(self, value: Any) -> None:
        if isinstance(value, dict):
            task = value.get("task") if isinstance(value.get("task"), dict) else value
            if isinstance(task.get("id"), str) and isinstance(task.get("status"), dict):
                self.states[task["id"]] = str(task["status"].get("state"))
            for item in value.values():
                if isinstance(item, dict | list):
                    self.learn(item)
        elif isinstance(value, list):
            for item in value:
                self.learn(item)

    def pick(self, rng: random.Random, finished: bool) -> str:
        """A known id or a made-up one; always three draws, however many ids are known."""
        unknown, where = rng.random(), rng.random()
        made_up = ["missing-task", "", "a/b", "x" * 300][rng.randrange(4)]
        ids = sorted(key for key, state in self.states.items() if not finished or state in TERMINAL)
        if not ids or unknown < 0.2:
            return made_up
        return ids[int(where * len(ids))]


def part(rng: random.Random) -> Any:
    call = {"skill": "calculate_metrics", "arguments": {"values": [1, 2.5, rng.randrange(9)],
                                                        "metric_type": rng.choice(["mean", "max", "nope"])}}
    return rng.choices([
        {"data": call},
        {"data": {"skill": "calculate_metrics", "arguments": {}}},  # missing values: INPUT_REQUIRED
        {"text": json.dumps(call["arguments"])},
        {"text": "hello"},
        {"kind": "text", "text": "v0.3 shape"},
        {"file": {"uri": "https://example.com/x"}},
        {"raw": "aGVsbG8=", "mediaType": "text/plain"},
        {"raw": "not base64!"},
        {"url": "https://example.com/x", "media_type": "image/png"},
        {"text": "a", "data": {}},
        {},
        {"data": call, "mediaType": "application/x-unknown"},
        {"text": "x" * rng.randrange(MAX_BODY // 2, MAX_BODY - 2048)},
        random_json(rng),
    ], [30, 8, 6, 4, 3, 3, 3, 2, 2, 2, 2, 2, 1, 4])[0]


def message(rng: random.Random, tasks: Tasks) -> dict[str, Any]:
    msg: dict[str, Any] = {"messageId": f"m{rng.randrange(10**9)}", "role": rng.choice(ROLES),
                           "parts": [part(rng) for _ in range(rng.choice([1, 1, 1, 2, 0]))]}
    if rng.random() < 0.15:
        msg["taskId"] = tasks.pick(rng, finished=False)
    if rng.random() < 0.05:
        msg["contextId"] = rng.choice(["ctx", 7, None])
    if rng.random() < 0.1:
        msg = {("message_id" if key == "messageId" else key): value for key, value in msg.items()}
    return msg


def params_for(rng: random.Random, method: str, tasks: Tasks) -> dict[str, Any]:
    if method in ("SendMessage", "SendStreamingMessage", "message/send"):
        params: dict[str, Any] = {"message": message(rng, tasks)}
        if rng.random() < 0.3:
            params["configuration"] = rng.choice([{"returnImmediately": True}, {"historyLength": 1},
                                                  {"historyLength": -1}, {"return_immediately": "yes"}, []])
        return params
    if method == "SubscribeToTask":
        return {"id": tasks.pick(rng, finished=True)}
    if method in ("GetTask", "CancelTask", "tasks/get"):
        return {"id": tasks.pick(rng, finished=False), "historyLength": rng.choice([None, 0, 2, "x"])}
    if method == "ListTasks":
        return rng.choice([{}, {"pageSize": 2}, {"pageSize": -1}, {"status": "TASK_STATE_COMPLETED"},
                           {"status": "completed"}, {"status": {}}, {"status": []},
                           {"pageToken": "junk"}, {"statusTimestampAfter": "yesterday"}])
    return {"id": tasks.pick(rng, finished=False)}


def mutate(rng: random.Random, value: dict[str, Any]) -> Any:
    clone = json.loads(json.dumps(value))
    choice = rng.randrange(8)
    if choice == 0:
        del clone[rng.choice(list(clone))]
    elif choice == 1:
        clone[rng.choice(list(clone))] = random_json(rng)
    elif choice == 2 and isinstance(clone.get("params"), dict) and clone["params"]:
        clone["params"][rng.choice(list(clone["params"]))] = random_json(rng)
    elif choice == 3:
        return [clone]
    elif choice == 4:
        clone.pop("method", None)
        clone["result"] = {}
    elif choice == 5:
        clone.pop("id")
    elif choice == 6:
        clone["id"] = rng.choice([None, True, 1.5, [], "", 2**70])
    else:
        depth = rng.choice([100, 3000])
        return "DEEP" + "[" * depth + "]" * depth
    return clone


def body_bytes(rng: random.Random, value: Any) -> tuple[bytes, Any]:
    """The body to send, and the JSON value it still denotes (None when it is no longer JSON)."""
    if isinstance(value, str) and value.startswith("DEEP"):
        return value[4:].encode(), None
    body = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()
    if rng.random() < 0.03 and b'"' in body:  # invalid UTF-8 inside a string
        at = body.index(b'"') + 1
        return body[:at] + b"\xc3\x28" + body[at:], None
    return body, value


def headers_for(rng: random.Random, port: int, body: bool) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    host = rng.choices([f"127.0.0.1:{port}", "localhost", "evil.example.com", None], [92, 4, 2, 2])[0]
    if host is not None:
        headers.append(("Host", host))
    version = rng.choices(["1.0", None, "1", "0.3", "", "1.0.1", "2.0", "v1"], [80, 6, 3, 3, 2, 2, 2, 2])[0]
    if version is not None:
        headers.append(("A2A-Version", version))
    if body:
        ctype = rng.choices(["application/json", "application/a2a+json", "application/json; charset=utf-8",
                             None, "text/plain", "multipart/form-data"], [80, 6, 4, 4, 3, 3])[0]
        if ctype is not None:
            headers.append(("Content-Type", ctype))
    extra = rng.randrange(40)
    if extra == 0:
        headers.append(("Authorization", "Bearer nope"))
    elif extra == 1:
        headers.append(("Connection", "close"))
    elif extra == 2:
        headers.append(("Expect", "100-continue"))
    elif extra == 3:
        headers.append(("Accept", "text/html"))
    return headers


def rest_request(rng: random.Random, port: int, tasks: Tasks) -> tuple[str, str, Any]:
    """(verb, path, JSON body or None)."""
    task = tasks.pick(rng, finished=False)
    done = tasks.pick(rng, finished=True)
    verb, path, body = rng.choices([
        ("POST", "/a2a/rest/message:send", "message"),
        ("POST", "/a2a/rest/message:stream", "message"),
        ("GET", "/a2a/rest/tasks", None),
        ("GET", f"/a2a/rest/tasks?pageSize={rng.choice(['2', 'x', '-1'])}&historyLength=1", None),
        ("GET", f"/a2a/rest/tasks/{task}", None),
        ("POST", f"/a2a/rest/tasks/{task}:cancel", {}),
        ("POST", f"/a2a/rest/tasks/{done}:subscribe", None),
        ("GET", f"/a2a/rest/tasks/{done}:subscribe", None),
        ("POST", f"/a2a/rest/tasks/{task}/pushNotificationConfigs", {"url": "https://example.com"}),
        ("DELETE", f"/a2a/rest/tasks/{task}/pushNotificationConfigs/x", None),
        ("GET", "/a2a/rest/extendedAgentCard", None),
        ("DELETE", "/a2a/rest/tasks", None),
        ("GET", "/a2a/rest/nope", None),
        ("GET", "/.well-known/agent-card.json", None),
        ("HEAD", "/.well-known/agent.json", None),
        ("GET", "/elsewhere", None),
        ("PUT", "/a2a/rest/tasks", {}),
    ], [20, 8, 4, 2, 6, 3, 2, 2, 1, 1, 1, 1, 1, 3, 1, 1, 1])[0]
    if body == "message":
        body = params_for(rng, "SendMessage", tasks)
    if body is not None and rng.random() < 0.2:
        body = random_json(rng)
    return verb, path, body


def check_rpc(value: Any, response: Response, seen: Counter[str]) -> list[str]:
    problems: list[str] = []
    if response.status != 200 and response.status not in (400, 401, 413):
        problems.append(f"JSON-RPC status {response.status}")
    ctype = response.headers.get("content-type", "").split(";")[0].strip()
    if ctype == "text/event-stream":
        seen["sse"] += 1
        messages = sse_messages(response.body)
        if not messages:
            problems.append("empty event stream")
    elif ctype == "application/json":
        messages = [json.loads(response.body)]
    else:
        return [f"JSON-RPC reply as {ctype!r}"]
    want = value.get("id") if isinstance(value, dict) else None
    want = want if isinstance(want, str | int) and not isinstance(want, bool) else None
    for reply in messages:
        if not isinstance(reply, dict) or reply.get("jsonrpc") != "2.0" or ("result" in reply) == ("error" in reply):
            problems.append(f"not one JSON-RPC reply: {reply!r:.200}")
            continue
        if "error" in reply and reply["error"].get("code") == -32603:
            problems.append(f"internal error: {reply!r:.300}")
        got = reply.get("id")
        if got == want and want is not None:
            seen["id echoed"] += 1
        elif got is not None or (want is not None and "error" not in reply):
            problems.append(f"reply id {got!r} for request id {want!r}")
        elif want is not None and response.status == 200 and ctype == "application/json":
            code = reply["error"].get("code")
            if code not in (-32005,):  # Content-Type refused before the body is read as JSON
                problems.append(f"reply without the id {want!r}: {reply!r:.200}")
    return problems


def check_rest(response: Response, seen: Counter[str]) -> list[str]:
    status = response.status
    if status >= 500:
        return [f"status {status}: {response.body[:300]!r}"]
    ctype = response.headers.get("content-type", "").split(";")[0].strip()
    if ctype == "text/event-stream":
        seen["sse"] += 1
        return [] if sse_messages(response.body) or status != 200 else ["empty event stream"]
    if ctype != "application/json" or not response.body:
        return [] if status in (304, 400) or not response.body else [f"{status} as {ctype!r}"]
    value = json.loads(response.body)
    if status >= 400:
        error = value.get("error") if isinstance(value, dict) else None
        if not isinstance(error, dict) or error.get("code") != status or "status" not in error:
            return [f"{status} without an AIP-193 error: {value!r:.200}"]
    return []


def build(rng: random.Random, n: int, port: int, tasks: Tasks) -> tuple[bytes, Any, bool, bool, int | None]:
    """Request #n: (raw HTTP bytes, the JSON value it denotes or None, JSON-RPC?, HEAD?, pool slot)."""
    slot = None if n % 10 == 9 else n % 4
    kind = n % 6
    rpc = kind < 4
    value: Any = None
    head = False
    if kind == 0:
        raw_body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        verb, path = "POST", "/a2a"
    elif rpc:
        method = rng.choice(RPC_METHODS)
        id_: Any = f"a{n}" if n % 3 else n
        value = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params_for(rng, method, tasks)}
        if kind == 3:
            value = mutate(rng, value) if rng.random() < 0.8 else random_json(rng)
        raw_body, value = body_bytes(rng, value)
        verb, path = "POST", rng.choices(["/a2a", "/a2a/", "/", "/a2a?A2A-Version=1.0"], [85, 5, 5, 5])[0]
    else:
        verb, path, value = rest_request(rng, port, tasks)
        raw_body, value = body_bytes(rng, value) if value is not None else (b"", None)
        head = verb == "HEAD"
    sends_body = verb in ("POST", "PUT") or bool(raw_body)
    raw = http_request(verb, path, headers_for(rng, port, sends_body), raw_body if sends_body else None)
    return raw, value, rpc, head, slot


def test_fuzz_a2a_never_fails_never_hangs_and_answers_each_id() -> None:
    baseline = threading.active_count()
    server = start(load_target(METRICS), max_body=MAX_BODY)
    port = server.server_address[1]
    seed = fuzz_seed()
    rng = random.Random(seed)
    pool = Pool(port)
    tasks = Tasks()
    seen: Counter[str] = Counter()
    failures: list[str] = []
    try:
        for n in range(COUNT):
            raw, value, rpc, head, slot = build(rng, n, port, tasks)
            try:
                response = pool.exchange(raw, slot, head)
            except TimeoutError:
                raise AssertionError(f"FUZZ_SEED={seed} #{n}: no reply within {TIMEOUT}s to {raw[:300]!r}") from None
            seen[str(response.status)] += 1
            if response.headers.get("content-type", "").startswith("application/json") and response.body:
                tasks.learn(json.loads(response.body))
            elif response.headers.get("content-type", "").startswith("text/event-stream"):
                tasks.learn(sse_messages(response.body))
            problems = check_rpc(value, response, seen) if rpc else check_rest(response, seen)
            failures.extend(f"#{n} {problem}; request {raw[:300]!r}" for problem in problems)
            if len(failures) > 20:
                break
        assert not failures, f"FUZZ_SEED={seed} replays this stream:\n" + "\n".join(failures)
        final = json.dumps({"jsonrpc": "2.0", "id": "last", "method": "SendMessage", "params": {"message": {
            "messageId": "last", "role": "ROLE_USER",
            "parts": [{"data": {"skill": "calculate_metrics", "arguments": {"values": [1, 2]}}}]}}}).encode()
        headers = [("Host", "127.0.0.1"), ("A2A-Version", "1.0"), ("Content-Type", "application/json")]
        reply = json.loads(pool.exchange(http_request("POST", "/a2a", headers, final), None).body)
        assert reply["id"] == "last" and reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        pool.close()
        server.shutdown()
        server.server_close()
    # every connection thread and task worker ends once the clients are gone
    # (bounded generously: on a loaded 2-core box the last task workers can take a while to be scheduled)
    assert wait_until(lambda: threading.active_count() <= baseline + 1, 60.0), (seed, threading.enumerate())
    assert seen["200"] > COUNT // 5 and seen["sse"] > 20 and seen["id echoed"] > COUNT // 5, (seed, seen)
    assert len(tasks.states) > 50, (seed, len(tasks.states))


def stream(seed: int, tasks: Tasks, count: int = 600) -> tuple[list[bytes], object]:
    rng = random.Random(seed)
    return [build(rng, n, 4242, tasks)[0] for n in range(count)], rng.getstate()


def test_the_same_seed_sends_the_same_stream_whatever_the_server_answers() -> None:
    first, state = stream(SEED, Tasks())
    assert stream(SEED, Tasks()) == (first, state)
    other, other_state = stream(SEED + 1, Tasks())
    assert other != first and other_state != state
    known = Tasks()  # a server that has made tasks: ids differ, but the draws do not shift
    known.states = {f"task-{i}": "TASK_STATE_COMPLETED" if i % 2 else "TASK_STATE_WORKING" for i in range(37)}
    filled, filled_state = stream(SEED, known)
    assert filled_state == state and len(filled) == len(first)
    assert filled != first  # the known ids were used
    assert sum(a == b for a, b in zip(first, filled, strict=True)) > len(first) // 2  # most requests name no task


def test_fuzz_seed_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUZZ_SEED", "7")
    assert fuzz_seed() == 7
    monkeypatch.delenv("FUZZ_SEED")
    assert fuzz_seed() == SEED


# ---- regressions found by the fuzz test ----------------------------------------------------------------
@pytest.mark.parametrize("status", [{}, [], ["TASK_STATE_COMPLETED"], {"state": "x"}, 1.5, True, "nope"])
def test_list_tasks_with_a_status_of_the_wrong_type_is_invalid_params(status: Any) -> None:
    server = start(load_target(METRICS))
    try:
        live = Live(server)
        reply = live.rpc("ListTasks", {"status": status})
        assert "result" not in reply, reply
        assert reply["error"]["code"] == -32602, reply
        code, _, body = live.request("GET", "/a2a/rest/tasks?status=" + urllib.parse.quote(json.dumps(status)))
        assert code == 400 and json.loads(body)["error"]["code"] == 400, body
    finally:
        server.shutdown()
        server.server_close()


def test_put_and_patch_get_a_json_405_and_its_code_matches_the_status() -> None:
    server = start(load_target(METRICS))
    port = server.server_address[1]
    pool = Pool(port, size=1)
    try:
        for verb in ("PUT", "PATCH", "DELETE"):
            raw = http_request(verb, "/a2a/rest/tasks", [("Host", "127.0.0.1"), ("A2A-Version", "1.0"),
                                                        ("Content-Type", "application/json")], b"{}")
            response = pool.exchange(raw, 0)
            assert response.status == 405, (verb, response)
            assert json.loads(response.body)["error"]["code"] == 405
    finally:
        pool.close()
        server.shutdown()
        server.server_close()


def test_a_get_body_is_not_served_as_a_second_request() -> None:
    server = start(load_target(METRICS))
    conn = Conn(server.server_address[1])
    try:
        headers = [("Host", "127.0.0.1"), ("A2A-Version", "1.0")]
        inner = http_request("GET", "/a2a/rest/tasks", headers, None)
        for verb in ("GET", "DELETE"):
            conn.sock.sendall(http_request(verb, "/a2a/rest/tasks", headers, inner))
            first = conn.read_response()
            assert first is not None and first.status in (200, 405)
            assert conn.read_response() is None, f"{verb}: its body was served as a second request"
            conn.close()
            conn = Conn(server.server_address[1])
    finally:
        conn.close()
        server.shutdown()
        server.server_close()
