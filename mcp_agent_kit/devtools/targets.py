"""devtools.targets: what SERVER (or `-- CMD ARGS...`) names, and a connected dual-era Client for it.

SERVER is an http(s) URL, or a kit server: a file (`server.py`, `server.py:obj`) or a module
(`pkg.mod[:obj]`), served for us as a stdio child by this interpreter (`python -m mcp_agent_kit
serve SERVER`, so a script without `server.run()` works too); `-- CMD ARGS...` is any stdio
server. A URL is reached with the OAuth token `auth login` cached for it, as `probe` does.
Rules: argument handling and connection only; a server that cannot be reached is a CliError
whose one line says why (a kit server's own one-line error when its child printed one).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp_agent_kit.cli_common import PROG, USAGE, CliError
from mcp_agent_kit.client.client import Client, Unavailable
from mcp_agent_kit.client.inputs import Callback
from mcp_agent_kit.loader import is_file_target, split_target

Kind = Literal["kit", "url", "command"]
SERVER_HELP = ("a server file (server.py or server.py:obj), a module (pkg.mod[:obj]) or an http(s) URL;"
               " or give -- CMD ARGS... at the end for any stdio server")
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Target:
    """One server to talk to. `spec` is the kit target (a file made absolute) or the URL; `argv` the
    stdio command that serves it (empty for a URL); `given` what the user typed, for messages."""

    kind: Kind
    spec: str
    argv: tuple[str, ...]
    given: str


def split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """(our arguments, the stdio server's command after the first `--`, or None without one)."""
    if "--" not in argv:
        return list(argv), None
    at = argv.index("--")
    return list(argv[:at]), list(argv[at + 1:])


def resolve(server: str | None, command: list[str] | None) -> Target:
    """The Target of `SERVER` or `-- CMD ARGS...` (exactly one of them); CliError (exit 2) otherwise."""
    if server is not None and command is not None:
        raise CliError(f"give SERVER ({server}) or -- CMD ARGS..., not both", "drop one of them", USAGE)
    if command is not None:
        if not command:
            raise CliError("nothing after --", "give the stdio server's command, e.g. -- python server.py", USAGE)
        return Target("command", shlex.join(command), tuple(command), shlex.join(command))
    if not server:
        raise CliError("no server named", f"give SERVER ({SERVER_HELP})", USAGE)
    if server.startswith(("http://", "https://")):
        return Target("url", server, (), server)
    module_part, attr = split_target(server)
    if is_file_target(module_part):
        path = Path(module_part)
        if not path.is_file():
            raise CliError(f"no such file: {module_part}", "check the path (or give an http(s) URL, or -- CMD)", USAGE)
        module_part = str(path.resolve())
    spec = module_part + (f":{attr}" if attr else "")
    return Target("kit", spec, (sys.executable, "-m", "mcp_agent_kit", "serve", spec), server)


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """--timeout, --allow-legacy, --verbose, --header and the OAuth options `probe` has (for a URL)."""
    from mcp_agent_kit.gateway.auth_cli import add_login_options

    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"seconds to wait for each reply of the server (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--allow-legacy", action="store_true",
                        help="when the server stays silent, exits or writes garbage, still try the "
                             "initialize handshake (older stdio servers)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show the server's stderr and the client's log on stderr")
    parser.add_argument("--header", action="append", default=[], metavar="NAME:VALUE",
                        help="an extra HTTP header for a URL (repeatable)")
    oauth = parser.add_argument_group("OAuth (a URL is reached with the token 'auth login' cached for it)")
    oauth.add_argument("--login", action="store_true",
                       help="without a usable cached token, log in (as 'auth login' does) and cache the token")
    oauth.add_argument("--cache", type=Path, default=None, metavar="FILE", help="the token cache (as 'auth --cache')")
    add_login_options(oauth)


def _headers(args: argparse.Namespace) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in args.header:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise CliError(f"--header {item!r} is not NAME:VALUE", "e.g. --header 'X-Api-Key: abc'", USAGE)
        headers[name.strip()] = value.strip()
    return headers


def _oauth(url: str, headers: dict[str, str], args: argparse.Namespace) -> Any:
    """The OAuth client for a URL: its cached token, and a login only with --login (None with an
    Authorization header of the caller's own)."""
    from mcp_agent_kit.client.oauth.factory import oauth_for
    from mcp_agent_kit.gateway.auth_cli import login_settings, open_store

    if any(name.lower() == "authorization" for name in headers):
        return None
    try:
        settings = {**login_settings(args, PROG), "login": args.login}
        return oauth_for(url, settings, store=open_store(args.cache))
    except ValueError as exc:
        raise CliError(str(exc), "fix the login options", USAGE) from None


def client_for(target: Target, args: argparse.Namespace, elicitation: Callback | None = None) -> Client:
    """A Client for the target (not yet connected)."""
    if args.timeout <= 0:
        raise CliError(f"--timeout must be positive, got {args.timeout:g}", "give a number of seconds", USAGE)
    options: dict[str, Any] = {"timeout": args.timeout, "request_timeout": args.timeout,
                               "allow_legacy": args.allow_legacy, "elicitation": elicitation}
    if target.kind == "url":
        headers = _headers(args)
        try:
            return Client.http(target.spec, headers, auth=_oauth(target.spec, headers, args), **options)
        except ValueError as exc:
            raise CliError(f"cannot use {target.spec}: {exc}", "give an http(s) URL", USAGE) from None
    # the command the user typed runs with the user's environment, as it would in their shell (hosts and the
    # gateway give servers a minimal one)
    return Client.stdio(target.argv[0], target.argv[1:], env=dict(os.environ), **options)


def connect(target: Target, args: argparse.Namespace, elicitation: Callback | None = None) -> Client:
    """A connected Client; CliError (one line) when the server cannot be reached in any era.

    The client's log (the server's stderr among it) reaches stderr only with --verbose: without it
    the command's own lines are all there is."""
    import logging

    if args.verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    else:
        logging.getLogger("mcp_agent_kit.client").setLevel(logging.CRITICAL)
    client = client_for(target, args, elicitation)
    try:
        client.connect()
    except Unavailable as exc:
        error = unavailable(target, exc, client)
        client.close()
        raise error from None
    except BaseException:
        client.close()
        raise
    return client


def unavailable(target: Target, exc: Unavailable, client: Client) -> CliError:
    """Why the target could not be reached, as the one line to print."""
    verdict = exc.verdict
    reason = verdict.reason or "no answer"
    if verdict.auth:
        error = getattr(getattr(client.channel, "auth", None), "error", None)
        if error:
            return CliError(f"authorization at {target.spec} failed: {error}", "check the login options")
        return CliError(f"{target.spec} needs authorization and no usable OAuth token is cached for it",
                        f"run '{PROG} auth login {target.spec}' (or pass --login, or --header 'Authorization: ...')")
    tail = getattr(client.channel, "stderr_tail", lambda: "")()
    own = [line for line in str(tail).splitlines() if line.startswith(f"{PROG}: ")]
    if target.kind == "kit" and own:  # the child `serve` said what is wrong, in our own words
        return CliError(own[-1].removeprefix(f"{PROG}: "), None, USAGE)
    fixes = {
        "kit": f"run '{PROG} serve {target.given}' to see what it does",
        "url": "check the URL and that the server is running",
        "command": "check the command after -- (an older server that stays silent may need --allow-legacy)",
    }
    return CliError(f"{target.given} did not answer as an MCP server: {reason}", fixes[target.kind])

