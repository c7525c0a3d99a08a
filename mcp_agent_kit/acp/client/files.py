"""acp.client.files: the client's `fs/read_text_file` and `fs/write_text_file`, confined to a session's directories.

A `Roots` is the session's cwd plus its `additionalDirectories`; a path must be absolute and
resolve (symlinks followed) inside one of them, else the request is refused with -32602 naming
the roots. Reads go through `safefile` (regular files only, a size cap, no FIFO hangs); writes
create missing parent directories inside the root, refuse a parent that leads out through a
symlink, never follow a symlink at the final component, and are capped in size. Rules: knows the
two fs methods' params and results only; imports `wire`, `safefile` and `acp.connection`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Any

import mcp_agent_kit.safefile as safefile
from mcp_agent_kit.wire import acp as wire
from mcp_agent_kit.wire.jsonrpc import RpcError

MAX_READ = 16 * safefile.MIB
MAX_WRITE = 16 * safefile.MIB


class Roots:
    """The directories one session may touch: its cwd first, then its additional directories."""

    def __init__(self, cwd: str, additional: Sequence[str] = ()) -> None:
        self.dirs = [os.path.realpath(cwd), *(os.path.realpath(d) for d in additional)]

    def root_of(self, path: Any) -> str:
        """The root `path` lies in; RpcError -32602 when it is not absolute or lies outside every root."""
        if not isinstance(path, str) or not path:
            raise RpcError(wire.INVALID_PARAMS, "path must be a non-empty string")
        if not os.path.isabs(path):
            raise RpcError(wire.INVALID_PARAMS, f"path must be absolute: {path}")
        for root in self.dirs:
            if safefile.is_inside(path, root):
                return root
        raise RpcError(wire.INVALID_PARAMS, f"refused: {path} is outside the session's directories "
                                            f"({', '.join(self.dirs)})")


def read_text_file(roots: Roots, params: Any, limit: int = MAX_READ) -> dict[str, Any]:
    """`fs/read_text_file`: `{content}` of the file, from `line` (1-based) for `limit` lines when given."""
    params = params if isinstance(params, dict) else {}
    path = params.get("path")
    root = roots.root_of(path)
    try:
        text = safefile.read_text(path, limit=limit, root=root)
    except FileNotFoundError:
        raise RpcError(wire.RESOURCE_NOT_FOUND, f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RpcError(wire.INVALID_PARAMS, f"cannot read {path}: {exc}") from None
    line, count = params.get("line"), params.get("limit")
    if line is None and count is None:
        return {"content": text}
    lines = text.splitlines(keepends=True)
    start = max(int(line) - 1, 0) if isinstance(line, int) else 0
    end = start + int(count) if isinstance(count, int) and count >= 0 else len(lines)
    return {"content": "".join(lines[start:end])}


def write_text_file(roots: Roots, params: Any, limit: int = MAX_WRITE) -> str:
    """`fs/write_text_file`: write `content` to `path` (created when missing); returns the path written."""
    params = params if isinstance(params, dict) else {}
    path, content = params.get("path"), params.get("content")
    if not isinstance(content, str):
        raise RpcError(wire.INVALID_PARAMS, "content must be a string")
    data = content.encode("utf-8")
    if len(data) > limit:
        raise RpcError(wire.INVALID_PARAMS, f"refused: content is over the {limit}-byte write limit")
    root = roots.root_of(path)
    assert isinstance(path, str)
    try:
        safefile.check_parent_inside(path, root)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        flags = (os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))  # no FIFO hang, no symlink at the last step
        fd = os.open(path, flags, 0o644)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise RpcError(wire.INVALID_PARAMS, f"refused: {path} is a {safefile.kind_of(mode)}, not a file")
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except OSError as exc:
        raise RpcError(wire.INVALID_PARAMS, f"cannot write {path}: {exc}") from None
    return path
