"""Server side of Skills over MCP (SEP-2640): Server.skills() through the real dispatcher, both eras."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit import Server
from mcp_agent_kit.core import skill_tree
from mcp_agent_kit.core.skill_tree import SkillRejected
from mcp_agent_kit.wire.jsonrpc import RpcError
from tests.skills.helpers import make_skill

EXT = "io.modelcontextprotocol/skills"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _served(tmp_path: Path, **options: Any) -> tuple[Server, Path]:
    root = make_skill(tmp_path / "skills", files={"assets/logo.bin": bytes(range(256))})
    make_skill(tmp_path / "skills", "zip-tools")
    server = Server("skills-test", skills=[tmp_path / "skills"], **options)
    return server, root


def test_entry_is_complete_and_verbatim(tmp_path: Path) -> None:
    server, root = _served(tmp_path)
    client = server.test_client()
    result = client.request("skills/list")
    assert result["ttlMs"] == 0 and result["cacheScope"] == "private" and result["resultType"] == "complete"
    first = result["skills"][0]
    assert [entry["uri"] for entry in result["skills"]] == ["skill://pdf-tools/SKILL.md", "skill://zip-tools/SKILL.md"]
    assert first["frontmatter"] == {
        "name": "pdf-tools",
        "description": "Use when a test needs the pdf-tools skill. Do not use for anything else.",
        "metadata": {"owner": "tests"},
    }
    expected = {
        f"skill://pdf-tools/{rel}": {"digest": _digest((root / rel).read_bytes()), "size": (root / rel).stat().st_size}
        for rel in ("SKILL.md", "references/GUIDE.md", "assets/logo.bin")
    }
    assert {r["uri"]: {"digest": r["digest"], "size": r["size"]} for r in first["resources"]} == expected
    caps = client.request("server/discover")["capabilities"]
    assert caps["extensions"][EXT] == {"directoryRead": True} and isinstance(caps["resources"], dict)


def test_files_are_resources(tmp_path: Path) -> None:
    server, root = _served(tmp_path)
    client = server.test_client()
    rows = {row["uri"]: row for row in client.request("resources/list")["resources"]}
    skill_md = rows["skill://pdf-tools/SKILL.md"]
    assert (skill_md["name"], skill_md["mimeType"]) == ("pdf-tools", "text/markdown")
    assert skill_md["description"].startswith("Use when a test needs the pdf-tools skill")
    text = client.request("resources/read", {"uri": "skill://pdf-tools/SKILL.md"})["contents"][0]
    assert text["text"].encode() == (root / "SKILL.md").read_bytes() and text["mimeType"] == "text/markdown"
    blob = client.request("resources/read", {"uri": "skill://pdf-tools/assets/logo.bin"})["contents"][0]
    assert base64.b64decode(blob["blob"]) == bytes(range(256))
    with pytest.raises(RpcError) as missing:
        client.request("resources/read", {"uri": "skill://pdf-tools/references/NOPE.md"})
    assert missing.value.code == -32602


def test_get_and_unknown_uri_both_eras(tmp_path: Path) -> None:
    server, _ = _served(tmp_path)
    for era in ("2026-07-28", "2025-11-25"):
        client = server.test_client(era)
        got = client.request("skills/get", {"uri": "skill://zip-tools/SKILL.md"})
        assert got["skill"]["uri"] == "skill://zip-tools/SKILL.md" and "nextCursor" not in got
        assert ("ttlMs" in got) == (era == "2026-07-28") and ("resultType" in got) == (era == "2026-07-28")
        with pytest.raises(RpcError) as unknown:
            client.request("skills/get", {"uri": "skill://acme/nope/SKILL.md"})
        assert unknown.value.code == -32602
    legacy = server.test_client("2025-11-25")
    assert legacy.initialize_result["capabilities"]["extensions"][EXT] == {"directoryRead": True}


def test_pages_never_split_an_entry(tmp_path: Path) -> None:
    server, _ = _served(tmp_path, page_size=1)
    client = server.test_client()
    first = client.request("skills/list")
    second = client.request("skills/list", {"cursor": first["nextCursor"]})
    assert len(first["skills"]) == len(second["skills"]) == 1 and "nextCursor" not in second
    assert len(first["skills"][0]["resources"]) == 3
    with pytest.raises(RpcError) as bad:
        client.request("skills/list", {"cursor": "bogus"})
    assert bad.value.code == -32602


def test_directory_read(tmp_path: Path) -> None:
    server, _ = _served(tmp_path)
    client = server.test_client()
    rows = client.request("resources/directory/read", {"uri": "skill://pdf-tools"})["resources"]
    assert [(row["uri"], row.get("mimeType")) for row in rows] == [
        ("skill://pdf-tools/SKILL.md", "text/markdown"),
        ("skill://pdf-tools/assets", "inode/directory"),
        ("skill://pdf-tools/references", "inode/directory"),
    ]
    inner = client.request("resources/directory/read", {"uri": "skill://pdf-tools/references"})["resources"]
    assert [row["uri"] for row in inner] == ["skill://pdf-tools/references/GUIDE.md"]
    for uri in ("skill://pdf-tools/SKILL.md", "skill://pdf-tools/nope", "skill://other"):
        with pytest.raises(RpcError) as bad:
            client.request("resources/directory/read", {"uri": uri})
        assert bad.value.code == -32602


def test_directory_read_off(tmp_path: Path) -> None:
    server, _ = _served(tmp_path, directory_read=False)
    client = server.test_client()
    assert client.request("server/discover")["capabilities"]["extensions"][EXT] == {}
    with pytest.raises(RpcError) as off:
        client.request("resources/directory/read", {"uri": "skill://pdf-tools"})
    assert off.value.code == -32601


def test_no_skills_no_extension() -> None:
    client = Server("plain").test_client()
    assert EXT not in client.request("server/discover")["capabilities"].get("extensions", {})
    with pytest.raises(RpcError) as unknown:
        client.request("skills/list")
    assert unknown.value.code == -32601


def test_invalid_skill_refused_with_findings(tmp_path: Path) -> None:
    root = make_skill(tmp_path, "good-name")
    (root / "SKILL.md").write_text("---\nname: Bad_Name\ndescription: x\n---\n\nbody\n")
    server = Server("refuses")
    with pytest.raises(SkillRejected) as refused:
        server.skills(root)
    assert any("Bad_Name" in finding for finding in refused.value.findings), refused.value.findings
    assert not server.has("resources")  # nothing of it is served


def test_limits_refused_at_registration(tmp_path: Path) -> None:
    many = {f"refs/f{i}.txt": b"x" for i in range(512)}
    with pytest.raises(SkillRejected, match="more than 512 files"):
        Server("limits").skills(make_skill(tmp_path, "many-files", files=many))
    big = make_skill(tmp_path, "big-files", files={"assets/a.bin": bytes(9 << 20), "assets/b.bin": bytes(8 << 20)})
    with pytest.raises(SkillRejected, match="16777216-byte"):
        Server("limits").skills(big)


def test_digests_follow_the_files_without_rereading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server, root = _served(tmp_path)
    client = server.test_client()
    reads: list[str] = []
    real = skill_tree.read_bytes

    def counting(path: Any, **options: Any) -> bytes:
        reads.append(str(path))
        return real(path, **options)

    monkeypatch.setattr(skill_tree, "read_bytes", counting)
    client.request("skills/list")
    client.request("skills/get", {"uri": "skill://pdf-tools/SKILL.md"})
    assert reads == []  # unchanged files are never re-read to answer a listing
    (root / "references" / "GUIDE.md").write_bytes(b"# Guide\n\nStep one, changed.\n")
    (root / "references" / "NEW.md").write_bytes(b"new\n")
    entry = client.request("skills/get", {"uri": "skill://pdf-tools/SKILL.md"})["skill"]
    files = {r["uri"]: r for r in entry["resources"]}
    assert files["skill://pdf-tools/references/GUIDE.md"]["digest"] == _digest(b"# Guide\n\nStep one, changed.\n")
    assert files["skill://pdf-tools/references/NEW.md"]["size"] == 4
    listed = {row["uri"] for row in client.request("resources/list")["resources"]}
    assert "skill://pdf-tools/references/NEW.md" in listed
    (root / "references" / "NEW.md").unlink()
    client.request("skills/list")
    listed = {row["uri"] for row in client.request("resources/list")["resources"]}
    assert "skill://pdf-tools/references/NEW.md" not in listed


def test_prefix_and_duplicates(tmp_path: Path) -> None:
    root = make_skill(tmp_path)
    server = Server("prefixed")
    assert server.skills(root, prefix="acme/docs") == ["skill://acme/docs/pdf-tools/SKILL.md"]
    with pytest.raises(SkillRejected, match="already served"):
        server.skills(root, prefix="acme/docs")
    with pytest.raises(ValueError, match="prefix"):
        server.skills(root, prefix="/acme")


def test_entry_frontmatter_is_typed_like_yaml_core(tmp_path: Path) -> None:
    root = make_skill(tmp_path)
    text = (root / "SKILL.md").read_text().replace("  owner: tests\n", "  owner: tests\n  revision: 3\n")
    (root / "SKILL.md").write_text(text)
    server = Server("typed", skills=[root])
    entry = server.test_client().request("skills/get", {"uri": "skill://pdf-tools/SKILL.md"})["skill"]
    assert entry["frontmatter"]["metadata"] == {"owner": "tests", "revision": 3}


def test_a_new_description_is_listed(tmp_path: Path) -> None:
    root = make_skill(tmp_path)
    server = Server("edits", skills=[root])
    client = server.test_client()
    skill_md = root / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace("Do not use for anything else.", "Do not use for PDFs."))
    entry = client.request("skills/get", {"uri": "skill://pdf-tools/SKILL.md"})["skill"]
    assert entry["frontmatter"]["description"].endswith("Do not use for PDFs.")
    rows = {row["uri"]: row for row in client.request("resources/list")["resources"]}
    assert rows["skill://pdf-tools/SKILL.md"]["description"].endswith("Do not use for PDFs.")


def test_a_taken_resource_uri_refuses_the_skill_whole(tmp_path: Path) -> None:
    server = Server("taken")
    server.add_resource("skill://pdf-tools/references/GUIDE.md", lambda: "mine", name="mine")
    with pytest.raises(SkillRejected, match=r"GUIDE\.md is already served"):
        server.skills(make_skill(tmp_path))
    assert [row.uri for row in server.listing("resources")] == ["skill://pdf-tools/references/GUIDE.md"]


def test_version_control_and_bytecode_caches_are_not_part_of_a_skill(tmp_path: Path) -> None:
    root = make_skill(tmp_path / "skills", files={"scripts/run.py": b"print('x')\n",
                                                  "scripts/__pycache__/run.cpython-311.pyc": b"bytecode",
                                                  ".git/HEAD": b"ref: refs/heads/main\n"})
    client = Server("skills-test", skills=[tmp_path / "skills"]).test_client()
    (entry,) = client.request("skills/list")["skills"]
    served = sorted(r["uri"].removeprefix("skill://pdf-tools/") for r in entry["resources"])
    assert served == ["SKILL.md", "references/GUIDE.md", "scripts/run.py"]
    assert (root / "scripts" / "__pycache__").is_dir()
