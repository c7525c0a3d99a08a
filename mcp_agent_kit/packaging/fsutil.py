"""fsutil: puts a freshly built directory into place without clobbering anything by accident.

Rules: standard library only; knows nothing about skills or plugins. A tree is built in a
temporary sibling directory and renamed into place, so a reader never sees half a tree. An
existing target is refused unless ``force`` is given; with ``force`` the old tree is moved aside
first and deleted only after the new one is in place. ``scan_tree`` lists what makes a tree
unsafe to copy (a symlink that leaves it, a symlink to a directory, a FIFO, device or socket,
more than MAX_ENTRIES entries or MAX_TREE_BYTES of files); ``copy_safe_tree`` copies a tree
that holds none of them, re-checking each file on its opened descriptor, and copies a symlink
that stays inside as the regular file it points to, so the copy holds no symlink at all.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from mcp_agent_kit.safefile import UnsafeFileError, is_inside, kind_of, open_regular
from mcp_agent_kit.wire.skills import NOT_SKILL_DIRS

MAX_ENTRIES, MAX_TREE_BYTES = 10_000, 100 << 20  # kagent's package limits, also per skill
_CHUNK = 1 << 16


class TargetExistsError(FileExistsError):
    """The target exists and ``force`` was not given."""


def install_tree(build: Callable[[Path], None], target: Path, *, force: bool = False) -> Path:
    """Run ``build(tmp_dir)`` then move ``tmp_dir`` to ``target``; return ``target``."""
    target = Path(os.path.abspath(target))
    if os.path.lexists(target) and not force:
        raise TargetExistsError(f"{target} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        build(tmp)
        os.chmod(tmp, 0o755)
        _swap(tmp, target, force=force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _swap(tmp: Path, target: Path, *, force: bool) -> None:
    if not os.path.lexists(target):
        os.rename(tmp, target)
        return
    if not force:
        raise TargetExistsError(f"{target} already exists")
    backup = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    backup.rmdir()
    os.rename(target, backup)
    try:
        os.rename(tmp, target)
    except OSError:
        os.rename(backup, target)
        raise
    if backup.is_dir() and not backup.is_symlink():
        shutil.rmtree(backup)
    else:
        backup.unlink()


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write ``{relative path: text}`` under ``root`` as UTF-8 with LF line endings."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)


def scan_tree(
    source: Path,
    *,
    root: Path | None = None,
    dir_links: bool = False,
    max_entries: int | None = None,
    max_bytes: int | None = None,
) -> list[tuple[str, str, str]]:
    """(rule, relative path, message) for each entry that makes ``source`` unsafe to copy.

    Symlinks must resolve inside ``root`` (default: ``source``) and to a regular file (or, with
    dir_links, a directory); special files are refused; ``.git`` is not entered; the walk stops
    at max_entries (default MAX_ENTRIES) and the regular files may total max_bytes (default
    MAX_TREE_BYTES). Nothing is opened or followed. Shared by skills and plugin packages.
    """
    max_entries = MAX_ENTRIES if max_entries is None else max_entries
    max_bytes = MAX_TREE_BYTES if max_bytes is None else max_bytes
    bound = root if root is not None else source
    found: list[tuple[str, str, str]] = []
    entries, total, stack = 0, 0, [source]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as scan:
                listing = sorted(scan, key=lambda e: e.name)
        except OSError as exc:
            found.append(("unreadable", os.path.relpath(directory, source), f"cannot list: {exc.strerror}"))
            continue
        for entry in listing:
            entries += 1
            if entries > max_entries:
                found.append(("too-many-entries", ".", f"more than {max_entries} filesystem entries"))
                return found
            rel = os.path.relpath(entry.path, source)
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                if not is_inside(entry.path, bound):
                    found.append(("symlink-outside", rel, f"symlink {rel} points outside {bound.name or bound}"))
                elif os.path.isdir(entry.path):
                    if dir_links:
                        continue
                    found.append(("symlink-directory", rel, f"symlink {rel} points to a directory; "
                                  "put the directory itself there"))
                elif not os.path.isfile(entry.path):
                    found.append(("special-file", rel, f"symlink {rel} points to nothing or to a special file"))
            elif stat.S_ISDIR(mode):
                if entry.name not in NOT_SKILL_DIRS:
                    stack.append(Path(entry.path))
            elif stat.S_ISREG(mode):
                total += entry.stat(follow_symlinks=False).st_size
            else:
                found.append(("special-file", rel, f"{rel} is a {kind_of(mode)}, not a regular file"))
    if total > max_bytes:
        found.append(("tree-too-large", ".", f"regular files total {total} bytes, over the "
                      f"{max_bytes}-byte limit"))
    return found


def copy_safe_tree(source: Path, destination: Path, *, root: Path | None = None) -> None:
    """Copy ``source`` into ``destination`` with no symlink and no special file (see the module rules).

    Raises UnsafeFileError (rule id included) on the first thing ``scan_tree`` would refuse;
    ``.git`` and ``__pycache__`` directories are left out.
    """
    problems = scan_tree(source, root=root)
    if problems:
        rule, _rel, message = problems[0]
        raise UnsafeFileError(rule, message)
    bound = root if root is not None else source
    destination.mkdir(parents=True, exist_ok=True)
    for directory, dirs, files in os.walk(source):  # never follows directory symlinks
        dirs[:] = sorted(d for d in dirs if d not in NOT_SKILL_DIRS and not os.path.islink(os.path.join(directory, d)))
        out_dir = destination / os.path.relpath(directory, source)
        out_dir.mkdir(exist_ok=True)
        for name in sorted(files):
            fd = open_regular(os.path.join(directory, name), root=bound)
            with os.fdopen(fd, "rb") as src, open(out_dir / name, "xb") as out:
                shutil.copyfileobj(src, out, _CHUNK)
                os.chmod(out.fileno(), stat.S_IMODE(os.fstat(src.fileno()).st_mode))
