"""Agent Plugins 1.0.0 packages, good and bad, with the expected verdict per component.

Every case starts from one good package and mutates it; symlinks are made at test time.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.packaging import plugin_validate
from mcp_agent_kit.packaging.plugin_validate import MCP_SCHEMA, PLUGIN_SCHEMA, validate_plugin

SKILL = "---\nname: {name}\ndescription: Use when greeting. Do not use for farewells.\n---\nHi.\n"


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


def edit_json(path: Path, change: Callable[[Any], None]) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    change(value)
    write_json(path, value)


def add_skill(root: Path, name: str, text: str | None = None) -> None:
    (root / "skills" / name).mkdir(parents=True)
    (root / "skills" / name / "SKILL.md").write_text(text or SKILL.format(name=name))


def make_base(root: Path) -> None:
    write_json(
        root / "plugin.json",
        {
            "$schema": PLUGIN_SCHEMA,
            "name": "demo",
            "version": "1.0.0",
            "author": {"name": "A", "email": "a@example.com"},
        },
    )
    add_skill(root, "greet")
    add_skill(root, "wave")
    (root / "bin").mkdir()
    (root / "bin" / "server").write_text("#!/bin/sh\n")
    os.chmod(root / "bin" / "server", 0o755)
    write_json(
        root / "mcp.json",
        {
            "$schema": MCP_SCHEMA,
            "mcpServers": {
                "local": {
                    "type": "stdio",
                    "command": "./bin/server",
                    "args": ["--data", "${PLUGIN_DATA}"],
                },
                "remote": {"type": "streamable-http", "url": "https://mcp.example.com/mcp"},
            },
        },
    )


def manifest(change: Callable[[dict[str, Any]], None]) -> Callable[[Path, Path], None]:
    return lambda root, _out: edit_json(root / "plugin.json", change)


def server(entry: dict[str, Any]) -> Callable[[Path, Path], None]:
    """Add a server named 'extra' with the given entry."""
    return lambda root, _out: edit_json(
        root / "mcp.json", lambda v: v["mcpServers"].__setitem__("extra", entry)
    )


def mcp(change: Callable[[dict[str, Any]], None]) -> Callable[[Path, Path], None]:
    return lambda root, _out: edit_json(root / "mcp.json", change)


def symlink(link: str, target: Callable[[Path, Path], Path]) -> Callable[[Path, Path], None]:
    def apply(root: Path, out: Path) -> None:
        path = root / link
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target(root, out))

    return apply


def steps(*fns: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def apply(root: Path, out: Path) -> None:
        for fn in fns:
            fn(root, out)

    return apply


def write(rel: str, text: str) -> Callable[[Path, Path], None]:
    def apply(root: Path, _out: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)

    return apply


def remove(rel: str) -> Callable[[Path, Path], None]:
    def apply(root: Path, _out: Path) -> None:
        path = root / rel
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()

    return apply


OUT_DIR = lambda root, out: out  # noqa: E731
OUT_SERVER = lambda root, out: out / "server"  # noqa: E731
OUT_SKILL = lambda root, out: out / "greet"  # noqa: E731
OUT_SKILL_MD = lambda root, out: out / "greet" / "SKILL.md"  # noqa: E731


@dataclass(frozen=True)
class Case:
    label: str
    mutate: Callable[[Path, Path], None]
    expect: dict[str, Any] = field(default_factory=dict)
    valid: bool = False
    rule: str | None = None


ALL_OK = {
    "plugin": "ok",
    "skills_component": "ok",
    "skills": {"greet": "ok", "wave": "ok"},
    "mcp_component": "ok",
    "servers": {"local": "ok", "remote": "ok"},
    "package": "ok",
}
REJECTED = {"plugin": "rejected", "skills_component": "ok", "mcp_component": "ok"}
SKIP_EXTRA = {
    "plugin": "ok",
    "mcp_component": "ok",
    "servers": {"local": "ok", "remote": "ok", "extra": "skipped"},
}

CASES: list[Case] = [
    # -- good packages
    Case("base", lambda r, o: None, ALL_OK, valid=True),
    Case(
        "manifest-only",
        steps(remove("skills"), remove("mcp.json")),
        {"skills_component": "absent", "mcp_component": "absent"},
        valid=True,
    ),
    Case("dotted-name", manifest(lambda m: m.update(name="acme.tools")), ALL_OK, valid=True),
    Case(
        "unknown-key-ignored",
        manifest(lambda m: m.update(commands="./cmds")),
        ALL_OK,
        valid=True,
        rule="manifest-unknown-key",
    ),
    Case(
        "extensions-not-object",
        manifest(lambda m: m.update(extensions=[1])),
        ALL_OK,
        valid=True,
        rule="manifest-extensions",
    ),
    Case(
        "inside-symlink",
        symlink("skills/greet/extra.md", lambda r, o: r / "plugin.json"),
        ALL_OK,
        valid=True,
    ),
    Case("git-dir-skipped", symlink(".git/evil", OUT_DIR), ALL_OK, valid=True),
    Case(
        "loopback-http",
        server(
            {
                "type": "streamable-http",
                "url": "http://127.0.0.1:8080/mcp",
                "headers": {"X-Tenant": "t"},
            }
        ),
        {"servers": {"local": "ok", "remote": "ok", "extra": "ok"}},
        valid=True,
    ),
    Case(
        "localhost-ipv6",
        server({"type": "sse", "url": "http://[::1]/sse"}),
        {"servers": {"local": "ok", "remote": "ok", "extra": "ok"}},
        valid=True,
    ),
    Case(
        "data-cwd-env",
        server(
            {
                "type": "stdio",
                "command": "python3",
                "cwd": "${PLUGIN_DATA}/c",
                "env": {"CONF": "${PLUGIN_ROOT}/x"},
            }
        ),
        {"servers": {"local": "ok", "remote": "ok", "extra": "ok"}},
        valid=True,
    ),
    Case(
        "root-cwd",
        server({"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT}"}),
        {"servers": {"local": "ok", "remote": "ok", "extra": "ok"}},
        valid=True,
    ),
    Case(
        "flat-skill-file-ignored",
        write("skills/my_agent.md", "# no"),
        ALL_OK,
        valid=True,
        rule="skill-flat-file",
    ),
    # -- manifest: the whole plugin is rejected
    Case("no-manifest", remove("plugin.json"), REJECTED),
    Case(
        "schema-1.1.0",
        manifest(lambda m: m.update({"$schema": PLUGIN_SCHEMA.replace("1.0.0", "1.1.0")})),
        REJECTED,
    ),
    Case("uppercase-name", manifest(lambda m: m.update(name="My-Plugin")), REJECTED),
    Case("double-dot-name", manifest(lambda m: m.update(name="too.many..dots")), REJECTED),
    Case("author-string", manifest(lambda m: m.update(author="Me")), REJECTED),
    Case(
        "author-extra-key", manifest(lambda m: m.update(author={"name": "a", "x": "y"})), REJECTED
    ),
    Case("keywords-string", manifest(lambda m: m.update(keywords="a,b")), REJECTED),
    Case("version-number", manifest(lambda m: m.update(version=1)), REJECTED),
    Case("extension-value", manifest(lambda m: m.update(extensions={"com.x.y": 1})), REJECTED),
    Case("manifest-bad-json", write("plugin.json", "{"), REJECTED),
    Case(
        "manifest-duplicate-key",
        write(
            "plugin.json",
            json.dumps({"$schema": PLUGIN_SCHEMA, "name": "a"})[:-1] + ', "name": "b"}',
        ),
        REJECTED,
    ),
    Case(
        "manifest-symlink-out",
        steps(
            lambda r, o: write_json(o / "plugin.json", {"$schema": PLUGIN_SCHEMA, "name": "x"}),
            symlink("plugin.json", lambda r, o: o / "plugin.json"),
        ),
        {**REJECTED, "package": "invalid"},
    ),
    # -- skills/: component invalid, or one skill skipped
    Case(
        "skills-is-file",
        steps(remove("skills"), write("skills", "x")),
        {"plugin": "ok", "skills_component": "invalid", "mcp_component": "ok"},
    ),
    Case(
        "skills-symlink-out",
        symlink("skills", OUT_DIR),
        {"skills_component": "invalid", "mcp_component": "ok", "package": "invalid"},
    ),
    Case(
        "skill-name-mismatch",
        write("skills/wave/SKILL.md", SKILL.format(name="hello")),
        {"skills_component": "ok", "skills": {"greet": "ok", "wave": "skipped"}},
    ),
    Case(
        "skill-md-symlink-out",
        symlink("skills/wave/SKILL.md", OUT_SKILL_MD),
        {"skills": {"greet": "ok", "wave": "skipped"}, "package": "invalid"},
    ),
    Case(
        "skill-dir-symlink-out",
        symlink("skills/wave", OUT_SKILL),
        {"skills": {"greet": "ok", "wave": "skipped"}, "package": "invalid"},
    ),
    # -- mcp.json: MCP disabled, skills still load
    Case(
        "mcp-bad-json",
        write("mcp.json", "{nope"),
        {"plugin": "ok", "skills_component": "ok", "mcp_component": "invalid"},
    ),
    Case(
        "mcp-other-version",
        mcp(lambda v: v.update({"$schema": MCP_SCHEMA.replace("1.0.0", "1.1.0")})),
        {"skills_component": "ok", "mcp_component": "invalid"},
    ),
    Case("mcp-extra-key", mcp(lambda v: v.update(servers={})), {"mcp_component": "invalid"}),
    Case("mcp-servers-array", mcp(lambda v: v.update(mcpServers=[])), {"mcp_component": "invalid"}),
    Case(
        "mcp-is-dir",
        steps(remove("mcp.json"), lambda r, o: (r / "mcp.json").mkdir()),
        {"skills_component": "ok", "mcp_component": "invalid"},
    ),
    Case(
        "mcp-symlink-out",
        steps(
            lambda r, o: write_json(o / "mcp.json", {"$schema": MCP_SCHEMA, "mcpServers": {}}),
            symlink("mcp.json", lambda r, o: o / "mcp.json"),
        ),
        {"mcp_component": "invalid", "package": "invalid"},
    ),
    # -- one server entry skipped, siblings load
    Case("command-dotdot", server({"type": "stdio", "command": "../outside/server"}), SKIP_EXTRA),
    Case(
        "command-dot-dotdot",
        server({"type": "stdio", "command": "./../outside/server"}),
        SKIP_EXTRA,
    ),
    Case(
        "command-symlink-out",
        steps(symlink("bin/link", OUT_SERVER), server({"type": "stdio", "command": "./bin/link"})),
        {**SKIP_EXTRA, "package": "invalid"},
    ),
    Case(
        "command-shell-string", server({"type": "stdio", "command": "python3 srv.py"}), SKIP_EXTRA
    ),
    Case("command-no-dot-slash", server({"type": "stdio", "command": "bin/server"}), SKIP_EXTRA),
    Case("command-missing", server({"type": "stdio", "command": "./bin/missing"}), SKIP_EXTRA),
    Case(
        "command-placeholder",
        server({"type": "stdio", "command": "${PLUGIN_ROOT}/bin/server"}),
        SKIP_EXTRA,
    ),
    Case("cwd-bare", server({"type": "stdio", "command": "node", "cwd": "data"}), SKIP_EXTRA),
    Case(
        "cwd-escape", server({"type": "stdio", "command": "node", "cwd": "./a/../../x"}), SKIP_EXTRA
    ),
    Case(
        "cwd-data-escape",
        server({"type": "stdio", "command": "node", "cwd": "${PLUGIN_DATA}/../x"}),
        SKIP_EXTRA,
    ),
    Case(
        "cwd-root-prefix-only",
        server({"type": "stdio", "command": "node", "cwd": "${PLUGIN_ROOT}x"}),
        SKIP_EXTRA,
    ),
    Case(
        "cwd-symlink-out",
        steps(symlink("wd", OUT_DIR), server({"type": "stdio", "command": "node", "cwd": "./wd"})),
        {**SKIP_EXTRA, "package": "invalid"},
    ),
    Case(
        "env-plugin-root",
        server({"type": "stdio", "command": "node", "env": {"PLUGIN_ROOT": "/x"}}),
        SKIP_EXTRA,
    ),
    Case(
        "env-not-strings", server({"type": "stdio", "command": "node", "env": {"A": 1}}), SKIP_EXTRA
    ),
    Case("args-not-array", server({"type": "stdio", "command": "node", "args": "--x"}), SKIP_EXTRA),
    Case("type-http", server({"type": "http", "url": "https://x.example/mcp"}), SKIP_EXTRA),
    Case("type-missing", server({"command": "node"}), SKIP_EXTRA),
    Case(
        "cross-variant-key",
        server({"type": "stdio", "command": "node", "url": "https://x.y"}),
        SKIP_EXTRA,
    ),
    Case(
        "http-public",
        server({"type": "streamable-http", "url": "http://mcp.example.com/"}),
        SKIP_EXTRA,
    ),
    Case(
        "url-userinfo",
        server({"type": "streamable-http", "url": "https://u:p@x.example/"}),
        SKIP_EXTRA,
    ),
    Case(
        "url-fragment",
        server({"type": "streamable-http", "url": "https://x.example/mcp#a"}),
        SKIP_EXTRA,
    ),
    Case("url-ftp", server({"type": "sse", "url": "ftp://x.example/"}), SKIP_EXTRA),
    Case(
        "localhost-lookalike",
        server({"type": "sse", "url": "http://localhost.evil.com/"}),
        SKIP_EXTRA,
    ),
    Case(
        "header-case-duplicate",
        server(
            {
                "type": "streamable-http",
                "url": "https://x.example/",
                "headers": {"X-A": "1", "x-a": "2"},
            }
        ),
        SKIP_EXTRA,
    ),
    Case(
        "header-bad-name",
        server(
            {"type": "streamable-http", "url": "https://x.example/", "headers": {"Bad Name": "1"}}
        ),
        SKIP_EXTRA,
    ),
    # -- package walk (kagent)
    Case(
        "dangling-symlink",
        symlink("docs/gone", lambda r, o: r / "nothing-here"),
        {**ALL_OK, "package": "invalid"},
    ),
    Case(
        "symlink-out-elsewhere", symlink("docs/outside", OUT_DIR), {**ALL_OK, "package": "invalid"}
    ),
]


def test_corpus_size() -> None:
    assert len(CASES) >= 30
    assert sum(not case.valid for case in CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[case.label for case in CASES])
def test_verdicts(case: Case, tmp_path: Path) -> None:
    root, outside = tmp_path / "pkg", tmp_path / "outside"
    root.mkdir()
    (outside / "greet").mkdir(parents=True)
    (outside / "greet" / "SKILL.md").write_text(SKILL.format(name="wave"))
    (outside / "server").write_text("#!/bin/sh\n")
    os.chmod(outside / "server", 0o755)
    make_base(root)
    case.mutate(root, outside)
    report = validate_plugin(root)
    got = {
        "plugin": report.plugin,
        "skills_component": report.skills_component,
        "skills": report.skills,
        "mcp_component": report.mcp_component,
        "servers": report.servers,
        "package": report.package,
    }
    assert {k: got[k] for k in case.expect} == case.expect, [str(f) for f in report.findings]
    assert report.valid is case.valid, [str(f) for f in report.findings]
    if case.rule:
        assert case.rule in {f.rule for f in report.findings}


def test_limits_skip_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_base(tmp_path)
    for index in range(40):
        (tmp_path / ".git").mkdir(exist_ok=True)
        (tmp_path / ".git" / f"obj{index}").write_bytes(b"x" * 100)
    monkeypatch.setattr(plugin_validate, "MAX_ENTRIES", 20)
    monkeypatch.setattr(plugin_validate, "MAX_BYTES", 2000)
    assert validate_plugin(tmp_path).package == "ok"
    for index in range(12):
        (tmp_path / f"f{index}").write_text("y")
    report = validate_plugin(tmp_path)
    assert report.package == "invalid"
    assert "more than 20 filesystem entries" in " ".join(f.message for f in report.findings)
    monkeypatch.setattr(plugin_validate, "MAX_ENTRIES", 10_000)
    monkeypatch.setattr(plugin_validate, "MAX_BYTES", 10)
    report = validate_plugin(tmp_path)
    assert report.package == "invalid"
    assert "over the 10-byte limit" in " ".join(f.message for f in report.findings)


def test_report_json_shape(tmp_path: Path) -> None:
    make_base(tmp_path)
    data = validate_plugin(tmp_path).as_dict()
    assert data["valid"] is True
    assert data["skills"] == {"component": "ok", "entries": {"greet": "ok", "wave": "ok"}}
    json.dumps(data)
