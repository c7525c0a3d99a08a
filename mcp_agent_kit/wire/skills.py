"""skills: wire facts of the Skills extension (SEP-2640, `io.modelcontextprotocol/skills`), sans-IO.

The extension id, limits and formats; the SHA-256 digest of a file's bytes; `skill://` URI
parsing (skill path, root, a file's path inside the root, with traversal refused); the checks a
host makes on an entry before it reads anything; the bytes of a `resources/read` content item;
and the field-by-field comparison of a fetched SKILL.md's frontmatter with the entry's. Shared
by the server extension (core), the host (client) and the installer (packaging). Rules: pure
functions on bytes and dicts; imports nothing of ours but `wire.frontmatter`.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

from mcp_agent_kit.wire import frontmatter

EXTENSION: Final = "io.modelcontextprotocol/skills"
SKILL_MD: Final = "SKILL.md"
# directories that are never part of a skill: version control and Python's bytecode cache
NOT_SKILL_DIRS: Final = frozenset({".git", "__pycache__"})
SCHEME: Final = "skill://"
MARKDOWN: Final = "text/markdown"
DIRECTORY_MIME: Final = "inode/directory"
DYNAMIC: Final = "dynamic"
MAX_FILES: Final = 512  # entries per skill, SKILL.md included
MAX_TOTAL_BYTES: Final = 16 * 1024 * 1024  # the sum of every file's size, per skill
META_PREFIX: Final = "io.modelcontextprotocol.skills/"

DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")
NAME: Final = re.compile(r"(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?")
_SEGMENT: Final = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=]+")  # an RFC 3986 segment without `%`
_UNSAFE: Final = ("\\", "%", "?", "#", "\x00")


class SkillError(ValueError):
    """An entry, URI or file a host must not load; the message says which and why."""


def digest(data: bytes) -> str:
    """`sha256:` and the 64 lowercase hex digits of data's SHA-256."""
    import hashlib  # on first use: a server that serves no skill never loads it

    return "sha256:" + hashlib.sha256(data).hexdigest()


def segments(uri: str) -> list[str] | None:
    """The path segments after `scheme://` (empty ones dropped), or None without `://`."""
    at = uri.find("://")
    if at < 0:
        return None
    return [part for part in uri[at + 3 :].split("/") if part]


def skill_name(uri: str) -> str | None:
    """The skill name in a SKILL.md URI (the segment before SKILL.md), else None."""
    parts = segments(uri)
    if parts is None or len(parts) < 2 or parts[-1] != SKILL_MD:
        return None
    return parts[-2]


def skill_root(uri: str) -> str:
    """The skill's root directory URI: the SKILL.md URI without `/SKILL.md` (no trailing slash)."""
    if skill_name(uri) is None or not uri.endswith("/" + SKILL_MD):
        raise SkillError(f"{uri} is not the URI of a SKILL.md")
    return uri[: -len(SKILL_MD) - 1]


def skill_md_uri(skill_path: str, scheme: str = SCHEME) -> str:
    return f"{scheme}{skill_path}/{SKILL_MD}"


def relative_path(uri: str, root: str) -> str:
    """The path of file `uri` inside skill `root` (`references/FORMS.md`); SkillError for a URI
    outside the root or one that could step out of it once written to disk: `..` or `.`
    segments, empty segments, backslashes, percent-encoding, queries, fragments or NUL."""
    if not uri.startswith(root + "/"):
        raise SkillError(f"{uri} is not inside the skill {root}")
    rest = uri[len(root) + 1 :]
    bad = next((mark for mark in _UNSAFE if mark in rest), None)
    if bad is not None:
        raise SkillError(f"refusing {uri}: {bad!r} in a skill file path")
    parts = rest.split("/")
    if rest.startswith("/") or any(part in ("", ".", "..") or not _SEGMENT.fullmatch(part) for part in parts):
        raise SkillError(f"refusing {uri}: a skill file path must be plain relative segments (no '..', '.' or '//')")
    return rest


