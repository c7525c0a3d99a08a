"""examples/everything_server.py plus one tool that records each of its runs in $RUN_LOG (a line
"pid label", appended), so the replica tests can count executions across processes."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

example = runpy.run_path(str(Path(__file__).resolve().parents[2] / "examples" / "everything_server.py"))
server = example["server"]


@server.tool(long_running=True, input_schema={"type": "object", "properties": {"label": {"type": "string"}},
                                              "required": ["label"]})
def counted(label: str) -> str:
    """Record this run, then answer; runs as a task."""
    line = f"{os.getpid()} {label}\n".encode()
    fd = os.open(os.environ["RUN_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return f"ran {label}"


if __name__ == "__main__":
    server.run()
