"""skill_tree: one skill directory as the Skills extension serves it — its files, sizes and digests.

A SkillTree walks its directory once at registration (regular files, and symlinks to regular
files inside it; `.git` and `__pycache__` left out), reads each file once to hash it, and keeps
(stat key, size, digest) per file. `refresh()` re-stats the tree and re-hashes only files whose stat changed, so
an unchanged skill is never re-read to answer a listing; `read()` serves a file's bytes, confined
to the directory and capped, and updates its digest when the file changed since. A tree is one
kind of skill source for core.skills_ext (core.skill_relay is the other). Rules: no protocol or
registry knowledge (core.skills_ext maps a source onto both); the SKILL.md and digest logic is
wire.skills'.
"""

from __future__ import annotations

import mimetypes
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_agent_kit.safefile import read_bytes
from mcp_agent_kit.wire import skills
from mcp_agent_kit.wire.skills import MAX_FILES, MAX_TOTAL_BYTES, NOT_SKILL_DIRS, SKILL_MD

StatKey = tuple[int, int, int, int]


class SkillRejected(ValueError):
    """A skill directory the server refuses to serve; `findings` lists every reason."""

    def __init__(self, path: str, findings: list[str]) -> None:
        super().__init__(f"not serving the skill {path}: " + "; ".join(findings))
        self.path = path
        self.findings = findings


@dataclass(frozen=True)
class FileState:
    key: StatKey
    size: int
    digest: str


def _key(st: os.stat_result) -> StatKey:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


class SkillTree:
    """The files of one served skill directory, under `skill://<skill_path>/`."""

    def __init__(self, directory: Path, skill_path: str) -> None:
        self.directory = Path(os.path.abspath(directory))
        self.skill_path = skill_path
        self.uri = skills.skill_md_uri(skill_path)
        self.root = skills.skill_root(self.uri)
        self._lock = threading.Lock()
        self._files: dict[str, FileState] = {}
        self.frontmatter: dict[str, Any] = {}
        try:
            self.refresh()
        except OSError as exc:
            raise SkillRejected(str(directory), [str(exc)]) from exc
        problems = self.limit_problems()
        if SKILL_MD not in self._files:
            problems.append(f"{SKILL_MD} is missing")
        if problems:
            raise SkillRejected(str(directory), problems)

    # ---- the walk ---------------------------------------------------------------------------------
    def _stats(self) -> dict[str, os.stat_result]:
        """relative path -> stat of every regular file (links to files inside followed)."""
        found: dict[str, os.stat_result] = {}
        stack = [self.directory]
        while stack and len(found) <= MAX_FILES:
            directory = stack.pop()
            try:
                with os.scandir(directory) as scan:
                    entries = list(scan)
            except OSError:
                continue
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    if entry.name not in NOT_SKILL_DIRS:
                        stack.append(Path(entry.path))
                    continue
                if stat.S_ISLNK(st.st_mode):
                    if not Path(os.path.realpath(entry.path)).is_relative_to(os.path.realpath(self.directory)):
                        continue
                    try:
                        st = os.stat(entry.path)
                    except OSError:
                        continue
                if stat.S_ISREG(st.st_mode):
                    found[Path(entry.path).relative_to(self.directory).as_posix()] = st
        return found

    def refresh(self) -> bool:
        """Re-stat the tree, re-hash what changed; True when the set of files changed."""
        stats = self._stats()
        with self._lock:
            old = self._files
            files: dict[str, FileState] = {}
            for rel in sorted(stats):
                state = old.get(rel)
                key = _key(stats[rel])
                if state is None or state.key != key:
                    try:
                        state = self._hash(rel, key)
                    except FileNotFoundError:  # removed since the walk
                        continue
                files[rel] = state
            self._files = files
            skill_md = files.get(SKILL_MD)
            if skill_md is not None and (old.get(SKILL_MD) != skill_md or not self.frontmatter):
                self._read_frontmatter()
            return files.keys() != old.keys()

    def _hash(self, rel: str, key: StatKey) -> FileState:
        data = read_bytes(self.directory / rel, limit=MAX_TOTAL_BYTES, root=self.directory)
        return FileState(key, len(data), skills.digest(data))

    def _read_frontmatter(self) -> None:
        data = read_bytes(self.directory / SKILL_MD, limit=MAX_TOTAL_BYTES, root=self.directory)
        try:
            self.frontmatter = skills.frontmatter_json(data.decode("utf-8"))
        except (UnicodeDecodeError, skills.SkillError):
            self.frontmatter = {}

    def limit_problems(self) -> list[str]:
        with self._lock:
            files = self._files
        total = sum(state.size for state in files.values())
        problems = []
        if len(files) > MAX_FILES:
            problems.append(f"more than {MAX_FILES} files (the SEP-2640 limit per skill)")
        if total > MAX_TOTAL_BYTES:
            problems.append(f"{total} bytes of files, over the {MAX_TOTAL_BYTES}-byte SEP-2640 limit per skill")
        return problems

    # ---- what is served ---------------------------------------------------------------------------
    def paths(self) -> list[str]:
        with self._lock:
            return list(self._files)

    def uri_of(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def entry(self) -> dict[str, Any]:
        """The skill entry: uri, the frontmatter verbatim, every file with digest and size."""
        with self._lock:
            files = dict(self._files)
            front = dict(self.frontmatter)
        return {
            "uri": self.uri,
            "frontmatter": front,
            "resources": [
                {"uri": self.uri_of(rel), "digest": state.digest, "size": state.size} for rel, state in files.items()
            ],
        }

    def read(self, rel: str) -> bytes:
        """The bytes of one served file (its digest refreshed if it changed since it was hashed)."""
        path = self.directory / rel
        data = read_bytes(path, limit=MAX_TOTAL_BYTES, root=self.directory)
        with self._lock:
            state = self._files.get(rel)
            if state is not None and (state.size != len(data) or state.digest != skills.digest(data)):
                self._files[rel] = FileState(_key(os.stat(path)), len(data), skills.digest(data))
        return data

    def mime(self, rel: str) -> str:
        return mime_of(rel, self.read(rel)[:4096])


def mime_of(rel: str, sample: bytes | None) -> str:
    """SKILL.md is text/markdown; others by name, else text/plain for UTF-8 and octet-stream."""
    if rel == SKILL_MD:
        return skills.MARKDOWN
    guessed = mimetypes.guess_type(rel, strict=False)[0]
    if guessed or sample is None:
        return guessed or "application/octet-stream"
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 3:  # not just a character cut at the sample's end
            return "application/octet-stream"
    return "text/plain"


def children(paths: list[str], rel_dir: str) -> list[tuple[str, bool]] | None:
    """(relative path, is a directory) of the direct children of directory rel_dir ('' is the
    root) among a skill's file paths; None when it is not a directory of them."""
    prefix = f"{rel_dir}/" if rel_dir else ""
    found: dict[str, bool] = {}
    for rel in paths:
        if not rel.startswith(prefix):
            continue
        head, sep, _ = rel[len(prefix) :].partition("/")
        found[prefix + head] = found.get(prefix + head, False) or bool(sep)
    if not found:
        return None
    return sorted(found.items())
