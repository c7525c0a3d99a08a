"""Hostile files: `skill validate` / `skill install` (and the plugin, gateway readers) on /dev/zero, FIFOs,
sparse giants and symlinks out are refused fast, at bounded memory, with a rule id, and nothing is installed.

Each command runs in a fresh measuring process that runs the CLI as its own child under an address-space
cap (so the old, unbounded code fails fast instead of eating the machine) and reports the child's wall time
and peak RSS (getrusage RUSAGE_CHILDREN ru_maxrss).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_agent_kit.gateway.config import ConfigError, load_config
from mcp_agent_kit.safefile import UnsafeFileError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                                reason="needs POSIX FIFOs and /dev/zero")

# a hang or a read of the whole file shows as tens of seconds; a loaded 2-core machine takes a few to start Python
MAX_SECONDS, MAX_RSS_MB = 10.0, 100
MEASURE = """
import json, resource, subprocess, sys, time
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
start = time.monotonic()
try:
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=5, preexec_fn=cap)
    code, out = done.returncode, done.stdout + done.stderr
except subprocess.TimeoutExpired as exc:
    code, out = "timeout", str(exc)
elapsed = time.monotonic() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": code, "out": out, "seconds": elapsed,
                  "rss_mb": rss / (1 << 20) if sys.platform == "darwin" else rss / 1024}))
"""
GOOD = "---\nname: {name}\ndescription: Use when testing. Do not use for production.\n---\n# Use\n\nCall it.\n"


def measured(*argv: str) -> dict[str, object]:
    """Run `python -m mcp_agent_kit.packaging.cli ARGV` measured; its code, output, seconds and peak RSS."""
    command = [sys.executable, "-c", MEASURE, sys.executable, "-m", "mcp_agent_kit.packaging.cli", *argv]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def skill(tmp_path: Path, name: str = "demo") -> Path:
    root = tmp_path / "src" / name
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text(GOOD.format(name=name))
    return root


def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the skill\n")
    return secret


def hostile_skill_md(kind: str, root: Path, tmp_path: Path) -> None:
    md = root / "SKILL.md"
    md.unlink()
    if kind == "dev-zero":
        md.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(md)
    elif kind == "sparse":
        md.write_text(GOOD.format(name=root.name))
        os.truncate(md, 200 << 20)  # 200 MB apparent size, no real disk use
    elif kind == "outside":
        md.symlink_to(outside(tmp_path))


def hostile_entry(kind: str, root: Path, tmp_path: Path) -> None:
    (root / "references").mkdir()
    if kind == "outside-file":
        (root / "references" / "data.md").symlink_to(outside(tmp_path))
    elif kind == "outside-dir":
        (root / "references" / "up").symlink_to(tmp_path)
    elif kind == "fifo-entry":
        os.mkfifo(root / "references" / "pipe")
    elif kind == "dev-zero-entry":
        (root / "references" / "zero").symlink_to("/dev/zero")


SKILL_MD_CASES = {"dev-zero": "skill-md-outside", "fifo": "skill-md-special", "sparse": "skill-md-too-large",
                  "outside": "skill-md-outside"}
ENTRY_CASES = {"outside-file": "symlink-outside", "outside-dir": "symlink-outside", "fifo-entry": "special-file",
               "dev-zero-entry": "symlink-outside"}


def assert_refused(result: dict[str, object], rule: str) -> None:
    assert result["code"] == 1, result
    assert f"[{rule}]" in str(result["out"]), result
    assert float(str(result["seconds"])) < MAX_SECONDS, result
    assert float(str(result["rss_mb"])) < MAX_RSS_MB, result


@pytest.mark.parametrize("kind", sorted(SKILL_MD_CASES))
@pytest.mark.parametrize("given", ["dir", "file"])
def test_validate_refuses_a_hostile_skill_md(tmp_path: Path, kind: str, given: str) -> None:
    root = skill(tmp_path)
    hostile_skill_md(kind, root, tmp_path)
    result = measured("skill", "validate", str(root if given == "dir" else root / "SKILL.md"))
    assert_refused(result, SKILL_MD_CASES[kind])
    assert "Invalid skill" in str(result["out"])


@pytest.mark.parametrize("kind", sorted(ENTRY_CASES))
def test_validate_refuses_special_files_and_symlinks_out_as_errors(tmp_path: Path, kind: str) -> None:
    root = skill(tmp_path)
    hostile_entry(kind, root, tmp_path)
    result = measured("skill", "validate", "--json", str(root))
    assert result["code"] == 1, result
    report = json.loads(str(result["out"]))
    assert [e["rule"] for e in report["skills"][0]["errors"]] == [ENTRY_CASES[kind]], report


@pytest.mark.parametrize("kind", sorted(SKILL_MD_CASES) + sorted(ENTRY_CASES))
def test_install_refuses_and_installs_nothing(tmp_path: Path, kind: str) -> None:
    root = skill(tmp_path)
    (hostile_skill_md if kind in SKILL_MD_CASES else hostile_entry)(kind, root, tmp_path)
    dest = tmp_path / "installed"
    dest.mkdir()
    result = measured("skill", "install", str(root), "--out", str(dest))
    assert_refused(result, {**SKILL_MD_CASES, **ENTRY_CASES}[kind])
    assert list(dest.iterdir()) == []


def test_install_copies_an_inside_symlink_as_a_regular_file(tmp_path: Path) -> None:
    root = skill(tmp_path)
    (root / "references").mkdir()
    (root / "references" / "guide.md").write_text("the guide\n")
    (root / "references" / "alias.md").symlink_to("guide.md")
    dest = tmp_path / "installed"
    result = measured("skill", "install", str(root), "--out", str(dest))
    assert result["code"] == 0, result
    copied = dest / "demo" / "references" / "alias.md"
    assert not copied.is_symlink() and copied.read_text() == "the guide\n"
    assert not any(p.is_symlink() for p in (dest / "demo").rglob("*"))


def test_the_copy_rechecks_what_it_opens(tmp_path: Path) -> None:
    """A tree that changed after validation: the copier refuses on its own, with the rule id."""
    from mcp_agent_kit.packaging.fsutil import copy_safe_tree

    root = skill(tmp_path)
    (root / "leak.md").symlink_to(outside(tmp_path))
    with pytest.raises(UnsafeFileError) as caught:
        copy_safe_tree(root, tmp_path / "copy")
    assert caught.value.rule == "symlink-outside"


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race between resolving a path and opening it: `sub` was a directory inside the root when
    the path was checked, and is a symlink to outside by the time it is opened. Every component is
    opened with O_NOFOLLOW from the root's descriptor, so the outside file is never read."""
    from mcp_agent_kit import safefile

    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (elsewhere / "f.md").write_text("outside secret")
    (root / "sub").symlink_to(elsewhere, target_is_directory=True)
    checked = {str(root / "sub" / "f.md"): str(root / "sub" / "f.md"), str(root): str(root)}
    monkeypatch.setattr(safefile.os.path, "realpath", lambda p: checked.get(os.fspath(p), os.fspath(p)))
    with pytest.raises(UnsafeFileError) as caught:
        safefile.read_text(root / "sub" / "f.md", root=root)
    assert caught.value.rule == "symlink-outside"
    (root / "real").mkdir()
    (root / "real" / "g.md").write_text("inside")
    assert safefile.read_text(root / "real" / "g.md", root=root) == "inside"