def resource_list(entry: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The entry's `resources` array, None for a "dynamic" skill."""
    files = entry.get("resources")
    return files if isinstance(files, list) else None


def check_entry(entry: Any) -> list[str]:
    """What makes a skill entry unloadable (empty when none): the three fields, the name and
    the final segment, a complete in-root manifest with valid digests and sizes, the limits."""
    if not isinstance(entry, dict):
        return ["an entry is not an object"]
    uri, front, files = entry.get("uri"), entry.get("frontmatter"), entry.get("resources")
    if not isinstance(uri, str) or skill_name(uri) is None:
        return [f"uri {uri!r} is not the URI of a SKILL.md"]
    problems: list[str] = []
    name = skill_name(uri)
    if not isinstance(front, dict) or not isinstance(front.get("name"), str) or not front.get("description"):
        problems.append(f"{uri}: frontmatter must be an object with a name and a description")
    elif front["name"] != name:
        problems.append(f"{uri}: frontmatter name {front['name']!r} is not the final URI segment {name!r}")
    if name is None or not NAME.fullmatch(name):
        problems.append(f"{uri}: {name!r} is not a valid skill name")
    if files == DYNAMIC:
        return problems
    if not isinstance(files, list):
        return [*problems, f"{uri}: resources must be an array or \"dynamic\""]
    return problems + _check_files(uri, files)


def _check_files(uri: str, files: list[Any]) -> list[str]:
    problems: list[str] = []
    root = uri[: -len(SKILL_MD) - 1]
    seen: set[str] = set()
    total = 0
    for item in files:
        file_uri = item.get("uri") if isinstance(item, dict) else None
        if not isinstance(file_uri, str):
            problems.append(f"{uri}: a resource has no uri")
            continue
        if file_uri in seen:
            problems.append(f"{uri}: {file_uri} is listed twice")
        seen.add(file_uri)
        if file_uri != uri:
            try:
                relative_path(file_uri, root)
            except SkillError as exc:
                problems.append(str(exc))
        if not isinstance(item.get("digest"), str) or not DIGEST.fullmatch(item["digest"]):
            problems.append(f"{file_uri}: digest must be sha256: and 64 lowercase hex digits")
        size = item.get("size")
        if type(size) is not int or size < 0:
            problems.append(f"{file_uri}: size must be a non-negative integer")
        else:
            total += size
    if uri not in seen:
        problems.append(f"{uri}: resources does not list SKILL.md itself")
    if len(files) > MAX_FILES:
        problems.append(f"{uri}: {len(files)} files, over the limit of {MAX_FILES}")
    if total > MAX_TOTAL_BYTES:
        problems.append(f"{uri}: {total} bytes in all, over the limit of {MAX_TOTAL_BYTES}")
    return problems


def content_bytes(contents: Any, uri: str) -> bytes:
    """The bytes of the `resources/read` item for uri: a text item's UTF-8, a blob decoded."""
    items = [item for item in contents if isinstance(item, dict)] if isinstance(contents, list) else []
    item = next((i for i in items if i.get("uri") == uri), items[0] if len(items) == 1 else None)
    if item is None:
        raise SkillError(f"resources/read of {uri} returned no content for it")
    if isinstance(item.get("text"), str):
        return str(item["text"]).encode("utf-8")
    if isinstance(item.get("blob"), str):
        try:
            return base64.b64decode(item["blob"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SkillError(f"resources/read of {uri}: the blob is not base64") from exc
    raise SkillError(f"resources/read of {uri}: the item has neither text nor blob")


def verify(data: bytes, resource: dict[str, Any]) -> None:
    """SkillError unless data has the resource's size, then its digest (size first)."""
    uri = resource.get("uri")
    if len(data) != resource.get("size"):
        raise SkillError(f"{uri}: {len(data)} bytes read, the entry says {resource.get('size')}; not loaded")
    if digest(data) != resource.get("digest"):
        raise SkillError(f"{uri}: the digest does not match the entry's; not loaded")


_NULL = re.compile(r"~|null|Null|NULL")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+")
_INT_BASE = re.compile(r"0o([0-7]+)|0x([0-9a-fA-F]+)")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_VALUE_AFTER_KEY = re.compile(r"\s*(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'|[^\s'\"][^:]*?|)\s*:(?:\s+(.*))?$")


def core_scalar(text: str) -> Any:
    """A plain YAML scalar as the YAML 1.2 core schema types it (null, bool, int, float; else the
    text). Infinities and NaN, which JSON cannot carry, stay text."""
    if _NULL.fullmatch(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.fullmatch(text):
        return int(text)
    based = _INT_BASE.fullmatch(text)
    if based:
        return int(based.group(1), 8) if based.group(1) else int(based.group(2), 16)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def frontmatter_json(text: str) -> dict[str, Any]:
    """The frontmatter of a SKILL.md rendered as JSON the way YAML 1.2 core parsers (the
    conformance suite's, most hosts') read it: plain scalars of mapping keys typed (`version: 2` is
    2, `draft: true` is true, an empty value null), quoted and block scalars and sequence items
    strings. SkillError when there is no readable frontmatter."""
    doc = frontmatter.read(text.removeprefix("\ufeff"))
    if doc.data is None or doc.problems:
        detail = doc.problems[0].message if doc.problems else "no frontmatter mapping"
        raise SkillError(f"the SKILL.md frontmatter cannot be read: {detail}")
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")

    def typed(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {key: typed(item, f"{path}.{key}" if path else key) for key, item in value.items()}
        line = doc.key_lines.get(path)
        if not isinstance(value, str) or line is None:
            return value
        found = _VALUE_AFTER_KEY.match(lines[line - 1])
        rest = (found.group(1) or "") if found else ""
        if not rest.strip() or rest.lstrip().startswith("#"):
            return None if value == "" else value  # `key:` alone is null
        if rest.lstrip()[0] in "\"'|>":
            return value
        return core_scalar(value)

    result: dict[str, Any] = typed(doc.data, "")
    return result


def _canonical(value: Any) -> Any:
    """A JSON frontmatter value as the kit's YAML reader gives it (every scalar a string)."""
    if isinstance(value, dict):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, str):
        return value
    return str(value)


def frontmatter_differences(text: str, expected: dict[str, Any]) -> list[str]:
    """The fields where the SKILL.md text's frontmatter differs from the entry's (a missing key is
    null). Scalars compare by their text, so `2` and `"2"`, `true` and `True` are the same field:
    servers type plain YAML scalars differently (1.1 or 1.2 schema), never their content."""
    found = _canonical(frontmatter_json(text))
    want = _canonical(expected)
    return [
        f"{key}: file={found.get(key)!r} entry={want.get(key)!r}"
        for key in sorted(set(found) | set(want))
        if found.get(key) != want.get(key)
    ]
