"""skill_fetch: installs a skill an MCP server publishes (SEP-2640) as a local skill directory.

`skill install --from-server`: the skill is chosen by name (or SKILL.md URI) from the server's
listing; every file URI of its entry is turned into a relative path first, and a URI that could
leave the skill (`..`, `.`, empty, absolute, backslash or percent-encoded segments, query,
fragment) refuses the whole skill before anything is fetched. Every file is then read through
the client's verified reads (size, then digest, then SKILL.md's frontmatter against the entry),
held in memory (the entry's limits cap it at 16 MiB), written into a temporary directory in the
destination's parent, checked with the strict validator under its final name, and renamed into
place (fsutil.install_tree): nothing is written on any refusal, and an existing skill is kept
unless `force`. Rules: talks to servers only through client.Client; no CLI parsing or printing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mcp_agent_kit.client.channel import PeerError
from mcp_agent_kit.client.client import Client
from mcp_agent_kit.client.inputs import ClientError
from mcp_agent_kit.safefile import check_parent_inside
from mcp_agent_kit.wire import skills
from mcp_agent_kit.wire.jsonrpc import RpcError
from mcp_agent_kit.wire.skills import SkillError

from .findings import errors
from .fsutil import install_tree
from .skill_validate import validate_skill

T = TypeVar("T")
CONNECT_TIMEOUT = 15.0


class FetchError(Exception):
    """The skill was not installed; the message says why (and `findings` the validator's errors)."""

    def __init__(self, message: str, findings: list[str] | None = None, fix: str | None = None) -> None:
        super().__init__(message)
        self.findings = findings or []
        self.fix = fix


def with_server(command: list[str], url: str | None, use: Callable[[Client], T]) -> T:
    """Run use(client) on the server at `command` (stdio) or `url` (HTTP), then close it; the
    client's failures become FetchError."""
    if command:
        client = Client.stdio(command[0], command[1:], allow_legacy=True, timeout=CONNECT_TIMEOUT)
    else:
        client = Client.http(str(url), allow_legacy=True, timeout=CONNECT_TIMEOUT)
    try:
        client.connect()
        return use(client)
    except (SkillError, RpcError, ClientError) as exc:
        raise FetchError(f"the server's skills cannot be used: {exc}") from exc
    except (PeerError, OSError) as exc:
        raise FetchError(f"cannot reach the server: {exc}", fix="check the command after -- or the --from-url URL") \
            from exc
    finally:
        client.close()


def listing(client: Client) -> list[tuple[str, str, str]]:
    """(name, uri, description) of each loadable skill, then ("declined", uri, why) of the others."""
    rows = [(str(e["frontmatter"].get("name")), e["uri"], str(e["frontmatter"].get("description")))
            for e in client.list_skills()]
    return rows + [("declined", uri, why) for uri, why in sorted(client.skills.declined.items())]


@dataclass(frozen=True)
class Fetched:
    """A skill read from a server and verified: its name, entry URI and files by relative path."""

    name: str
    uri: str
    files: dict[str, bytes]


def choose(client: Client, wanted: str) -> dict[str, Any]:
    """The entry for `wanted`, a skill name or its SKILL.md URI; FetchError naming the fix."""
    if "://" in wanted:
        try:
            return client.get_skill(wanted)
        except SkillError as exc:
            raise FetchError(str(exc)) from exc
    entries = client.list_skills()
    matches = [entry for entry in entries if entry["frontmatter"].get("name") == wanted]
    if len(matches) == 1:
        return matches[0]
    if matches:
        uris = ", ".join(entry["uri"] for entry in matches)
        raise FetchError(f"{len(matches)} skills are named {wanted!r} ({uris}); give the SKILL.md URI instead")
    declined = [why for uri, why in client.skills.declined.items() if skills.skill_name(uri) == wanted]
    if declined:
        raise FetchError(f"refusing the skill {wanted!r}: {declined[0]}")
    names = ", ".join(sorted(str(entry["frontmatter"].get("name")) for entry in entries)) or "none"
    raise FetchError(f"the server serves no skill named {wanted!r} (it serves: {names})")


def plan(entry: dict[str, Any]) -> dict[str, str]:
    """file URI -> relative path for every file of the entry; FetchError for any unsafe URI."""
    uri = entry["uri"]
    files = skills.resource_list(entry)
    if files is None:
        raise FetchError(f"{uri} is a dynamic skill: it has no digests to verify, so it is not installed")
    root = skills.skill_root(uri)
    paths: dict[str, str] = {}
    for resource in files:
        file_uri = str(resource["uri"])
        try:
            paths[file_uri] = skills.SKILL_MD if file_uri == uri else skills.relative_path(file_uri, root)
        except SkillError as exc:
            raise FetchError(f"refusing the skill {uri}: {exc}") from exc
    return paths


def fetch(client: Client, wanted: str) -> Fetched:
    """Choose, plan and read every file of one skill, each verified against the entry."""
    entry = choose(client, wanted)
    problems = skills.check_entry(entry)
    if problems:
        raise FetchError(f"refusing the skill {entry.get('uri')}: {'; '.join(problems)}")
    paths = plan(entry)
    uri = entry["uri"]
    files: dict[str, bytes] = {}
    try:
        files[skills.SKILL_MD] = client.read_skill_file(uri)
        for file_uri, rel in paths.items():
            if file_uri != uri:
                files[rel] = client.read_skill_file(file_uri)
    except SkillError as exc:
        raise FetchError(f"refusing the skill {uri}: {exc}") from exc
    return Fetched(str(entry["frontmatter"]["name"]), uri, files)


def install(fetched: Fetched, dest: Path, *, force: bool = False) -> Path:
    """Write a fetched skill to dest/<name> atomically once the strict validator accepts it."""
    name = fetched.name
    if not skills.NAME.fullmatch(name):
        raise FetchError(f"refusing to install a skill named {name!r}: not a valid skill name")

    def build(tmp: Path) -> None:
        for rel, data in fetched.files.items():
            path = tmp / rel
            check_parent_inside(path, tmp)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as out:
                out.write(data)
        report = validate_skill(tmp, strict=True, dir_name=name)
        if not report.valid:
            found = [str(finding) for finding in errors(report.findings)]
            raise FetchError(f"not installing {fetched.uri}: the strict validator rejects it", found)

    return install_tree(build, dest / name, force=force)
