"""`mcp-agent-kit acp probe|prompt --url URL`: the CLI over ACP's network transport, and its one-line errors.

Against the official SDK's server (tests/acp/sdk_remote.py, which here wants a bearer token): a prompt with
--token in each profile, a probe with --header; a refused connection, a 401 (naming --token/--header), a 404 path
and a server that speaks neither profile (a plain web server) are each one stderr line; --url with a command,
or --token without --url, is a usage mistake.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.acp.client.cli import main
from mcp_agent_kit.cli_common import guarded

from .sdk_remote import remote_urls, sdk_server

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    with sdk_server(token=TOKEN) as (base, _):
        yield remote_urls(base)


class _Plain(BaseHTTPRequestHandler):
    """A web server that is not ACP: 404 under /missing, else a page (GET and POST)."""

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status = 404 if self.path.startswith("/missing") else 200
        body = b"<html>hello</html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer


@pytest.fixture(scope="module")
def plain() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Plain)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = guarded(lambda: main(list(argv)))  # as __main__ runs it: a CliError becomes one line
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_prompt_over_the_network_with_a_token(urls: dict[str, str], profile: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "prompt", "--url", urls[profile], "--token", TOKEN, "--cwd", str(tmp_path),
                         "--approve", "all", "--json", f"write {tmp_path / 'a.txt'} from the CLI")
    assert code == 0, err
    result = json.loads(out)
    assert result["stopReason"] == "end_turn" and result["text"] == "written"
    assert (tmp_path / "a.txt").read_text() == "from the CLI"
    assert TOKEN not in err


def test_probe_with_a_header(urls: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "probe", "--url", urls["http"], "--header", f"Authorization: Bearer {TOKEN}")
    assert code == 0, err
    assert json.loads(out)["agentInfo"]["name"] == "sdk-scripted"


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_missing_credentials_are_one_line_naming_token(urls: dict[str, str], profile: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "probe", "--url", urls[profile], "--token", "wrong")
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "--token" in err and "--header" in err and "wrong" not in err
    assert ("HTTP 401" if profile == "http" else "HTTP 403") in err


@pytest.mark.parametrize("url, expected", [
    ("ws://127.0.0.1:1/acp", "cannot connect"),
    ("http://127.0.0.1:1/acp", "cannot reach"),
    ("http://{plain}/missing/acp", "HTTP 404"),
    ("ws://{plain}/missing/acp", "HTTP 404"),
    ("http://{plain}/acp", "does not speak ACP's Streamable HTTP profile"),
    ("ws://{plain}/acp", "does not speak ACP's WebSocket profile"),
])
def test_unreachable_or_foreign_servers_are_one_line(plain: str, url: str, expected: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "probe", "--url", url.format(plain=plain))
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1, err
    assert expected in err
    if "404" in expected:
        assert "/acp" in err.split(";")[-1]


@pytest.mark.parametrize("argv, expected", [
    (["probe", "--url", "ws://h/acp", "--", "agent"], "either --url or an agent command"),
    (["probe", "--token", "t", "--", "agent"], "are for a remote agent"),
    (["probe", "--url", "ws://h/acp", "--env", "A=1"], "--env"),
    (["probe", "--url", "ws://h/acp", "--header", "no-colon"], "NAME:VALUE"),
])
def test_usage_mistakes(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1
