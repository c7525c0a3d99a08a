"""cli_common: what every command line of the kit shares — its name, its errors, its flags.

One program name (`mcp-agent-kit`, subcommands shown as `mcp-agent-kit SUBCOMMAND`), one error
shape (`PROG: <problem>; <fix>` on ONE stderr line, exit 2 for usage errors and 1 for failures),
one spelling per meaning (`--force`, `--out DIR`, `--http HOST:PORT`; older spellings stay as
aliases hidden from --help; `--store`/`--secret-file`/`--store-lease` for every server that can run
as one of several replicas), and one guard that keeps known user mistakes and a closed stdout
(`mcp-agent-kit --help | head -1`) free of tracebacks. Rules: standard library only, cheap to
import (the front door loads it on every run); no subcommand logic.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

from mcp_agent_kit.loader import TargetError

PROG = "mcp-agent-kit"
CREATE_PROG = "create-mcp-agent"
OK, FAILED, USAGE = 0, 1, 2


def prog(subcommand: str) -> str:
    """The prog shown in a subcommand's help: `mcp-agent-kit SUBCOMMAND`."""
    return f"{PROG} {subcommand}"


def version_line(name: str = PROG) -> str:
    """`mcp-agent-kit 1.0.0`, from the one source of the version (wire.implementation)."""
    from mcp_agent_kit.wire.implementation import VERSION

    return f"{name} {VERSION}"


def message(problem: str, fix: str | None = None, name: str = PROG) -> str:
    return f"{name}: {problem}" + (f"; {fix}" if fix else "")


def fail(problem: str, fix: str | None = None, code: int = FAILED, name: str = PROG) -> int:
    """Print one `PROG: problem; fix` line on stderr and return `code` (for `return fail(...)`)."""
    print(message(problem, fix, name), file=sys.stderr)
    return code


class CliError(Exception):
    """A user mistake found deep inside a command: the guard prints it as one line and exits `code`."""

    def __init__(self, problem: str, fix: str | None = None, code: int = FAILED) -> None:
        super().__init__(problem)
        self.problem, self.fix, self.code = problem, fix, code


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line with a pointer to --help (exit 2)."""

    def error(self, message: str) -> NoReturn:
        name = self.prog.split()[0] if self.prog else PROG
        print(f"{name}: {message}; see '{self.prog} --help'", file=sys.stderr)
        sys.exit(USAGE)


def alias(parser: Any, *flags: str, dest: str, **options: Any) -> None:
    """An older spelling of a flag: parsed into `dest` as before, hidden from --help."""
    parser.add_argument(*flags, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **options)


def port_number(value: str) -> int:
    """argparse type: a TCP port, 0-65535 (0 picks a free one)."""
    if not value.isdigit() or not 0 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"port must be a number from 0 to 65535 (0 picks a free one), got {value!r}")
    return int(value)


def host_port(value: str) -> tuple[str, int]:
    """argparse type: `HOST:PORT` (`[::1]:8000` for IPv6; an empty host means loopback)."""
    from mcp_agent_kit.addresses import split_host_port

    _, sep, port = value.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT such as 127.0.0.1:8000, got {value!r}")
    port_number(port)
    try:
        return split_host_port(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_token_options(parser: Any, what: str = "HTTP") -> None:
    """`--token TOKEN` (repeatable, one principal each) and `--tokens-file PATH` (JSON token -> principal)."""
    parser.add_argument("--token", action="append", default=[], metavar="TOKEN",
                        help=f"require `Authorization: Bearer TOKEN` ({what}); repeatable, one principal per token")
    parser.add_argument("--tokens-file", metavar="PATH",
                        help='a JSON object mapping each accepted token to its principal, e.g. {"s3cret": "alice"}')


def add_origin_options(parser: Any) -> None:
    """`--allow-host HOST` and `--allow-origin ORIGIN` (both repeatable): the Host/Origin allowlists."""
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                        help="also accept this Host header (repeatable; '*' for any; loopback names always pass)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="also accept this Origin, e.g. https://app.example.com (repeatable)")


def add_insecure_option(parser: Any) -> None:
    """`--insecure`: serve a non-loopback bind without a token (the public-bind rule's opt-out)."""
    parser.add_argument("--insecure", action="store_true",
                        help="allow a non-loopback bind without --token or --oauth-issuer")


def check_public_bind(host: str, *, authenticated: bool, insecure: bool, what: str = "the server",
                      oauth: bool = True) -> None:
    """The public-bind rule (addresses.exposed) on a command line: a non-loopback bind without
    authentication and without --insecure is a CliError (exit 2) naming the flags that fix it."""
    from mcp_agent_kit.addresses import exposed

    if exposed(host, authenticated=authenticated, insecure=insecure):
        flags = "--token or --oauth-issuer" if oauth else "--token"
        raise CliError(f"binding {host} exposes {what} to the network without authentication",
                       f"give {flags} (or --insecure to serve it to anyone who can reach it)", USAGE)


def add_oauth_options(parser: Any, *, public_url: bool = True) -> None:
    """The OAuth resource-server flags shared by `serve`, `a2a` and `gateway` (docs/oauth.md)."""
    group = parser.add_argument_group("OAuth (accept access tokens from an authorization server)")
    group.add_argument("--oauth-issuer", metavar="URL", help="the authorization server whose tokens are accepted")
    group.add_argument("--oauth-audience", metavar="URL",
                       help="the audience tokens must name (default: this server's public URL)")
    group.add_argument("--oauth-jwks-url", metavar="URL", help="the issuer's JWK Set (default: from its metadata)")
    group.add_argument("--oauth-scopes", metavar="S1,S2", default="", help="scopes every request needs")
    group.add_argument("--oauth-introspection-url", metavar="URL", help="RFC 7662 endpoint, for opaque tokens")
    group.add_argument("--oauth-client-id", metavar="ID",
                       help="this server's client id at the issuer (introspection; the board's web sign-in)")
    group.add_argument("--oauth-client-secret-env", metavar="VAR",
                       help="the environment variable holding that client's secret")
    if public_url:
        group.add_argument("--public-url", metavar="URL", help="the URL clients use, when behind a proxy")


def oauth_settings(args: Any) -> Any:
    """The OAuthSettings the flags give (None without --oauth-issuer); CliError for a bad combination."""
    from mcp_agent_kit.auth.settings import OAuthSettings, secret_from_env

    given = [name for name in ("oauth_audience", "oauth_jwks_url", "oauth_introspection_url", "oauth_client_id",
                               "oauth_client_secret_env") if getattr(args, name, None)]
    if not args.oauth_issuer:
        if given or args.oauth_scopes:
            raise CliError("--oauth-* options need --oauth-issuer", "give --oauth-issuer URL", USAGE)
        return None
    try:
        secret = secret_from_env(args.oauth_client_secret_env)
    except ValueError as exc:
        raise CliError(str(exc), f"export {args.oauth_client_secret_env}=... first", USAGE) from None
    scopes = tuple(s for s in (part.strip() for part in args.oauth_scopes.replace(" ", ",").split(",")) if s)
    return OAuthSettings(issuer=args.oauth_issuer, audience=args.oauth_audience, jwks_url=args.oauth_jwks_url,
                         scopes=scopes, introspection_url=args.oauth_introspection_url,
                         client_id=args.oauth_client_id, client_secret=secret,
                         public_url=getattr(args, "public_url", None))


def token_principal(token: str) -> str:
    """The principal of a token given without one: a short hash, never the token itself."""
    import hashlib

    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]


