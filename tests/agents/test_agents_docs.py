"""docs/agents-as-tools.md stays true: its curl walk-through is replayed against a live gateway.

Each ```bash block holding `curl ... -d '{...}'` is sent as written (the `'"$VAR"'` splices filled
from earlier replies, as a shell would); the ```json block after it must match the real reply,
where a string written `<...>` stands for any value (ids, times). The config block is the config used.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agents.conftest import GatewayRun
from tests.test_docs import blocks

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents-as-tools.md"
SPLICE = re.compile(r"'\"\$(\w+)\"'")
# variable -> where its value is in which reply (by the step that sets it)
SETS: dict[str, Callable[[dict[str, Any]], str]] = {
    "SESSION_ID": lambda r: r["result"]["structuredContent"]["session_id"],
    "TASK_ID": lambda r: r["result"]["taskId"],
    "INPUT_REQUEST_ID": lambda r: next(iter(r["result"]["inputRequests"])),
    "HEAD_TASK_ID": lambda r: r["result"]["result"]["structuredContent"]["task_id"],
    "CHECKPOINT_ID": lambda r: r["result"]["structuredContent"]["checkpoint"]["id"],
    "FORK_ID": lambda r: r["result"]["structuredContent"]["session"]["id"],
}


def matches(documented: Any, real: Any, path: str = "$") -> list[str]:
    if isinstance(documented, str) and documented.startswith("<") and documented.endswith(">"):
        return [] if real is not None else [f"{path}: missing"]
    if isinstance(documented, dict) and isinstance(real, dict):
        if len(documented) == len(real) == 1 and next(iter(documented)).startswith("<"):  # a key that is an id
            return matches(next(iter(documented.values())), next(iter(real.values())), f"{path}.<key>")
        problems = [f"{path}: keys {sorted(documented)} != {sorted(real)}"] if set(documented) != set(real) else []
        return problems + [p for key in documented if key in real for p in matches(documented[key], real[key],
                                                                                     f"{path}.{key}")]
    if isinstance(documented, list) and isinstance(real, list) and len(documented) == len(real):
        return [p for n, (d, r) in enumerate(zip(documented, real, strict=True)) for p in matches(d, r, f"{path}[{n}]")]
    return [] if documented == real else [f"{path}: documented {documented!r}, got {real!r}"]


def test_the_curl_walk_through_replays(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    found = blocks(DOC.read_text(encoding="utf-8"))
    config = json.loads(next(b.body for b in found if b.lang == "json" and '"agents"' in b.body))
    config["agents"]["kagent/my-first-agent"]["a2a"] = agent_url
    run = gateway_of(config)
    values: dict[str, str] = {}
    steps = 0
    for block, after in itertools.pairwise(found):
        if block.lang != "bash" or "curl" not in block.body or "-d '" not in block.body:
            continue
        payload = SPLICE.sub(lambda m: values[m.group(1)], block.body.split("-d '", 1)[1].rsplit("'", 1)[0])
        request = json.loads(payload)
        reply = run.rpc(request["method"], request["params"], id_=request["id"])
        if request["method"] == "tasks/get":
            reply = _until_settled(run, request, reply)
        assert after.lang == "json", f"no reply shown after {payload[:80]}"
        shown = json.loads(after.body)
        reply = _as_created(shown, reply)
        problems = matches(shown, reply)
        assert not problems, f"{payload[:120]}\nreal reply: {json.dumps(reply, indent=2)}\n" + "\n".join(problems)
        for name, pick in SETS.items():
            if f'"${name}"' not in block.body and f"export {name}=" in _following(found, after):
                values[name] = pick(reply)
        steps += 1
    assert steps >= 10


def _as_created(shown: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """A task-mode call returns the task as it is when the reply is built: the walk-through shows it
    `working`, and a fast agent may already have asked its question (the next tasks/get shows that).
    Either is right; the question itself is checked at the tasks/get step."""
    result, documented = reply.get("result"), shown.get("result")
    if not (isinstance(result, dict) and isinstance(documented, dict) and result.get("resultType") == "task"
            and documented.get("status") == "working" and result.get("status") == "input_required"):
        return reply
    early = {k: v for k, v in result.items() if k != "inputRequests"}
    early.update(status="working", statusMessage=documented.get("statusMessage"))
    return {**reply, "result": early}


def _following(found: list[Any], block: Any) -> str:
    index = found.index(block)
    return found[index + 1].body if index + 1 < len(found) else ""


def _until_settled(run: GatewayRun, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """Poll as a reader would, until the task is no longer working (bounded)."""
    import time

    deadline = time.monotonic() + 20
    while reply.get("result", {}).get("status") == "working" and time.monotonic() < deadline:
        time.sleep(0.05)
        reply = run.rpc(request["method"], request["params"], id_=request["id"])
    return reply
