"""Host side of Skills over MCP (SEP-2640): the Client against a kit server over stdio, both eras.

The server serves a real directory; tampering is done on disk after the client took the entry,
so the server really sends bytes that no longer match what the client holds.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_agent_kit.client.client import Client
from mcp_agent_kit.client.probe import Era, Probe
from mcp_agent_kit.wire import skills
from mcp_agent_kit.wire.skills import SkillError
from tests.skills.helpers import make_skill

SERVER = """
import sys
from mcp_agent_kit import Server
server = Server("skills-peer", skills=[sys.argv[1]])
server.run([])
"""
SKILL_URI = "skill://pdf-tools/SKILL.md"
GUIDE_URI = "skill://pdf-tools/references/GUIDE.md"


class HandshakeClient(Client):
    """A Client that starts with initialize (the probe's known-legacy path), for the 2025-11-25 era."""

    def _new_probe(self, known_era: Era | None) -> Probe:
        return super()._new_probe("legacy")


@pytest.fixture(params=["modern", "legacy"])
def peer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Client, Path]]:
    root = make_skill(tmp_path / "skills")
    script = tmp_path / "serve.py"
    script.write_text(SERVER)
    kind = HandshakeClient if request.param == "legacy" else Client
    client = kind.stdio(sys.executable, [str(script), str(tmp_path / "skills")], allow_legacy=True, timeout=10)
    try:
        client.connect()
        assert client.era == request.param
        yield client, root
    finally:
        client.close()


def test_list_then_load_then_read(peer: tuple[Client, Path]) -> None:
    client, root = peer
    entries = client.list_skills()
    assert [entry["uri"] for entry in entries] == [SKILL_URI]
    assert client.skills.loaded == set()
    with pytest.raises(SkillError, match="before reading its files"):
        client.read_skill_file(GUIDE_URI)  # the acting window opens with SKILL.md
    assert client.read_skill_file(SKILL_URI) == (root / "SKILL.md").read_bytes()
    assert client.read_skill_file(GUIDE_URI) == (root / "references/GUIDE.md").read_bytes()
    with pytest.raises(SkillError, match="not a file of any skill entry held"):
        client.read_skill_file("skill://pdf-tools/references/OTHER.md")


def test_tampered_digest_and_size_are_refused(peer: tuple[Client, Path]) -> None:
    client, root = peer
    client.list_skills()
    client.read_skill_file(SKILL_URI)
    guide = root / "references/GUIDE.md"
    guide.write_bytes(guide.read_bytes().replace(b"one", b"two"))  # same size, other bytes
    with pytest.raises(SkillError, match="digest does not match"):
        client.read_skill_file(GUIDE_URI)
    assert SKILL_URI not in client.skills.entries  # dropped: get it again to go on
    entry = client.get_skill(SKILL_URI)
    client.read_skill_file(SKILL_URI)
    assert client.read_skill_file(GUIDE_URI) == guide.read_bytes()
    assert entry["uri"] == SKILL_URI
    (root / "SKILL.md").write_bytes((root / "SKILL.md").read_bytes() + b"\nmore\n")
    client.skills._cache.clear()
    with pytest.raises(SkillError, match="bytes read, the entry says"):
        client.read_skill_file(SKILL_URI)


def test_get_unknown_skill(peer: tuple[Client, Path]) -> None:
    client, _ = peer
    from mcp_agent_kit.wire.jsonrpc import RpcError

    with pytest.raises(RpcError) as unknown:
        client.get_skill("skill://nope/SKILL.md")
    assert unknown.value.code == -32602


def test_entry_checks() -> None:
    good = {"uri": SKILL_URI, "frontmatter": {"name": "pdf-tools", "description": "d"},
            "resources": [{"uri": SKILL_URI, "digest": skills.digest(b""), "size": 0}]}
    assert skills.check_entry(good) == []
    empty = skills.digest(b"")
    cases = {
        "not the final URI segment": {**good, "frontmatter": {"name": "other", "description": "d"}},
        "does not list SKILL.md": {**good, "resources": []},
        "'..'": {**good, "resources": [*good["resources"], {"uri": "skill://pdf-tools/../x", "digest": empty,
                                                               "size": 0}]},
        "'%'": {**good, "resources": [*good["resources"], {"uri": "skill://pdf-tools/%2e%2e/x", "digest": empty,
                                                              "size": 0}]},
        "64 lowercase hex": {**good, "resources": [{"uri": SKILL_URI, "digest": "sha256:ABC", "size": 0}]},
        "non-negative integer": {**good, "resources": [{"uri": SKILL_URI, "digest": empty, "size": True}]},
        "array or": {**good, "resources": None},
    }
    for needle, entry in cases.items():
        assert any(needle in problem for problem in skills.check_entry(entry)), (needle, skills.check_entry(entry))


def test_frontmatter_compare() -> None:
    text = "---\nname: a\ndescription: b\nmetadata:\n  v: \"1\"\n---\nbody\n"
    assert skills.frontmatter_differences(text, {"name": "a", "description": "b", "metadata": {"v": "1"}}) == []
    assert skills.frontmatter_differences(text, {"name": "a", "description": "b", "metadata": {"v": 1}}) == []
    assert skills.frontmatter_differences(text, {"name": "a", "description": "c", "metadata": {"v": "1"}})
    assert skills.frontmatter_differences(text, {"name": "a", "description": "b"})  # a missing key differs


def test_frontmatter_json_types_plain_scalars_as_yaml_core() -> None:
    text = ("---\nname: a\ndescription: \"7\"\nversion: 2\nempty:\nmetadata:\n  ratio: 1.50\n  flag: true\n"
            "  when: 2024-01-01\n  none: ~\n  q: '3'\n---\nbody\n")
    assert skills.frontmatter_json(text) == {
        "name": "a", "description": "7", "version": 2, "empty": None,
        "metadata": {"ratio": 1.5, "flag": True, "when": "2024-01-01", "none": None, "q": "3"},
    }
