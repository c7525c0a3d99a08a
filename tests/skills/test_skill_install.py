"""`skill install --from-server`: from a generated project (checked by skills-ref), refusals that
write nothing (tampered digest, wrong size, traversal URIs, strict validator), --force, --list, HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.net import serving
from tests.skills.helpers import make_skill

ROOT = Path(__file__).resolve().parents[2]
# A kit server that lies in its entries the way a hostile or broken server would.
HOSTILE = '''
import sys
from mcp_agent_kit import Server
from mcp_agent_kit.core import skill_tree
mode = sys.argv[2]
honest = skill_tree.SkillTree.entry

def entry(self):
    served = honest(self)
    for row in served["resources"]:
        if row["uri"].endswith("GUIDE.md") and mode == "digest":
            row["digest"] = "sha256:" + "0" * 64
        if row["uri"].endswith("GUIDE.md") and mode == "size":
            row["size"] += 1
    if mode.startswith("uri:"):
        served["resources"].append({"uri": mode[4:], "digest": "sha256:" + "0" * 64, "size": 1})
    return served

skill_tree.SkillTree.entry = entry
Server("hostile", skills=[sys.argv[1]]).run([])
'''
SERVE = "import sys\nfrom mcp_agent_kit import Server\nServer('s', skills=[sys.argv[1]]).run(sys.argv[2:])\n"


def install(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", "skill", "install", *args],
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def nothing_written(dest: Path) -> bool:
    return not dest.exists() or not any(dest.iterdir())


def test_installs_a_generated_projects_skill(tmp_path: Path) -> None:
    from mcp_agent_kit.scaffold.cli import main_new
    from tests.packaging.conftest import load_oracle

    assert main_new(["--no-install", "demo-agent", "--dir", str(tmp_path)]) == 0
    project = tmp_path / "demo-agent"
    dest = tmp_path / "installed"
    listed = install("--from-server", "--list", "--", sys.executable, "server.py", cwd=project)
    assert listed.returncode == 0 and listed.stdout.startswith("demo-agent\tskill://demo-agent/SKILL.md\t"), listed
    done = install("--from-server", "demo-agent", "--dest", str(dest), "--", sys.executable, "server.py", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "Installed skill 'demo-agent' from skill://demo-agent/SKILL.md" in done.stdout
    source = project / "skills" / "demo-agent"
    assert (dest / "demo-agent" / "SKILL.md").read_bytes() == (source / "SKILL.md").read_bytes()
    assert load_oracle().validate(dest / "demo-agent") == []
    assert sorted(p.name for p in dest.iterdir()) == ["demo-agent"]  # no temporary directory left behind
    again = install("--from-server", "demo-agent", "--dest", str(dest), "--", sys.executable, "server.py", cwd=project)
    assert again.returncode == 1 and "already exists" in again.stderr and len(again.stderr.splitlines()) == 1
    forced = install("--from-server", "demo-agent", "--dest", str(dest), "--force", "--",
                     sys.executable, "server.py", cwd=project)
    assert forced.returncode == 0, forced.stderr


@pytest.mark.parametrize(("mode", "message"), [
    ("digest", "digest does not match"),
    ("size", "bytes read, the entry says"),
    ("uri:skill://pdf-tools/../../escape.txt", "'..'"),
    ("uri:skill://pdf-tools/%2e%2e/%2e%2e/escape.txt", "'%'"),
    ("uri:skill://pdf-tools/references\\..\\..\\escape.txt", "'\\\\\\\\'"),
    ("uri:skill://pdf-tools//etc/passwd", "'//'"),
    ("uri:skill://elsewhere/escape.txt", "is not inside the skill"),
])
def test_refusals_write_nothing(tmp_path: Path, mode: str, message: str) -> None:
    make_skill(tmp_path / "skills")
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    dest = tmp_path / "dest"
    done = install("--from-server", "pdf-tools", "--dest", str(dest), "--",
                   sys.executable, str(script), str(tmp_path / "skills"), mode)
    assert done.returncode == 1, done.stdout + done.stderr
    assert message.replace("\\\\", "\\") in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and nothing_written(dest)


def test_the_strict_validator_has_the_last_word(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    root = make_skill(skills)
    text = (root / "SKILL.md").read_text().replace("Use when a test needs the pdf-tools skill. Do not use for anything "
                                                    "else.", "Reads PDF files for tests.")
    (root / "SKILL.md").write_text(text)
    script = tmp_path / "serve.py"
    script.write_text(SERVE)
    dest = tmp_path / "dest"
    done = install("--from-server", "pdf-tools", "--dest", str(dest), "--", sys.executable, str(script), str(skills))
    assert done.returncode == 1 and "strict validator rejects it" in done.stderr, done.stderr
    assert "Use when X. Do not use for Y." in done.stderr and nothing_written(dest)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    make_skill(tmp_path / "skills")
    script = tmp_path / "serve.py"
    script.write_text(SERVE)
    with serving(lambda port: [sys.executable, str(script), str(tmp_path / "skills"), "--http", f"127.0.0.1:{port}"],
                 "http://127.0.0.1:{port}/mcp", stderr=subprocess.DEVNULL) as url:
        yield url


def test_from_url(http_server: str, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    done = install("--from-url", http_server, "pdf-tools", "--dest", str(dest))
    assert done.returncode == 0, done.stderr
    assert (dest / "pdf-tools" / "references" / "GUIDE.md").read_bytes() == b"# Guide\n\nStep one.\n"


@pytest.mark.parametrize(("args", "needle"), [
    (["--from-server", "x"], "needs the server"),
    (["--from-server", "--"], "nothing after --"),
    (["--from-server", "--", sys.executable, "-c", "pass"], "name the skill"),
    (["--list"], "--list lists a server's skills"),
    (["--from-server", "x", "--", str(ROOT / "no-such-program")], "cannot reach the server"),
])
def test_cli_mistakes_are_one_line(args: list[str], needle: str) -> None:
    done = install(*args)
    assert done.returncode in (1, 2) and needle in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
