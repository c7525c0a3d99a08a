"""merge: one namespace out of N servers' tools, prompts and resources, never losing one silently.

A name no other server uses stays as it is; on a collision every colliding entry becomes
`alias<sep>name`. Merged names are always valid tool names (`^[A-Za-z0-9_.-]{1,128}$`): other
characters become `_` and over-long names are cut with a hash of their origin, so the result
is deterministic and independent of the order servers are given in. Resources merge by URI; a
URI offered by several servers is reported and served from the first alias in sorted order.
Rules: pure functions over plain data; no I/O, no clients.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Final

NAME_RE: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
MAX_NAME: Final = 128
_BAD = re.compile(r"[^A-Za-z0-9_.-]")
_MAX_PASSES: Final = 8


class Merged:
    """The merged view: merged name -> (alias, original name), its inverse, and what went wrong."""

    def __init__(self) -> None:
        self.route: dict[str, tuple[str, str]] = {}
        self.names: dict[tuple[str, str], str] = {}
        self.conflicts: list[str] = []

    def merged_name(self, alias: str, name: str) -> str | None:
        return self.names.get((alias, name))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:8]


def _valid(candidate: str, alias: str, name: str) -> str:
    """A valid tool name for candidate: bad characters replaced, long names cut with a hash."""
    cleaned = _BAD.sub("_", candidate) or "_"
    if cleaned != candidate:
        cleaned = f"{cleaned}-{_digest(alias, name)}"
    if len(cleaned) > MAX_NAME:
        cleaned = f"{cleaned[: MAX_NAME - 9]}-{_digest(alias, name)}"
    return cleaned


def safe_aliases(aliases: Iterable[str]) -> dict[str, str]:
    """alias -> a prefix made of valid name characters, unique across the aliases."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for alias in sorted(set(aliases)):
        prefix = _BAD.sub("_", alias)[:32] or "server"
        if prefix != alias or prefix in taken:
            prefix = f"{prefix}-{_digest(alias)}"
        taken.add(prefix)
        out[alias] = prefix
    return out


def merge_names(offers: Mapping[str, Iterable[str]], separator: str = ".") -> Merged:
    """Merge {alias: names}; see the module docstring for the rules."""
    if _BAD.search(separator) or not separator:
        raise ValueError(f"separator {separator!r} must be made of A-Z a-z 0-9 _ . -")
    merged = Merged()
    prefixes = safe_aliases(offers)
    entries: list[tuple[str, str]] = []
    for alias in sorted(offers):
        seen: set[str] = set()
        for name in offers[alias]:
            if name in seen:
                merged.conflicts.append(f"server {alias!r} lists {name!r} more than once; the first is used")
                continue
            seen.add(name)
            entries.append((alias, name))
    owners: dict[str, set[str]] = {}
    for alias, name in entries:
        owners.setdefault(name, set()).add(alias)
    prefixed = {(alias, name) for alias, name in entries if len(owners[name]) > 1}
    hashed: set[tuple[str, str]] = set()

    def final(entry: tuple[str, str]) -> str:
        alias, name = entry
        candidate = f"{prefixes[alias]}{separator}{name}" if entry in prefixed else name
        if entry in hashed:
            candidate = f"{candidate}-{_digest(alias, name)}"
        return _valid(candidate, alias, name)

    for _ in range(_MAX_PASSES):
        groups: dict[str, list[tuple[str, str]]] = {}
        for entry in entries:
            groups.setdefault(final(entry), []).append(entry)
        clashes = [group for group in groups.values() if len(group) > 1]
        if not clashes:
            break
        for group in clashes:
            for entry in group:
                (hashed if entry in prefixed else prefixed).add(entry)
    groups = {}
    for entry in entries:
        groups.setdefault(final(entry), []).append(entry)
    for merged_name, group in sorted(groups.items()):
        if len(group) > 1:
            names = ", ".join(f"{alias}:{name}" for alias, name in group)
            merged.conflicts.append(f"could not separate {names}; none of them is served")
            continue
        merged.route[merged_name] = group[0]
        merged.names[group[0]] = merged_name
    return merged


def merge_uris(offers: Mapping[str, Iterable[str]]) -> tuple[dict[str, str], list[str]]:
    """({uri: alias}, conflicts): each URI served by one server; collisions are reported."""
    owners: dict[str, list[str]] = {}
    for alias in sorted(offers):
        for uri in dict.fromkeys(offers[alias]):
            owners.setdefault(uri, []).append(alias)
    route: dict[str, str] = {}
    conflicts: list[str] = []
    for uri, aliases in sorted(owners.items()):
        route[uri] = aliases[0]
        if len(aliases) > 1:
            others = ", ".join(aliases)
            conflicts.append(f"resource {uri!r} is offered by {others}; serving the one from {aliases[0]!r}")
    return route, conflicts