def tokens_from(args: Any, env: str | None = None,
                principal: Callable[[str], str] = token_principal) -> dict[str, str]:
    """token -> principal from `--token` (each its own `principal(token)`), `--tokens-file` and
    `$env` (read only without --token). A tokens file that cannot be read or is not a JSON object
    of non-empty strings is a CliError (exit 2).
    """
    import json

    given: list[str] = list(args.token or [])
    if not given and env and os.environ.get(env):
        given = [os.environ[env]]
    tokens = {token: principal(token) for token in given if token}
    path = getattr(args, "tokens_file", None)
    if path:
        fix = 'give a JSON object mapping token to principal, e.g. {"s3cret": "alice"}'
        try:
            with open(path, encoding="utf-8") as handle:
                mapping = json.loads(handle.read(1_048_577))
        except (OSError, ValueError) as exc:
            raise CliError(f"cannot read --tokens-file {path}: {exc}", fix, USAGE) from None
        if not isinstance(mapping, dict) or not all(
                isinstance(k, str) and k and isinstance(v, str) and v for k, v in mapping.items()):
            raise CliError(f"--tokens-file {path} is not a JSON object of non-empty strings", fix, USAGE)
        tokens.update(mapping)
    return tokens


def check_bindable(host: str, port: int) -> None:
    """Raise OSError now if HOST:PORT cannot be bound (in use, no such address), before slow start-up."""
    import socket

    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
        probe.bind(address)


