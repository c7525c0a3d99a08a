"""fsutil: puts a freshly built directory into place without clobbering anything by accident.

Rules: standard library only; knows nothing about skills or plugins. A tree is built in a
temporary sibling directory and renamed into place, so a reader never sees half a tree. An
existing target is refused unless ``force`` is given; with ``force`` the old tree is moved aside
first and deleted only after the new one is in place.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


class TargetExistsError(FileExistsError):
    """The target exists and ``force`` was not given."""


def install_tree(build: Callable[[Path], None], target: Path, *, force: bool = False) -> Path:
    """Run ``build(tmp_dir)`` then move ``tmp_dir`` to ``target``; return ``target``."""
    target = Path(os.path.abspath(target))
    if os.path.lexists(target) and not force:
        raise TargetExistsError(f"{target} already exists; use --force to replace it")
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
        raise TargetExistsError(f"{target} already exists; use --force to replace it")
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


def copy_tree(source: Path, destination: Path) -> None:
    """Copy a directory, keeping symlinks as symlinks (the validators judge where they point)."""
    shutil.copytree(source, destination, symlinks=True, dirs_exist_ok=True)
