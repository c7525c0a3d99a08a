"""--store, --secret-file, --store-lease: what serve, a2a and gateway share (cli_common.store_from_args)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.cli_common import Parser, add_store_options, guarded, store_from_args


def parsed(*argv: str) -> Any:
    parser = Parser(prog="mcp-agent-kit serve")
    add_store_options(parser)
    return parser.parse_args(list(argv))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    args = parsed(*argv)
    code = guarded(lambda: (store_from_args(args).store.close(), 0)[1])
    return code, capsys.readouterr().err.splitlines()


@pytest.fixture(autouse=True)
def no_env_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_AGENT_KIT_SECRET", raising=False)


def test_defaults_are_memory_no_secret_and_a_30s_lease() -> None:
    options = store_from_args(parsed())
    assert options.store.shared is False and options.store.url == "memory:"
    assert options.secret is None and options.lease_s == 30.0
    host, pid, rand = options.replica.rsplit(":", 2)
    assert host and pid.isdigit() and len(rand) == 8
    assert store_from_args(parsed()).replica != options.replica  # unique per call, never shared


@pytest.mark.parametrize("url", ["sqlite:///state/kit.db", "postgresql://kit@db.internal/kit"])
def test_a_shared_store_without_a_secret_is_refused_in_one_line(capsys: pytest.CaptureFixture[str], url: str) -> None:
    code, err = run(capsys, "--store", url)
    assert code == 2 and len(err) == 1
    assert "--secret-file" in err[0] and "MCP_AGENT_KIT_SECRET" in err[0] and "per-process" in err[0]
    assert "db.internal" not in err[0]  # only the scheme is named


def test_a_short_secret_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    short = tmp_path / "secret"
    short.write_bytes(b"  too-short  \n")
    code, err = run(capsys, "--store", "postgresql://kit@db/kit", "--secret-file", str(short))
    assert code == 2 and len(err) == 1 and "9 bytes, shorter than 32" in err[0]
    monkeypatch.setenv("MCP_AGENT_KIT_SECRET", "x" * 31)
    code, err = run(capsys, "--store", "postgresql://kit@db/kit")
    assert code == 2 and len(err) == 1 and "$MCP_AGENT_KIT_SECRET is 31 bytes" in err[0]


def test_an_unreadable_secret_file_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = run(capsys, "--secret-file", str(tmp_path / "missing"))
    assert code == 2 and len(err) == 1 and "cannot read --secret-file" in err[0]


def test_the_secret_is_read_as_stripped_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"\n" + b"k" * 40 + b"\n")
    assert store_from_args(parsed("--secret-file", str(path))).secret == b"k" * 40
    monkeypatch.setenv("MCP_AGENT_KIT_SECRET", " " + "e" * 32 + " ")
    assert store_from_args(parsed()).secret == b"e" * 32
    assert store_from_args(parsed("--secret-file", str(path))).secret == b"k" * 40  # the file wins


def test_an_unknown_store_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "--store", "redis://localhost")
    assert code == 2 and len(err) == 1 and "unknown store URL" in err[0] and "docs/store.md" in err[0]


@pytest.mark.parametrize("lease", ["0", "-3", "abc", "3601"])
def test_a_bad_lease_is_a_usage_error(capsys: pytest.CaptureFixture[str], lease: str) -> None:
    with pytest.raises(SystemExit) as exited:
        parsed("--store-lease", lease)
    err = capsys.readouterr().err.splitlines()
    assert exited.value.code == 2 and len(err) == 1 and "from 1 to 3600" in err[0]


def test_a_lease_is_taken_in_seconds() -> None:
    assert store_from_args(parsed("--store-lease", "2")).lease_s == 2.0