def listen_failed(host: str, port: int, exc: BaseException, name: str = PROG) -> int:
    """A bind that failed (port in use, no such address, no permission): one line, exit 1."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return fail(f"cannot listen on {host}:{port}: {reason}",
                "pick another port with --http HOST:PORT (port 0 picks a free one)", FAILED, name)


def serving(run: Callable[[], int], host: str, port: int, oauth: object | None) -> int:
    """Run a server until it stops: an OAuth setting it refused (ValueError, with `oauth` given) or a bind
    that failed is one line; any other ValueError is a bug and keeps its traceback."""
    try:
        return run()
    except ValueError as exc:
        if oauth is None:
            raise
        return fail(f"OAuth: {exc}", "check --oauth-issuer (and --oauth-jwks-url)")
    except (OSError, OverflowError) as exc:
        return listen_failed(host, port, exc)


def guarded(run: Callable[[], int], name: str = PROG) -> int:
    """Run a command; known user mistakes become one stderr line, a closed stdout ends quietly.

    Anything else is a bug and keeps its traceback.
    """
    try:
        try:
            return run()
        finally:
            sys.stdout.flush()  # a closed pipe fails here, inside the guard, not at interpreter exit
    except BrokenPipeError:
        # The reader went away (`| head -1`): stop writing, say nothing (the Python docs' recipe).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return FAILED
    except KeyboardInterrupt:
        return 130
    except CliError as exc:
        return fail(exc.problem, exc.fix, exc.code, name)
    except TargetError as exc:
        return fail(str(exc), None, USAGE, name)


SECRET_ENV = "MCP_AGENT_KIT_SECRET"
MIN_SECRET_BYTES = 32
DEFAULT_LEASE_S = 30.0


class StoreOptions(NamedTuple):
    """What `--store`, `--secret-file` and `--store-lease` give a server: the opened store, the
    shared secret (None when none was given and the store is not shared: the server keeps its own
    per-process random one, as without a store), the lease in seconds, and this process's holder id."""

    store: Any  # mcp_agent_kit.store.Store (typed loosely: this module stays cheap to import)
    secret: bytes | None
    lease_s: float
    replica: str


def lease_seconds(value: str) -> float:
    """argparse type: a lease in seconds, 1 to 3600."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 1.0 <= seconds <= 3600.0:
        raise argparse.ArgumentTypeError(f"lease must be a number of seconds from 1 to 3600, got {value!r}")
    return seconds


def add_store_options(parser: Any) -> None:
    """`--store URL`, `--secret-file FILE` and `--store-lease SECONDS`, shared by serve, a2a and gateway."""
    group = parser.add_argument_group("shared store (several replicas behind one load balancer; docs/store.md)")
    group.add_argument("--store", metavar="URL",
                       help="where tasks and sessions live: memory (default), sqlite:///path or postgresql://...")
    group.add_argument("--secret-file", metavar="FILE",
                       help=f"the secret every replica shares (at least {MIN_SECRET_BYTES} bytes; "
                            f"else ${SECRET_ENV}); required with a sqlite or postgresql store")
    group.add_argument("--store-lease", metavar="SECONDS", type=lease_seconds, default=DEFAULT_LEASE_S,
                       help="the lease a replica holds on work it runs, renewed every third of it (default 30)")


def _read_secret(path: str | None) -> bytes | None:
    """The secret from --secret-file, else from $MCP_AGENT_KIT_SECRET, stripped; None when neither is given."""
    fix = f"write at least {MIN_SECRET_BYTES} random bytes, e.g. `openssl rand -hex 32 > secret`"
    if path:
        try:
            with open(path, "rb") as handle:
                secret = handle.read(65_537).strip()
        except OSError as exc:
            raise CliError(f"cannot read --secret-file {path}: {exc.strerror or exc}", fix, USAGE) from None
        where = f"--secret-file {path}"
    elif os.environ.get(SECRET_ENV, "").strip():
        secret, where = os.environ[SECRET_ENV].encode().strip(), f"${SECRET_ENV}"
    else:
        return None
    if len(secret) < MIN_SECRET_BYTES:
        raise CliError(f"the secret in {where} is {len(secret)} bytes, shorter than {MIN_SECRET_BYTES}", fix, USAGE)
    return secret


def replica_id() -> str:
    """A holder id unique to this process: host:pid:random."""
    import secrets
    import socket

    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def store_from_args(args: Any) -> StoreOptions:
    """Open the store the flags name. CliError (exit 2, one line) for a bad URL, an unreadable or
    short secret, or a shared store without a secret (each replica would sign with its own random
    secret, and a round or task id one replica handed out would be refused by the others)."""
    from mcp_agent_kit.store import StoreError, open_store

    url: str | None = getattr(args, "store", None)
    scheme = "" if url is None else url.split(":", 1)[0].lower()
    secret = _read_secret(getattr(args, "secret_file", None))
    if scheme in ("sqlite", "postgresql", "postgres") and secret is None:
        raise CliError(f"--store {scheme}: needs the secret all replicas share (a per-process "
                       "random secret would break the rounds and task ids other replicas hand out)",
                       f"give --secret-file FILE or set ${SECRET_ENV} (at least {MIN_SECRET_BYTES} bytes)", USAGE)
    try:
        store = open_store(url)
    except StoreError as exc:
        raise CliError(f"cannot open --store: {exc}", "see docs/store.md for the URL forms", USAGE) from None
    lease = getattr(args, "store_lease", DEFAULT_LEASE_S)
    return StoreOptions(store, secret, float(lease), replica_id())
