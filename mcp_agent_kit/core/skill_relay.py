"""skill_relay: a skill another MCP server serves, re-served under a URI of ours (gateway skills).

A RelayedSkill holds the origin's entry with every URI moved below `skill://<label>/`: the
origin's `skill://pdf/SKILL.md` seen through label `docs` is `skill://docs/pdf/SKILL.md`, so two
origins' same-named skills never meet on one URI, and the final segment (the name) is kept.
Frontmatter, digests and sizes are the origin's, and a read fetches the origin's bytes through
the reader it was given on demand, so the host verifies end to end against what the origin
published. Rules: a skill source like core.skill_tree.SkillTree; no client or transport
knowledge (the reader is a plain callable).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_agent_kit.core.skill_tree import SkillRejected, mime_of
from mcp_agent_kit.wire import skills

Reader = Callable[[str], bytes]
"""reader(origin URI): the bytes the origin serves for that file."""


def relayed_path(label: str, origin_uri: str) -> str:
    """The skill path of our copy of the origin's SKILL.md URI: label, then the origin's path."""
    parts = skills.segments(origin_uri) or []
    return "/".join([label, *parts[:-1]])


class RelayedSkill:
    """One origin skill entry, served under `skill://<label>/...`."""

    def __init__(self, label: str, entry: dict[str, Any], reader: Reader) -> None:
        problems = skills.check_entry(entry)
        files = skills.resource_list(entry)
        if not problems and files is None:
            problems = ["a dynamic skill cannot be relayed with digests"]
        if problems:
            raise SkillRejected(str(entry.get("uri")), problems)
        assert files is not None
        self.origin_uri: str = entry["uri"]
        self.origin_root = skills.skill_root(self.origin_uri)
        self.skill_path = relayed_path(label, self.origin_uri)
        self.uri = skills.skill_md_uri(self.skill_path)
        self.root = skills.skill_root(self.uri)
        self.frontmatter: dict[str, Any] = dict(entry["frontmatter"])
        self._reader = reader
        self._files: dict[str, dict[str, Any]] = {}
        for row in files:
            origin = row["uri"]
            rel = skills.SKILL_MD if origin == self.origin_uri else skills.relative_path(origin, self.origin_root)
            self._files[rel] = {"digest": row["digest"], "size": row["size"]}
        self.origin_entry = entry

    def refresh(self) -> bool:
        return False  # the gateway replaces a relayed skill when its origin's entry changes

    def paths(self) -> list[str]:
        return list(self._files)

    def uri_of(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def entry(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "frontmatter": dict(self.frontmatter),
            "resources": [{"uri": self.uri_of(rel), **row} for rel, row in self._files.items()],
        }

    def read(self, rel: str) -> bytes:
        origin = self.origin_uri if rel == skills.SKILL_MD else f"{self.origin_root}/{rel}"
        return self._reader(origin)

    def mime(self, rel: str) -> str:
        return mime_of(rel, None)  # by name: nothing is fetched before a host reads it