def plugin(tmp_path: Path) -> Path:
    root = tmp_path / "plug"
    root.mkdir()
    manifest = {"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "plug"}
    (root / "plugin.json").write_text(json.dumps(manifest))
    return root


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "sparse"])
def test_plugin_validate_refuses_a_hostile_manifest_fast(tmp_path: Path, kind: str) -> None:
    root = plugin(tmp_path)
    manifest = root / "plugin.json"
    if kind == "fifo":
        manifest.unlink()
        os.mkfifo(manifest)
    elif kind == "dev-zero":
        manifest.unlink()
        manifest.symlink_to("/dev/zero")
    else:
        os.truncate(manifest, 200 << 20)
    result = measured("plugin", "validate", str(root))
    assert result["code"] == 1 and float(str(result["seconds"])) < MAX_SECONDS, result
    assert float(str(result["rss_mb"])) < MAX_RSS_MB and "Invalid plugin" in str(result["out"]), result


def test_plugin_walk_fails_on_a_fifo(tmp_path: Path) -> None:
    root = plugin(tmp_path)
    os.mkfifo(root / "pipe")
    result = measured("plugin", "validate", "--json", str(root))
    report = json.loads(str(result["out"]))
    assert report["package"] == "invalid" and any("FIFO" in e["message"] for e in report["errors"]), report


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "sparse"])
def test_gateway_config_refuses_special_and_huge_files(tmp_path: Path, kind: str) -> None:
    config = tmp_path / "servers.json"
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "dev-zero":
        config.symlink_to("/dev/zero")
    else:
        config.write_text('{"mcpServers": {}}')
        os.truncate(config, 200 << 20)
    code = f"from mcp_agent_kit.gateway.config import load_config\nload_config({str(config)!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10)
    assert "ConfigError: cannot read" in done.stderr, done.stderr
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(config))


def test_plugin_build_refuses_an_include_or_skill_with_a_symlink_out(tmp_path: Path) -> None:
    from mcp_agent_kit.packaging.plugin_build import BuildError, PluginSpec, build_plugin

    secret = tmp_path / "secret.txt"
    secret.write_text("outside\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n")
    (docs / "leak.md").symlink_to(secret)
    out = tmp_path / "pkg"
    spec = PluginSpec(name="demo", description="A demo plugin.", url="http://127.0.0.1:8000/mcp", include=[docs])
    with pytest.raises(BuildError, match="symlink"):
        build_plugin(spec, out)
    assert not out.exists()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(BuildError, match="not a regular file"):
        build_plugin(PluginSpec(name="demo", url="http://127.0.0.1:8000/mcp", include=[fifo]), out)
    assert not out.exists()
    (docs / "leak.md").unlink()
    assert (build_plugin(spec, out) / "docs" / "guide.md").read_text() == "# Guide\n"
