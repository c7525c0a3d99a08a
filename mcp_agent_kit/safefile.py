"""safefile: reads a file the kit opens on a user's behalf without hanging, ballooning or leaving its root.

Rules: standard library only, neutral (any layer may import it). A read resolves the path and,
when a root is given, refuses a path that resolves outside the resolved root (a symlink out);
it then opens the resolved path with O_NOFOLLOW | O_NONBLOCK (a FIFO does not block the open) —
under a root, one component at a time from the root's descriptor, each with O_NOFOLLOW, so a
directory swapped for a symlink after the check is refused, not followed —
checks on the opened descriptor (not the path, so a swap after the check changes nothing) that
it is a regular file, and reads at most ``limit`` bytes, refusing anything larger. Every refusal
is an UnsafeFileError carrying a rule id: ``symlink-outside``, ``special-file`` or
``file-too-large``. Writes are guarded by ``check_parent_inside``: the nearest existing ancestor
of the path must resolve inside the resolved root, so mkdir and write cannot go out through a
symlinked directory.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

MIB = 1 << 20
DEFAULT_LIMIT = MIB  # manifests, configs, SKILL.md, templates: 1 MiB each
_CHUNK = 64 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafeFileError(OSError):
    """A file the kit refuses to read (or a path it refuses to write), with a rule id."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message

    def __str__(self) -> str:
        return self.message


def is_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` resolves (following every symlink) inside the resolved ``root``."""
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))
    except (OSError, ValueError):
        return False


def kind_of(mode: int) -> str:
    """A short word for a non-regular file type: 'directory', 'FIFO', 'device', 'socket'."""
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "socket" if stat.S_ISSOCK(mode) else "special file"


def open_regular(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> int:
    """An O_RDONLY descriptor on ``path`` once it is known to be a regular file inside ``root``."""
    shown = os.fspath(path)
    real = os.path.realpath(path)
    if root is not None and not Path(real).is_relative_to(os.path.realpath(root)):
        raise UnsafeFileError("symlink-outside", f"{shown} resolves outside {os.fspath(root)}")
    flags = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(real, flags) if root is None else _open_beneath(os.path.realpath(root), real, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped for a link after realpath
            raise UnsafeFileError("symlink-outside", f"{shown} changed into a symlink while opened") from exc
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnsafeFileError("special-file", f"{shown} is a {kind_of(mode)}, not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_beneath(real_root: str, real: str, flags: int) -> int:
    """Open ``real`` (symlink-free, inside ``real_root``) walking down from the root's descriptor,
    every component with O_NOFOLLOW: a component that became a symlink fails with ELOOP/ENOTDIR."""
    parts = Path(real).relative_to(real_root).parts
    fd = os.open(real_root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for name in parts[:-1]:
            child = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
        return os.open(parts[-1], flags, dir_fd=fd) if parts else os.open(real_root, flags)
    finally:
        os.close(fd)


def read_bytes(
    path: str | os.PathLike[str], *, limit: int = DEFAULT_LIMIT, root: str | os.PathLike[str] | None = None,
) -> bytes:
    """The contents of a regular file of at most ``limit`` bytes (see the module rules)."""
    fd = open_regular(path, root=root)
    try:
        if os.fstat(fd).st_size > limit:
            raise UnsafeFileError("file-too-large", f"{os.fspath(path)} is over the {limit}-byte limit")
        parts: list[bytes] = []
        total = 0
        while True:  # the size can grow after fstat: never read past limit + 1
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            if total > limit:
                raise UnsafeFileError("file-too-large", f"{os.fspath(path)} is over the {limit}-byte limit")
        return b"".join(parts)
    finally:
        os.close(fd)


def read_text(
    path: str | os.PathLike[str], *, limit: int = DEFAULT_LIMIT, root: str | os.PathLike[str] | None = None,
) -> str:
    """read_bytes decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_bytes(path, limit=limit, root=root).decode("utf-8")


def check_parent_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> None:
    """Refuse ``path`` when its nearest existing ancestor resolves outside the resolved ``root``.

    Missing directories below that ancestor are created by mkdir as real directories, so the
    write stays inside.
    """
    parent = Path(os.path.abspath(path)).parent
    while not os.path.lexists(parent) and parent != parent.parent:
        parent = parent.parent
    if not is_inside(parent, root):
        raise UnsafeFileError(
            "symlink-outside",
            f"refusing to write {os.fspath(path)}: {parent} leads outside {os.fspath(root)} through a symlink",
        )
