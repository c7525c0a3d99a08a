"""docs/store.md stays true: its Python sample runs and prints what the page shows, and the messages it
quotes (the missing-secret refusal, `store migrate` output, the newer-schema refusal) are the real ones."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.store.pg import PostgresServer

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "store.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
ENV.pop("MCP_AGENT_KIT_SECRET", None)


def fenced(lang: str) -> list[str]:
    return [body.strip("\n") for kind, body in FENCE.findall(PAGE) if kind == lang]


def kit(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_agent_kit", *argv], capture_output=True, text=True,
                          timeout=60, env=ENV, cwd=ROOT, stdin=subprocess.DEVNULL)


def test_the_python_sample_prints_what_the_page_shows(tmp_path: Path) -> None:
    [sample] = fenced("python")
    done = subprocess.run([sys.executable, "-c", sample], capture_output=True, text=True, timeout=60, env=ENV,
                          cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    shown = next(text for text in fenced("text") if text.startswith("True False"))
    assert done.stdout.strip() == shown
    assert (tmp_path / "kit.db").exists()


def test_the_quoted_refusal_is_the_real_one() -> None:
    code = ("import sys; from mcp_agent_kit.cli_common import Parser, add_store_options, guarded, store_from_args; "
            "p = Parser(prog='x'); add_store_options(p); "
            "sys.exit(guarded(lambda: store_from_args(p.parse_args(sys.argv[1:])) and 0))")
    refused = subprocess.run([sys.executable, "-c", code, "--store", "postgresql://kit@db.internal/kit"],
                             capture_output=True, text=True, timeout=60, env=ENV, check=False)
    quoted = next(text for text in fenced("text") if "needs the secret" in text)
    assert refused.returncode == 2 and refused.stderr.strip() == quoted


def test_the_migrate_transcript_and_the_newer_schema_refusal_are_real(pg_server: PostgresServer) -> None:
    url = pg_server.new_database(password="s3cret")
    shown_url = url.replace(":s3cret@", ":***@")
    transcript = next(text for text in fenced("sh") if "store migrate" in text)
    expected = [line for line in transcript.splitlines() if not line.startswith("$")]
    got = [kit("store", "migrate", url).stdout.strip() for _ in expected]
    doc_url = "postgresql://kit:***@db.internal/kit"
    assert [line.replace(shown_url, doc_url) for line in got] == expected
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE schema_version SET version = 2")
    done = kit("store", "migrate", url)
    quoted = next(text for text in fenced("text") if "newer than" in text)
    assert done.returncode == 1 and done.stderr.strip().replace(shown_url, doc_url) == quoted


@pytest.mark.parametrize("url", ["sqlite:///state/kit.db", "sqlite:////var/lib/kit/kit.db",
                                 "postgresql://kit:PASSWORD@db.internal:5432/kit"])
def test_the_url_forms_in_the_table_are_the_ones_the_backends_accept(url: str) -> None:
    assert f"`{url}`" in PAGE
    if url.startswith("sqlite"):
        from mcp_agent_kit.store.sqlite import path_of

        assert path_of(url) == url.removeprefix("sqlite:///")
