"""hosts.cli: `mcp-agent-kit agent-host [CONFIG] [--http HOST:PORT]` — this machine's ACP agents for remote clients.

CONFIG is the gateway's `agents` shape plus `"default"` (hosts.config); without it, the seed's AGENTCTL_*
variables name one agent. `--http` defaults to 127.0.0.1 and AGENTCTL_PORT (9999). Authentication like every
server of the kit: `--token`/`--tokens-file`, `--oauth-issuer ...`; a non-loopback bind without either is
refused unless `--insecure`. `--allow-host`/`--allow-origin` widen the Host and Origin allowlists. The log
level is AGENTCTL_LOG_LEVEL's (`-v`: debug). `--workspaces DIR` is where the workspaces it manages for a board
live (hosts.workspaces). SIGTERM or Ctrl-C ends every connection and agent, then exits 0.
Rules: flags and wiring only; user mistakes are one stderr line (cli_common).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from mcp_agent_kit.cli_common import (
    USAGE,
    CliError,
    Parser,
    add_insecure_option,
    add_oauth_options,
    add_origin_options,
    add_token_options,
    check_public_bind,
    fail,
    host_port,
    oauth_settings,
    prog,
    serving,
    tokens_from,
)

__all__ = ["main", "parser"]


def parser() -> Parser:
    cli = Parser(prog=prog("agent-host"),
                 description="Serve ACP agents of this machine to remote clients: ACP's network transport at /acp "
                             "and /agents/ID/acp (WebSocket and Streamable HTTP), one agent process per connection, "
                             "plus the agentctl routes (/health, /api/v1/...). See docs/agent-host.md.")
    cli.add_argument("config", nargs="?", metavar="CONFIG",
                     help='a JSON file: {"agents": {"ID": {"acp": {"command": ...}}}, "default": "ID"} '
                          "(default: the agent AGENTCTL_AGENT_COMMAND names)")
    cli.add_argument("--http", type=host_port, metavar="HOST:PORT",
                     help="where to listen (default 127.0.0.1 and $AGENTCTL_PORT, else 9999)")
    cli.add_argument("--workspaces", metavar="DIR",
                     help="where the host keeps the workspaces it manages for a board (mirrors, worktrees; default "
                          "$XDG_DATA_HOME/mcp-agent-kit/hosts/HOST-PORT/workspaces)")
    cli.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    add_token_options(cli, "every route but /health")
    add_origin_options(cli)
    add_insecure_option(cli)
    add_oauth_options(cli)
    return cli


class _Served:
    """The host's server for httpd.lifecycle: closing it ends the connections and agents first."""

    def __init__(self, host: Any, server: Any) -> None:
        self.host, self.server = host, server

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self.server.serve_forever(poll_interval)

    def shutdown(self) -> None:
        self.server.shutdown()

    def server_close(self) -> None:
        self.host.close()
        self.server.server_close()


def main(argv: list[str]) -> int:
    from mcp_agent_kit.hosts.config import ConfigError, load

    args = parser().parse_args(argv)
    try:
        config = load(args.config, os.environ)
    except ConfigError as exc:
        return fail(str(exc), "see docs/agent-host.md for the config", USAGE)
    host, port = args.http or ("127.0.0.1", config.port)
    tokens = tokens_from(args)
    oauth = oauth_settings(args)
    check_public_bind(host, authenticated=bool(tokens) or oauth is not None, insecure=args.insecure,
                      what="the agent host")
    logging.basicConfig(level=logging.DEBUG if args.verbose else config.log_level, format="%(message)s",
                        stream=sys.stderr)
    return serving(lambda: _serve(config, host, port, tokens, oauth, args), host, port, oauth)


def _serve(config: Any, host: str, port: int, tokens: dict[str, str], oauth: Any, args: Any) -> int:
    from mcp_agent_kit.addresses import machine_names
    from mcp_agent_kit.hosts.app import AgentHost
    from mcp_agent_kit.hosts.link import LinkError
    from mcp_agent_kit.hosts.workspaces import HostWorkspaces, default_dir
    from mcp_agent_kit.httpd import Policy
    from mcp_agent_kit.httpd.lifecycle import run_until_stopped

    log = logging.getLogger("mcp_agent_kit.hosts")
    base = f"http://{url_host(host)}:{port}"
    protected = oauth.build(args.public_url or base, name="agent-host") if oauth is not None else None
    policy = Policy(bind_host=host, allowed_hosts=[*machine_names(host), *args.allow_host],
                    allowed_origins=args.allow_origin, tokens=tokens, oauth=protected, realm="agent-host")
    app = AgentHost(config, policy, workspaces=HostWorkspaces(args.workspaces or default_dir(f"{host}-{port}")))

    def build() -> _Served:
        try:
            return _Served(app, app.bind(host, port))
        except LinkError as exc:  # AGENTCTL_AUTO_START and an agent that cannot start
            raise CliError(str(exc), "check AGENTCTL_AGENT_COMMAND (or the config's default agent)") from None

    def ready(served: _Served) -> None:
        bound = served.server.server_address
        where = f"http://{url_host(host)}:{bound[1]}"
        default = f"{where}/acp ({config.default}), " if config.default else ""
        log.info("agent host on %s: %s%s; agentctl at %s/api/v1", where, default,
                 ", ".join(where + agent.path for agent in config.agents.values()), where)

    return run_until_stopped(build, ready)


def url_host(host: str) -> str:
    """A host as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host
