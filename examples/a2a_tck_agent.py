"""A fixture agent for the A2A conformance kit (a2a-tck, branch 1.0-dev), on the same server as any agent.

The behaviour is chosen by the message's `messageId` prefix (longest prefix first); follow-up messages
reuse the prefixes on an existing task. Anything else goes to the `echo` tool when a data part names it,
or completes with the text it was sent.

Run: `python examples/a2a_tck_agent.py --port 9999` (or `--http 127.0.0.1:9999`, or
`python -m mcp_agent_kit a2a examples/a2a_tck_agent.py:agent --port 9999`), then point the kit
at http://127.0.0.1:9999.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable
from typing import Any

from mcp_agent_kit import Server
from mcp_agent_kit.a2a import Agent, Job
from mcp_agent_kit.a2a.engine import Work
from mcp_agent_kit.a2a.protocol import REJECTED
from mcp_agent_kit.a2a.toolagent import ToolAgent

tools = Server("tck-tools", "1.0.0")


@tools.tool
def echo(text: str) -> str:
    """Return the text it is given."""
    return text


FILE = {
    "raw": base64.b64encode(b"tck").decode(),
    "filename": "output.txt",
    "mediaType": "text/plain",
}


def _complete(text: str | None = None) -> Callable[[Job], None]:
    return lambda job: job.complete(text)


def _artifact(*parts: dict[str, Any]) -> Callable[[Job], None]:
    def run(job: Job) -> None:
        job.artifact(list(parts), name="result")
        job.complete()

    return run


def _streamed(*parts: dict[str, Any]) -> Callable[[Job], None]:
    def run(job: Job) -> None:
        job.working()
        job.artifact(list(parts), name="result")
        job.complete()

    return run


def _chunked(job: Job) -> None:
    job.working()
    artifact_id = job.artifact([{"text": "chunk-1 "}], name="chunked")
    job.artifact([{"text": "chunk-2"}], artifact_id=artifact_id, append=True, last_chunk=True)
    job.complete()


def _slow(job: Job) -> None:
    job.working()
    if not job.cancel.wait(4.0):
        job.complete("Done after a while")


def _steps(job: Job) -> None:
    """Work for a while, then five artifact updates 0.2 s apart (a stream to follow from another replica)."""
    job.working("starting")
    if job.cancel.wait(1.0):
        return
    artifact_id = None
    for step in range(1, 6):
        artifact_id = job.artifact([{"text": f"step {step}"}], name="steps", artifact_id=artifact_id,
                                   append=step > 1, last_chunk=step == 5)
        if job.cancel.wait(0.2):
            return
    job.complete("five steps done")


BEHAVIOURS: dict[str, Callable[[Job], None]] = {
    "tck-complete-task": _complete("Hello from TCK"),
    "tck-artifact-text": _artifact({"text": "Generated text content"}),
    "tck-artifact-file": _artifact(FILE),
    "tck-artifact-file-url": _artifact(
        {"url": "https://example.com/output.txt", "filename": "output.txt", "mediaType": "text/plain"}
    ),
    "tck-artifact-data": _artifact({"data": {"key": "value", "count": 42}, "mediaType": "application/json"}),
    "tck-message-response": lambda job: job.reply("Direct message response"),
    "tck-input-required": lambda job: job.ask("Please provide more input"),
    "tck-reject-task": lambda job: job.status(REJECTED, "Task rejected"),
    "tck-stream-001": _streamed({"text": "Stream content"}),
    "tck-stream-003": _streamed({"text": "Stream content"}),
    "tck-stream-ordering-001": _streamed({"text": "Ordered content"}),
    "tck-stream-002": _complete(),
    "tck-stream-artifact-text": _streamed({"text": "Streamed text content"}),
    "tck-stream-artifact-file": _streamed(FILE),
    "tck-stream-artifact-chunked": _chunked,
    "test-resubscribe-message-id": _slow,
    "steps-": _steps,  # not a TCK case: the scale-out tests follow it from another replica
}
PREFIXES = sorted(BEHAVIOURS, key=len, reverse=True)


class TckAgent(Agent):
    name = "mcp-agent-kit TCK agent"
    description = "Conformance fixture: behaviour chosen by messageId prefix"
    version = "1.0.0"

    def __init__(self) -> None:
        self.tools = ToolAgent(tools)

    def skills(self) -> list[dict[str, Any]]:
        tck = {
            "id": "tck",
            "name": "TCK behaviours",
            "description": "Completes, streams, asks for input or rejects according to the messageId prefix.",
            "tags": ["tck", "conformance"],
            "examples": ["messageId tck-complete-task-1"],
        }
        return [tck, *self.tools.skills()]

    def extensions(self) -> list[dict[str, Any]]:
        return self.tools.extensions()

    def accept(self, message: dict[str, Any], task: dict[str, Any] | None) -> Work:
        message_id = message["messageId"]
        prefix = next((p for p in PREFIXES if message_id.startswith(p)), None)
        if prefix is not None:
            return BEHAVIOURS[prefix]
        names_skill = any(isinstance(part.get("data"), dict) and "skill" in part["data"] for part in message["parts"])
        if names_skill and task is None:
            return self.tools.accept(message, None)
        said = " ".join(part["text"] for part in message["parts"] if "text" in part)
        return _complete(f"Received: {said}" if said else "Received")


agent = TckAgent()
server = agent  # every example exposes what it serves as `server`


def _argv(args: list[str]) -> list[str]:
    """Like every example, accept `--http HOST:PORT` (as the a2a command's --host/--port)."""
    if "--http" in args:
        at = args.index("--http")
        host, _, port = args[at + 1].rpartition(":") if at + 1 < len(args) else ("", "", "")
        args = [*args[:at], "--host", host.strip("[]") or "127.0.0.1", "--port", port, *args[at + 2 :]]
    return args


if __name__ == "__main__":
    from mcp_agent_kit.a2a.cli import main

    sys.exit(main([f"{__file__}:agent", *_argv(sys.argv[1:])]))
