"""Packaging truth: a new project installs the very kit that made it, wherever that kit came from."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from mcp_agent_kit import __version__
from mcp_agent_kit.scaffold import origin as origin_module
from mcp_agent_kit.scaffold.finish import copy_kit_wheel
from mcp_agent_kit.scaffold.names import derive
from mcp_agent_kit.scaffold.origin import Origin, find_origin
from mcp_agent_kit.scaffold.render import render_templates
from tests.net import free_port


def test_version_is_above_the_unrelated_pypi_release() -> None:
    major, minor, *_ = (int(part) for part in __version__.split("."))
    assert (major, minor) > (0, 1)


def test_this_checkout_is_seen_as_a_checkout() -> None:
    found = find_origin()
    assert found.kind == "checkout" and found.spec == ""
    assert found.local is not None and (found.local / "mcp_agent_kit" / "__init__.py").is_file()


@pytest.mark.parametrize(
    ("record", "kind", "spec"),
    [
        ({"url": "file:///tmp/kit", "dir_info": {"editable": True}}, "checkout", ""),
        ({"url": "https://example.org/k.whl", "archive_info": {}}, "url", "mcp-agent-kit @ https://example.org/k.whl"),
        ({"url": "https://example.org/kit.git", "vcs_info": {"vcs": "git", "commit_id": "ab"}}, "url",
         "mcp-agent-kit @ git+https://example.org/kit.git"),
        ({"url": "file:///nowhere/mcp_agent_kit-9-py3-none-any.whl", "archive_info": {}}, "wheel", ""),
    ],
)
def test_direct_url_records(record: dict[str, object], kind: str, spec: str) -> None:
    found = origin_module._from_direct_url(record)
    assert (found.kind, found.spec) == (kind, spec)


def rendered(found: Origin) -> dict[str, str]:
    return render_templates(derive("demo-agent"), "A demo.", found)


def test_index_origin_pins_the_floor_to_this_version() -> None:
    files = rendered(Origin("index", f"mcp-agent-kit>={__version__}"))
    assert f'dependencies = ["mcp-agent-kit>={__version__}"]' in files["pyproject.toml"]
    assert "python -m pip install -e ." in files["README.md"] and "not from PyPI" not in files["README.md"]
    assert f"'mcp-agent-kit>={__version__}'" in files[".github/workflows/ci.yml"]
    assert f'ARG MCP_AGENT_KIT_SPEC="mcp-agent-kit>={__version__}"' in files["Dockerfile"]


def test_checkout_origin_says_so_and_asks_ci_for_a_spec(tmp_path: Path) -> None:
    files = rendered(Origin("checkout", "", tmp_path))
    readme = files["README.md"]
    assert f"python -m pip install {tmp_path}" in readme and "not from PyPI" in readme
    assert "MCP_AGENT_KIT_SPEC" in readme
    workflow = files[".github/workflows/ci.yml"]
    assert "vars.MCP_AGENT_KIT_SPEC || ''" in workflow and "::error::set the repository variable" in workflow
    assert 'ARG MCP_AGENT_KIT_SPEC=""' in files["Dockerfile"]


def test_wheel_origin_copies_the_wheel_into_the_project(tmp_path: Path) -> None:
    wheel = tmp_path / f"mcp_agent_kit-{__version__}-py3-none-any.whl"
    wheel.write_bytes(b"PK\x05\x06" + bytes(18))
    found = origin_module._from_direct_url({"url": wheel.as_uri(), "archive_info": {}})
    spec = f"./wheels/{wheel.name}"
    assert (found.kind, found.spec) == ("wheel", spec)
    files = rendered(found)
    assert f'python -m pip install "{spec}"' in files["README.md"]
    assert f"'{spec}'" in files[".github/workflows/ci.yml"]
    assert f'ARG MCP_AGENT_KIT_SPEC="{spec}"' in files["Dockerfile"]
    project = tmp_path / "demo-agent"
    project.mkdir()
    copied = copy_kit_wheel(found, project)
    assert copied == project / "wheels" / wheel.name and copied.read_bytes() == wheel.read_bytes()
    copied.write_bytes(b"mine")
    copy_kit_wheel(found, project)
    assert copied.read_bytes() == b"mine"  # never over an existing file


def test_the_older_kits_a2a_command_still_serves(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "mcp_agent_kit", "new", "--no-install", "demo-agent", "--dir", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "a2a/server.py", str(port)], cwd=tmp_path / "demo-agent",
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        card = None
        deadline = time.monotonic() + 30
        while card is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/.well-known/agent-card.json", timeout=2) as r:
                    card = json.loads(r.read())
            except OSError:
                time.sleep(0.1)
        assert card is not None and [skill["id"] for skill in card["skills"]] == ["text_stats"]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert b"python -m demo_agent.a2a_server --http 127.0.0.1:" in err
