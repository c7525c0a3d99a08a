"""The gateway merges its backends' skills (SEP-2640) under per-backend URIs: two backends' skills
of the same name are both served, each resolves to its own origin, and a host verifies the bytes
end to end against the digests the origin published."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp_agent_kit.gateway import Gateway, parse_config
from tests.net import gateway_args
from tests.skills.helpers import make_skill

SERVE = "import sys\nfrom mcp_agent_kit import Server\nServer('backend', skills=[sys.argv[1]]).run([])\n"


def test_same_named_skills_resolve_per_origin(tmp_path: Path) -> None:
    script = tmp_path / "serve.py"
    script.write_text(SERVE)
    servers = {}
    for alias, body in (("alpha", b"# Guide\n\nalpha's way.\n"), ("beta", b"# Guide\n\nbeta's way, longer.\n")):
        make_skill(tmp_path / alias, files={"references/GUIDE.md": body})
        servers[alias] = {"command": sys.executable, "args": [str(script), str(tmp_path / alias)]}
    gateway = Gateway(parse_config({"mcpServers": servers}), timeout=10.0)
    try:
        gateway.start(follow=False)
        client = gateway.server.test_client()
        caps = client.request("server/discover")["capabilities"]
        assert caps["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}
        listed = client.request("skills/list")["skills"]
        assert [entry["uri"] for entry in listed] == ["skill://alpha/pdf-tools/SKILL.md",
                                                      "skill://beta/pdf-tools/SKILL.md"]
        for entry, alias in zip(listed, ("alpha", "beta"), strict=True):
            origin = {row["uri"].removeprefix(f"skill://{alias}/"): row for row in entry["resources"]}
            local = tmp_path / alias / "pdf-tools"
            assert entry["frontmatter"]["name"] == "pdf-tools"
            for rel in ("SKILL.md", "references/GUIDE.md"):
                row = origin[f"pdf-tools/{rel}"]
                assert row["size"] == (local / rel).stat().st_size  # the origin's own digest and size
                read = client.request("resources/read", {"uri": row["uri"]})["contents"][0]
                assert read["uri"] == row["uri"] and read["text"].encode() == (local / rel).read_bytes()
        dirs = client.request("resources/directory/read", {"uri": "skill://beta/pdf-tools"})["resources"]
        assert {row["uri"] for row in dirs} == {"skill://beta/pdf-tools/SKILL.md", "skill://beta/pdf-tools/references"}
    finally:
        gateway.close()


def test_a_host_verifies_through_the_gateway(tmp_path: Path) -> None:
    from mcp_agent_kit.client.client import Client

    script = tmp_path / "serve.py"
    script.write_text(SERVE)
    make_skill(tmp_path / "docs")
    config = tmp_path / "gateway.json"
    servers = {"docs": {"command": sys.executable, "args": [str(script), str(tmp_path / "docs")]}}
    config.write_text(json.dumps({"mcpServers": servers}))
    with Client.stdio(sys.executable, gateway_args(config), timeout=60) as client:
        (entry,) = client.list_skills()
        assert entry["uri"] == "skill://docs/pdf-tools/SKILL.md"
        assert client.read_skill_file(entry["uri"]).startswith(b"---\nname: pdf-tools\n")
        guide = client.read_skill_file("skill://docs/pdf-tools/references/GUIDE.md")
        assert guide == (tmp_path / "docs" / "pdf-tools" / "references" / "GUIDE.md").read_bytes()
