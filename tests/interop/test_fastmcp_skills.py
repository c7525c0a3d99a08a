"""Interop: Skills over MCP (SEP-2640) with FastMCP 4.2.3, a peer we did not write, both directions.

FastMCP's client (`Client(extensions=[SkillsClientExtension()])`, whose `read_skill` checks every
file's size and digest and the frontmatter against the entry) lists and reads a generated
project's skill over stdio; our Client lists and reads, verified, the skills a FastMCP server
(`SkillsDirectoryProvider`) serves from examples/skills. FastMCP speaks the extension on
2026-07-28 only, so these runs are on the stateless era.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp_agent_kit.client.client import Client
from tests.pinned import require

ROOT = Path(__file__).resolve().parents[2]
FASTMCP = "fastmcp==4.2.3"


def fastmcp() -> None:
    """FastMCP at its pinned version; a missing or other version FAILS (it is a pinned test peer)."""
    module = require("fastmcp", FASTMCP)
    assert module.__version__ == FASTMCP.partition("==")[2], module.__version__
FASTMCP_CLIENT = """
import asyncio, json, sys
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills import SkillsClientExtension

async def main():
    transport = StdioTransport(command=sys.executable, args=["server.py"], cwd=sys.argv[1])
    async with Client(transport, extensions=[SkillsClientExtension()]) as client:
        entries = await client.list_skills()
        skill = await client.read_skill(entries[0].uri)
        files = {path: data.decode() for path, data in skill.files.items()}
        print(json.dumps({"protocol": client.protocol_version, "uris": [e.uri for e in entries],
                          "name": skill.name, "files": files}))

asyncio.run(main())
"""
FASTMCP_SERVER = """
import sys
from pathlib import Path
from fastmcp import FastMCP
from fastmcp.skills.provider import SkillsDirectoryProvider

server = FastMCP("fastmcp-skills")
server.add_provider(SkillsDirectoryProvider(Path(sys.argv[1])))
server.run(show_banner=False)
"""


def test_fastmcp_client_reads_a_generated_projects_skill(tmp_path: Path) -> None:
    import json

    from mcp_agent_kit.scaffold.cli import main_new

    fastmcp()
    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 0
    project = tmp_path / "demo-agent"
    script = tmp_path / "fastmcp_client.py"
    script.write_text(FASTMCP_CLIENT)
    done = subprocess.run([sys.executable, str(script), str(project)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["protocol"] == "2026-07-28" and report["uris"] == ["skill://demo-agent/SKILL.md"]
    skill_md = (project / "skills" / "demo-agent" / "SKILL.md").read_text(encoding="utf-8")
    assert report["name"] == "demo-agent" and report["files"] == {"SKILL.md": skill_md}


def test_our_client_reads_skills_a_fastmcp_server_serves(tmp_path: Path) -> None:
    fastmcp()
    script = tmp_path / "fastmcp_server.py"
    script.write_text(FASTMCP_SERVER)
    skills_dir = ROOT / "examples" / "skills"
    with Client.stdio(sys.executable, [str(script), str(skills_dir)], timeout=30) as client:
        entries = client.list_skills()
        assert [entry["uri"] for entry in entries] == ["skill://csv-report/SKILL.md", "skill://release-notes/SKILL.md"]
        assert client.skills.declined == {}
        for entry in entries:
            root = entry["uri"].removesuffix("SKILL.md")
            local = skills_dir / entry["frontmatter"]["name"]
            assert client.read_skill_file(entry["uri"]) == (local / "SKILL.md").read_bytes()  # loads the skill
            for resource in entry["resources"]:
                on_disk = (local / resource["uri"].removeprefix(root)).read_bytes()
                assert client.read_skill_file(resource["uri"]) == on_disk
        assert client.skills.loaded == {entry["uri"] for entry in entries}
