"""A test server with tools that exercise every outcome: typed args, errors, media, elicitation, waiting."""

from __future__ import annotations

import threading
from typing import Any

from mcp_agent_kit import Context, Server, ToolError, content

server = Server("toolbox", "2.0.0", description="Tools for A2A tests")
GATE = threading.Event()


@server.tool
def add(a: int, b: int) -> dict[str, Any]:
    """Add two integers."""
    assert type(a) is int and type(b) is int, "integers arrive as int"
    return {"sum": a + b}


@server.tool
def broken(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"broken: {reason}")


@server.tool
def picture() -> Any:
    """A one-pixel image and a link."""
    return [
        content.image(b"\x89PNG", "image/png"),
        content.resource_link("https://example.com/p.png", "p.png", mimeType="image/png"),
    ]


@server.tool
def greet(ctx: Context) -> str:
    """Ask the user's name, then greet."""
    answer = ctx.elicit("What is your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    if answer.get("action") != "accept":
        return "no name given"
    return f"hello {answer['content']['name']}"


@server.tool
def wait(steps: int, ctx: Context) -> str:
    """Report progress, then wait for the test's gate."""
    for step in range(steps):
        ctx.progress(step + 1, steps, "step")
    if not GATE.wait(10):
        raise ToolError("gate never opened")
    return "waited"
