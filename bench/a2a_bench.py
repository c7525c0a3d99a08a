"""Blocking SendMessage round trips per second: mcp-agent-kit's A2A server vs the a2a-sdk 1.3.0 server.

Both serve the same work (the metrics example's calculate_metrics on a data part, one data artifact,
COMPLETED) over JSON-RPC on loopback, each in its own process; one stdlib keep-alive client per
connection sends identical requests. Prints requests/second for each and the ratio (ours / SDK).

    python bench/a2a_bench.py [--requests 1000] [--connections 1]

Needs `a2a-sdk[http-server]==1.3.0` and uvicorn for the SDK side (test extras).
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ARGS = {"values": [3, 1, 4, 1, 5, 9, 2, 6], "metric_type": "mean"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---- the SDK server (runs in a child process) -----------------------------------------------------
def sdk_server(port: int) -> None:
    import uvicorn
    from a2a.helpers import new_data_part, new_task
    from a2a.server.agent_execution.agent_executor import AgentExecutor
    from a2a.server.agent_execution.context import RequestContext
    from a2a.server.events.event_queue import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
    from a2a.server.tasks.task_updater import TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState
    from google.protobuf.json_format import MessageToDict
    from starlette.applications import Starlette

    sys.path.insert(0, str(ROOT / "examples"))
    from metrics_server import calculate_metrics

    class MetricsExecutor(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            assert context.message is not None and context.task_id and context.context_id
            data = MessageToDict(context.message.parts[0])["data"]
            result = calculate_metrics(**data["arguments"])
            await event_queue.enqueue_event(
                new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[context.message])
            )
            updater = TaskUpdater(event_queue=event_queue, task_id=context.task_id, context_id=context.context_id)
            await updater.start_work()
            await updater.add_artifact(parts=[new_data_part(result)], name="calculate_metrics")
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            updater = TaskUpdater(
                event_queue=event_queue, task_id=context.task_id or "", context_id=context.context_id or ""
            )
            await updater.cancel()

    card = AgentCard(
        name="metrics",
        description="metrics (a2a-sdk)",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="calculate_metrics", name="calculate_metrics", description="metrics", tags=["mcp-tool"])],
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=f"http://127.0.0.1:{port}/a2a")
        ],
    )
    handler = DefaultRequestHandler(agent_executor=MetricsExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = [
        *create_jsonrpc_routes(request_handler=handler, rpc_url="/a2a"),
        *create_agent_card_routes(agent_card=card),
    ]
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")


# ---- the client -----------------------------------------------------------------------------------------
def wait_ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server on port {port} exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/.well-known/agent-card.json")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"server on port {port} never answered")


def body() -> bytes:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"data": {"skill": "calculate_metrics", "arguments": ARGS}}],
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": "SendMessage", "params": {"message": message}}
    ).encode()


HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def one_connection(port: int, count: int, failures: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(count):
        conn.request("POST", "/a2a", body=body(), headers=HEADERS)
        reply: dict[str, Any] = json.loads(conn.getresponse().read())
        task = reply.get("result", {}).get("task", {})
        if (
            task.get("status", {}).get("state") != "TASK_STATE_COMPLETED"
            or task["artifacts"][0]["parts"][0]["data"]["value"] != 3.875
        ):
            failures.append(json.dumps(reply)[:200])
    conn.close()


def measure(port: int, requests: int, connections: int) -> float:
    failures: list[str] = []
    one_connection(port, 50, failures)  # warm-up
    per = max(1, requests // connections)
    threads = [threading.Thread(target=one_connection, args=(port, per, failures)) for _ in range(connections)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise SystemExit(f"wrong replies from port {port}: {failures[0]}")
    return per * connections / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--sdk-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sdk_server:
        sdk_server(args.sdk_server)
        return 0
    ours_port, sdk_port = free_port(), free_port()
    ours = subprocess.Popen(
        [sys.executable, "-m", "mcp_agent_kit", "a2a", "examples/metrics_server.py:server", "--port", str(ours_port)],
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    sdk = subprocess.Popen([sys.executable, __file__, "--sdk-server", str(sdk_port)], cwd=ROOT)
    try:
        wait_ready(ours_port, ours)
        wait_ready(sdk_port, sdk)
        results = {}
        for name, port in (("mcp-agent-kit", ours_port), ("a2a-sdk 1.3.0", sdk_port)):
            results[name] = measure(port, args.requests, args.connections)
            print(
                f"{name:>15}: {results[name]:8.0f} SendMessage/s  ({args.requests} requests, {args.connections} conn)"
            )
        ratio = results["mcp-agent-kit"] / results["a2a-sdk 1.3.0"]
        print(f"{'ratio':>15}: {ratio:8.2f}x  (target >= 2x)")
    finally:
        for proc in (ours, sdk):
            proc.terminate()
            proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
