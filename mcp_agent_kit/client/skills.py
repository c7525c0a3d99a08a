"""skills: the host side of the Skills extension (SEP-2640) for one Client.

A SkillHost sends `skills/*` only to a server that declared the extension, keeps the entries it
was given (`skills/list`, `skills/get`), and fetches nothing until a skill is used: loading a
skill reads its SKILL.md, a supporting file is read only while its skill is loaded and only
when the held entry lists it. Every read is checked against the held entry, size first, then the
SHA-256 digest, then (for SKILL.md) the frontmatter field by field; a failure raises SkillError,
drops the entry (call `get_skill` again to continue from the server's current set) and hands
back nothing. Verified bytes are cached per (uri, digest). Entries that break the extension's
rules, and "dynamic" skills (no digests to verify), are declined with the reason logged.
Rules: imports wire/ and client/ only; knows no server side.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from mcp_agent_kit.client.peer import Peer
from mcp_agent_kit.wire import skills
from mcp_agent_kit.wire.skills import SkillError

log = logging.getLogger("mcp_agent_kit.client.skills")
MAX_PAGES = 1000

__all__ = ["SkillError", "SkillHost"]


class SkillHost:
    """The skill entries one client holds and the verified reads made against them."""

    def __init__(self, client: Peer) -> None:
        self.client = client
        self.entries: dict[str, dict[str, Any]] = {}  # SKILL.md uri -> the held entry
        self.loaded: set[str] = set()  # skills whose SKILL.md was read and verified
        self.declined: dict[str, str] = {}  # uri -> why the entry was not kept
        self._cache: dict[tuple[str, str], bytes] = {}
        self._lock = threading.Lock()

    # ---- the gate ----------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any] | None:
        """The server's declared extension settings, None when it did not declare the extension."""
        verdict = self.client.verdict or self.client.connect()
        declared = (verdict.capabilities.get("extensions") or {}).get(skills.EXTENSION)
        return declared if isinstance(declared, dict) else None

    def _gate(self, method: str) -> None:
        if self.settings() is None:
            raise SkillError(f"{method}: the server does not declare {skills.EXTENSION}")

    # ---- entries -----------------------------------------------------------------------------------------
    def _keep(self, entry: Any) -> dict[str, Any] | None:
        problems = skills.check_entry(entry)
        uri = entry.get("uri") if isinstance(entry, dict) else None
        if not problems and skills.resource_list(entry) is None:
            problems = [f"{uri}: a dynamic skill has no digests to verify; not loaded"]
        if problems:
            log.warning("declining skill %s: %s", uri, "; ".join(problems))
            if isinstance(uri, str):
                with self._lock:
                    self.declined[uri] = "; ".join(problems)
                    self.entries.pop(uri, None)
            return None
        assert isinstance(entry, dict)
        with self._lock:
            if self.entries.get(entry["uri"]) != entry:
                self.loaded.discard(entry["uri"])  # a changed entry revokes the load
            self.entries[entry["uri"]] = entry
            self.declined.pop(entry["uri"], None)
        return entry

    def list(self) -> list[dict[str, Any]]:
        """Every entry of `skills/list` (pagination followed) that a host may load."""
        self._gate("skills/list")
        kept: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            result = self.client.request("skills/list", {"cursor": cursor} if cursor is not None else {})
            page = result.get("skills")
            if not isinstance(page, list):
                raise SkillError("skills/list: 'skills' is not a list")
            kept.extend(entry for entry in map(self._keep, page) if entry is not None)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return kept
            if cursor in seen:
                raise SkillError(f"skills/list: the server repeated cursor {cursor!r}")
            seen.add(cursor)
        raise SkillError(f"skills/list: more than {MAX_PAGES} pages")

    def get(self, uri: str) -> dict[str, Any]:
        """The entry `skills/get` gives for a SKILL.md URI (listed or not), held from now on."""
        self._gate("skills/get")
        skill = self.client.request("skills/get", {"uri": uri}).get("skill")
        if not isinstance(skill, dict) or skill.get("uri") != uri:
            raise SkillError(f"skills/get {uri}: the result is not the entry asked for")
        kept = self._keep(skill)
        if kept is None:
            raise SkillError(f"skills/get {uri}: {self.declined.get(uri, 'invalid entry')}")
        return kept

    # ---- reads -------------------------------------------------------------------------------------------
    def _holder(self, uri: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(entry, resource) of the held entry listing uri; SkillError when none lists it."""
        with self._lock:
            entries = list(self.entries.values())
        for entry in entries:
            for resource in skills.resource_list(entry) or ():
                if resource.get("uri") == uri:
                    return entry, resource
        raise SkillError(f"{uri} is not a file of any skill entry held; list or get the skill first")

    def read(self, uri: str) -> bytes:
        """The verified bytes of a skill file: SKILL.md loads its skill; any other file needs its
        skill loaded and must be listed in the held entry."""
        entry, resource = self._holder(uri)
        skill_uri = entry["uri"]
        is_skill_md = uri == skill_uri
        if not is_skill_md and skill_uri not in self.loaded:
            raise SkillError(f"{uri}: load {skill_uri} (read its SKILL.md) before reading its files")
        key = (uri, str(resource["digest"]))
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and is_skill_md:
                self.loaded.add(skill_uri)
        if cached is not None:
            return cached
        result = self.client.request("resources/read", {"uri": uri})
        try:
            data = skills.content_bytes(result.get("contents"), uri)
            skills.verify(data, resource)
            if is_skill_md:
                differences = skills.frontmatter_differences(data.decode("utf-8"), entry["frontmatter"])
                if differences:
                    raise SkillError(f"{uri}: the frontmatter differs from the entry's ({'; '.join(differences)})")
        except (SkillError, UnicodeDecodeError) as exc:
            self._revoke(skill_uri)
            raise SkillError(str(exc)) from exc
        with self._lock:
            self._cache[key] = data
            if is_skill_md:
                self.loaded.add(skill_uri)
        return data

    def _revoke(self, skill_uri: str) -> None:
        with self._lock:
            self.entries.pop(skill_uri, None)
            self.loaded.discard(skill_uri)
